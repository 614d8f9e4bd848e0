"""The predictor file, typed: what ``analysis.fit`` writes (``predictor.json``), what ships
in ``analysis/predictors/`` (with its ``provenance``), what ``coldstart calibrate`` rescales
(with its ``calibration``) and what ``analysis.predict`` reads (``load_predictor``).

Changelog of ``predictor_schema_version``: 1 the first; 2 sub-phases fitted in place of a
phase (``split``); 3 the training boots' load bandwidth (``load_bandwidth``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from analysis.model import PhaseModel

__all__ = ["PredictorFile", "PredictorGroup", "SUPPORTED_PREDICTOR_VERSIONS",
           "SUPPORTED_PREDICTOR_VERSION"]

SUPPORTED_PREDICTOR_VERSIONS = (1, 2, 3)
SUPPORTED_PREDICTOR_VERSION = max(SUPPORTED_PREDICTOR_VERSIONS)


class PredictorGroup(BaseModel):
    """One configuration of a predictor file (``analysis.fit.predictor_document``)."""

    model_config = ConfigDict(extra="forbid")

    key: dict[str, str | None]
    train: list[str] = Field(default_factory=list)
    holdout: list[str] = Field(default_factory=list)
    measured_total: Literal["wall_s", "phase_sum"] | None = None
    phases: dict[str, PhaseModel]
    split: dict[str, list[str]] = Field(default_factory=dict)
    train_traits: dict[str, list[str]] | None = None  # absent in files written before it
    load_bandwidth: dict[str, float] | None = None  # analysis.storage.training_bandwidth
    # How the training models' measured-or-estimated features were made, where that has more
    # than one way ({"compiled_graph_bytes": "estimated" | "index" | "all_files" | "study" |
    # "mixed"}): a model predicted gets the same (analysis.feature_files.like_training).
    feature_methods: dict[str, str] | None = None


class PredictorFile(BaseModel):
    """A whole predictor file: one ``PredictorGroup`` per configuration fitted, and where
    its seconds come from."""

    # A later writer's key (of the same version) is kept, not refused.
    model_config = ConfigDict(extra="allow")

    predictor_schema_version: int
    result_schema_version: int | None = None  # harness.schema.SCHEMA_VERSION of the inputs
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
