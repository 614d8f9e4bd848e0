"""The predictor file, typed: what ``analysis.fit`` writes (``predictor.json``), what ships
in ``analysis/predictors/`` (with its ``provenance``), what ``coldstart calibrate`` rescales
(with its ``calibration``) and what ``analysis.predict`` reads; ``load_predictor`` and
``write_predictor`` are its one reader and one writer, and check it the same way.

Changelog of ``predictor_schema_version``: 1 the first; 2 sub-phases fitted in place of a
phase (``split``); 3 the training boots' load bandwidth (``load_bandwidth``).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from analysis.features.model_features import ModelFeatures, feature_parts
from analysis.regression import PhaseModel
from document.boot_result import SchemaError, read_json, validation_summary

__all__ = ["LoadBandwidth", "PredictorFile", "PredictorGroup", "SUPPORTED_PREDICTOR_VERSIONS",
           "SUPPORTED_PREDICTOR_VERSION", "load_predictor", "predictor_json", "write_predictor"]

SUPPORTED_PREDICTOR_VERSIONS = (1, 2, 3)
SUPPORTED_PREDICTOR_VERSION = max(SUPPORTED_PREDICTOR_VERSIONS)


class LoadBandwidth(BaseModel):
    """The training boots' weight-loading bandwidth (``analysis.storage.training_bandwidth``,
    or the reference boots' in a calibrated file): what a line on the bandwidth assumes when
    the operator gives none."""

    model_config = ConfigDict(extra="forbid")

    median_bytes_per_s: float
    min_bytes_per_s: float
    max_bytes_per_s: float
    n: int  # the boots that measured one

    @classmethod
    def of(cls, values: list[float]) -> LoadBandwidth:
        """The summary of the boots' bandwidths (bytes per second)."""
        return cls(median_bytes_per_s=float(statistics.median(values)),
                   min_bytes_per_s=float(min(values)), max_bytes_per_s=float(max(values)),
                   n=len(values))


class PredictorGroup(BaseModel):
    """One configuration of a predictor file (``analysis.fit.predictor_document``).

    The fields stand in the order the file holds them (``write_predictor`` writes them so).
    """

    model_config = ConfigDict(extra="forbid")

    key: dict[str, str | None]
    train: list[str] = Field(default_factory=list)
    holdout: list[str] = Field(default_factory=list)
    measured_total: Literal["wall_s", "phase_sum"] | None = None
    phases: dict[str, PhaseModel]
    split: dict[str, list[str]] = Field(default_factory=dict)
    load_bandwidth: LoadBandwidth | None = None  # absent in files before version 3
    # How the training models' measured-or-estimated features were made, where that has more
    # than one way ({"compiled_graph_bytes": "estimated" | "index" | "all_files" | "study" |
    # "mixed"}): a model predicted gets the same (analysis.features.sources.like_training).
    feature_methods: dict[str, str] | None = None
    # The training models' traits (ModelFeatures.traits), so predict can say when a model is
    # of a kind the lines did not describe; None: a file written before it (no warnings).
    train_traits: dict[str, list[str]] | None = None


class PredictorFile(BaseModel):
    """A whole predictor file: one ``PredictorGroup`` per configuration fitted, and where
    its seconds come from."""

    # A later writer's key (of the same version) is kept, not refused.
    model_config = ConfigDict(extra="allow")

    predictor_schema_version: int
    result_schema_version: int | None = None  # document.boot_result.SCHEMA_VERSION of the inputs
    created: str | None = None
    inputs: list[str] = Field(default_factory=list)
    # The machine the seconds were measured on (analysis.dataset.machine_identity): the
    # lines predict that machine only, unless calibrated.
    machine: dict[str, Any] = Field(default_factory=dict)
    interval_level: float | None = None
    groups: list[PredictorGroup]
    # analysis/predictors/*.json: the data, machine, vLLM, date and command of a shipped fit.
    provenance: dict[str, Any] | None = None
    # coldstart calibrate: the per-phase scales to this machine, both machines, the boot.
    calibration: dict[str, Any] | None = None


def _finite(values: list[float]) -> bool:
    return all(math.isfinite(v) for v in values)


def _phase_problem(m: PhaseModel) -> str | None:
    """Why a fitted phase cannot give a prediction (numpy would fail or answer nonsense)."""
    if m.status == "not_applicable":
        return None
    k = 1 if m.feature is None else 2  # [intercept] or [intercept, slope]
    if m.feature is not None and not all(part in ModelFeatures.model_fields
                                         for part in feature_parts(m.feature)):
        return f"unknown feature {m.feature!r}"
    if len(m.coefficients) != k:
        return f"{len(m.coefficients)} coefficients, a {'constant' if k == 1 else 'line'} has {k}"
    if len(m.covariance) != k or any(len(row) != k for row in m.covariance):
        return f"covariance is not {k} x {k}"
    if not _finite(m.coefficients + [v for row in m.covariance for v in row]):
        return "coefficients or covariance not finite"
    if not (math.isfinite(m.residual_variance_s2) and m.residual_variance_s2 >= 0):
        return f"residual_variance_s2 {m.residual_variance_s2} is not a variance"
    if not (math.isfinite(m.df_resid) and m.df_resid > 0):
        return f"df_resid {m.df_resid}: an interval needs > 0 degrees of freedom"
    if not (math.isfinite(m.feature_scale) and m.feature_scale > 0):
        return f"feature_scale {m.feature_scale} must be > 0"
    if m.feature_range and (len(m.feature_range) != 2 or m.feature_range[0] > m.feature_range[1]):
        return f"feature_range {m.feature_range} is not [min, max]"
    return None


def load_predictor(path: str | Path) -> PredictorFile:
    """Read and check a predictor file (the one reader: ``analysis.predict``, ``coldstart
    calibrate``, the shipped files' list and build).

    Every group is validated (``PredictorGroup``, ``PhaseModel``) and every fitted phase's
    coefficients and covariance checked for shape, so a damaged or hand-edited file is a
    ``SchemaError`` here, never a numpy error at prediction time.
    """
    return _checked(read_json(Path(path)), str(path))


def _checked(doc: Any, p: str) -> PredictorFile:
    """``doc`` as a predictor file; or a ``SchemaError`` naming ``p`` and what is wrong."""
    if not isinstance(doc, dict) or "predictor_schema_version" not in doc:
        raise SchemaError(f"{p}: no predictor_schema_version: not a predictor file of analysis.fit")
    version = doc["predictor_schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):  # bool is an int in Python
        raise SchemaError(f"{p}: predictor_schema_version {version!r} is not an integer")
    if version > SUPPORTED_PREDICTOR_VERSION:
        raise SchemaError(f"{p}: predictor schema version {version} is newer than this reader "
                          f"({SUPPORTED_PREDICTOR_VERSION})")
    if version not in SUPPORTED_PREDICTOR_VERSIONS:
        raise SchemaError(f"{p}: predictor schema version {version} is not one this reader "
                          f"knows ({', '.join(map(str, SUPPORTED_PREDICTOR_VERSIONS))})")
    groups = doc.get("groups")
    if not groups:
        raise SchemaError(f"{p}: holds no fitted configuration")
    if not isinstance(groups, list):
        raise SchemaError(f"{p}: groups is not a list")
    checked = []
    for i, raw in enumerate(groups):
        where = f"{p}: groups[{i}]"
        if not isinstance(raw, dict):
            raise SchemaError(f"{where} is not an object")
        try:
            group = PredictorGroup.model_validate(raw)
        except ValidationError as exc:
            raise SchemaError(f"{where}: {validation_summary(exc)}") from exc
        if not group.phases:
            raise SchemaError(f"{where}: no phases")
        for name, m in group.phases.items():
            why = _phase_problem(m)
            if why:
                raise SchemaError(f"{where}: phase {name}: {why}")
        for phase, subs in group.split.items():
            lacking = [s for s in subs if s not in group.phases]
            if not subs or lacking:
                raise SchemaError(f"{where}: split {phase}: sub-phases {lacking or subs} "
                                  "not among its phases")
        checked.append(group)
    try:
        PredictorFile.model_validate({**doc, "groups": groups})
    except ValidationError as exc:
        raise SchemaError(f"{p}: {validation_summary(exc)}") from exc
    # The groups validated above (already models: not validated again).
    return PredictorFile.model_validate({**doc, "groups": checked})


def predictor_json(predictor: PredictorFile) -> dict[str, Any]:
    """``predictor`` as the file holds it: the file's keys that were given (read from a file
    or set by its writer; a later writer's too), in the fields' order; every group whole,
    its phases as ``PhaseModel`` dumps, but ``train_traits`` where a file predating it has
    none."""
    # Python, not JSON, mode at the top: machine, provenance and calibration are written as
    # their writers made them (a JSON dump would make an inf or a nan null).
    doc = predictor.model_dump(exclude_unset=True)
    doc["groups"] = [group.model_dump(mode="json", exclude={"train_traits"}
                                      if group.train_traits is None else None)
                     for group in predictor.groups]
    return doc


def write_predictor(predictor: PredictorFile, path: str | Path) -> Path:
    """Write a predictor file (the one writer: ``analysis.fit``, the shipped files' build,
    ``coldstart calibrate``), checked as ``load_predictor`` will check it: a writer's mistake
    fails here, not in a later ``predict``."""
    path = Path(path)
    doc = predictor_json(predictor)
    _checked(doc, str(path))
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path
