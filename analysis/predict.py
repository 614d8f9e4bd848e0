"""Predict each start-up phase of a model never booted, with prediction intervals.

    coldstart predict --fit predictor.json MODEL_DIR_OR_CONFIG_JSON
        [--loader safetensors] [--compile-cache warm] [--platform cuda] [--vllm-version V]
        [--capture-sizes N] [--compile-cache-dir DIR] [--json FILE]
    coldstart predict --fit study MODEL_DIR_OR_CONFIG_JSON   # a shipped predictor
    coldstart predict --list-fits

``--fit`` takes a predictor file or the name of one that ships in the package
(``analysis.predictors``: the study's three GPU machines, this project's CPU run).

The model is a folder (features from ``config.json``, safetensors headers and tokenizer files;
no weight is read), an HF ``config.json`` (parameters from the architecture, marked
estimated) or a JSON file of ``ModelFeatures``. The predictor file (``analysis.fit``) holds
one set of phase models per configuration; the options choose one when it holds several.

Each phase's interval is the OLS prediction interval of a new observation; the total's adds
the phases' variances (phases taken as independent) with Welch-Satterthwaite degrees of
freedom (see ``analysis.regression``). Only numpy and scipy are needed.
"""

from __future__ import annotations

import math
import typing
from typing import Any

from pydantic import ValidationError

from analysis.dataset import config_label
from analysis.features.hf_config import TORCH_DTYPE_BYTES
from analysis.features.model_features import ModelFeatures, feature_value, trait_kind
from analysis.predictor_file import PredictorFile, PredictorGroup
from analysis.regression import Prediction, combine_predictions
from analysis.storage import uses_load_bandwidth, with_load_bandwidth
from document.boot_result import validation_summary
from document.errors import InputError

__all__ = ["predict_features", "split_phases", "choose_group",
           "domain_warnings", "apply_overrides", "prediction_json", "storage_span"]



def choose_group(predictor: PredictorFile, wanted: dict[str, str | None]) -> PredictorGroup:
    """The configuration matching every given field; refuses an ambiguous choice."""
    given = {k: v for k, v in wanted.items() if v is not None}
    matches = [g for g in predictor.groups
               if all(str(g.key.get(k)) == str(v) for k, v in given.items())]
    if len(matches) == 1:
        return matches[0]
    options = "; ".join(config_label(g.key) for g in predictor.groups)
    if not matches:
        raise InputError(f"no fitted configuration matches {config_label(given)}; "
                         f"the predictor has: {options}")
    raise InputError(f"{len(matches)} fitted configurations match; choose with --loader / "
                     f"--compile-cache / ... / --axis NAME=VALUE: {options}")


def predict_features(group: PredictorGroup, features: ModelFeatures,
                     alpha: float = 0.05) -> tuple[dict[str, Prediction], Prediction]:
    """Per-phase (and fitted sub-phase) and total predictions of one configuration.

    The total sums every entry of the group; a phase fitted as its sub-phases
    (``group.split``) is in it through them (see ``split_phases``).
    """
    parts = {}
    for name, model in group.phases.items():
        x = None if model.feature is None else feature_value(features, model.feature)
        parts[name] = model.predict(x, alpha)
    return parts, combine_predictions(list(parts.values()), alpha)


def storage_span(group: PredictorGroup, features: ModelFeatures,
                 alpha: float = 0.05) -> dict[str, float] | None:
    """The total at the slowest and at the fastest storage the training boots had: what
    the assumed (median) bandwidth hides: the study's cached granite4.0-h files loaded at
    7.9 GB/s, its other models at about 0.55 (``analysis.storage``). None when no line is on
    the bandwidth or the predictor records no range."""
    known = group.load_bandwidth
    if not uses_load_bandwidth(group) or known is None:
        return None
    slow, fast = known.min_bytes_per_s, known.max_bytes_per_s
    totals = [predict_features(group, with_load_bandwidth(features, bw), alpha)[1].mean_s
              for bw in (slow, fast)]
    return {"slowest_gbps": slow / 1e9, "total_at_slowest_s": totals[0],
            "fastest_gbps": fast / 1e9, "total_at_fastest_s": totals[1]}


def split_phases(group: PredictorGroup, parts: dict[str, Prediction],
                 alpha: float = 0.05) -> dict[str, Prediction]:
    """Each phase fitted as the sum of its sub-phases: that sum and its interval."""
    return {phase: combine_predictions([parts[s] for s in subs], alpha)
            for phase, subs in group.split.items()
            if all(s in parts for s in subs)}


def domain_warnings(group: PredictorGroup, features: ModelFeatures) -> dict[str, list[str]]:
    """Where the fitted lines may not describe this model, by fitted entry ("total": all).

    A model of a kind (MoE, hybrid Mamba, quantized) that no training model was, or whose
    every training model of that kind a line set aside as an outlier, gets a number from
    lines that were fitted without its kind: the interval does not cover that. Predictor
    files without ``train_traits`` (written before it existed) give no warnings.
    """
    if group.train_traits is None:
        return {}
    out: dict[str, list[str]] = {}
    for kind in dict.fromkeys(features.trait_kinds()):
        members = [m for m, traits in group.train_traits.items()
                   if kind in (trait_kind(t) for t in traits)]
        if not members:
            out.setdefault("total", []).append(f"no {kind} model among the training models")
            continue
        for name, model in group.phases.items():
            if model.status == "fit" and all(m in model.outliers for m in members):
                out.setdefault(name, []).append(
                    f"its {kind} training models were outliers of this line "
                    f"({', '.join(members)})")
    return out


def _field_kind(name: str) -> type | None:
    """int, bool or str: what ``--set`` may give a ``ModelFeatures`` field; None: nothing."""
    annotation = ModelFeatures.model_fields[name].annotation
    origin = typing.get_origin(annotation)
    if origin in (dict, list):
        return None
    kinds = set(typing.get_args(annotation)) if origin is not None else {annotation}
    # Count = Annotated[int, Field(ge=0)]: the type under the constraint
    kinds = {typing.get_args(k)[0] if typing.get_origin(k) is typing.Annotated else k
             for k in kinds}
    for kind in (bool, int, str):  # bool first: a flag is not a count
        if kind in kinds:
            return kind
    return None  # dicts and lists (params_by_dtype, estimated)


def _override_value(item: str, name: str, value: str) -> int | bool | str:
    kind = _field_kind(name)
    if name == "dtype":
        dtypes = sorted(TORCH_DTYPE_BYTES)
        if value.replace("torch.", "") not in dtypes:
            raise InputError(f"--set {item!r}: not a dtype ({', '.join(dtypes)})")
        return value
    if name == "quantization":
        return value  # a method name ("fp8", "awq", ...): only read as a trait
    if kind is str:  # source, compiled_graph_method: bookkeeping, not features
        raise InputError(f"--set {item!r}: {name} is not a feature")
    if kind is bool:
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise InputError(f"--set {item!r}: {name} is a flag: true or false")
    if kind is int:
        try:
            number = float(value) if "." in value or "e" in value.lower() else int(value)
        except ValueError as exc:
            raise InputError(f"--set {item!r}: {value!r} is not a number") from exc
        # Counts and byte sizes: "1.5e9" is fine, 1.5 parameters or 1e999 (inf) are not.
        if not (math.isfinite(number) and float(number).is_integer()):
            raise InputError(f"--set {item!r}: {name} is a whole number (a count or bytes)")
        if number < 0:
            raise InputError(f"--set {item!r}: {name} cannot be negative")
        return int(number)
    raise InputError(f"--set {item!r}: {name} cannot be set from the command line")


def apply_overrides(features: ModelFeatures, items: list[str]) -> ModelFeatures:
    data = features.model_dump()
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in ModelFeatures.model_fields or name in ("model", "estimated"):
            raise InputError(f"--set {item!r}: expected FEATURE=VALUE with a feature of "
                             "analysis.features.ModelFeatures")
        data[name] = _override_value(item, name, value)
        data["estimated"] = [e for e in data["estimated"] if e != name]
    try:
        return ModelFeatures.model_validate(data)
    except ValidationError as exc:  # a combination the model refuses: still one line
        raise InputError(f"--set: {validation_summary(exc)}") from exc


def prediction_json(features: ModelFeatures, group: PredictorGroup, parts: dict[str, Prediction],
             total: Prediction, level: float) -> dict[str, Any]:
    sums = split_phases(group, parts, 1 - level)
    warnings = domain_warnings(group, features)
    phases = {p: {"predicted_s": v.mean_s, "low_s": v.low_s, "high_s": v.high_s,
                  "feature": group.phases[p].feature,
                  "status": group.phases[p].status,
                  "extrapolated": v.extrapolated,
                  "warnings": warnings.get(p, [])} for p, v in parts.items()}
    for p, v in sums.items():
        phases[p] = {"predicted_s": v.mean_s, "low_s": v.low_s, "high_s": v.high_s,
                     "feature": None, "status": "sum of sub-phases",
                     "subphases": group.split[p], "extrapolated": v.extrapolated,
                     "warnings": [w for sub in group.split[p] for w in warnings.get(sub, [])]}
    return {
        "model": features.model,
        "config": group.key,
        "interval_level": level,
        "total_measured_as": group.measured_total,
        "phases": phases,
        "total": {"predicted_s": total.mean_s, "low_s": total.low_s, "high_s": total.high_s,
                  "extrapolated": total.extrapolated, "warnings": warnings.get("total", [])},
        "features": features.model_dump(mode="json"),
        "estimated_features": features.estimated,
    }


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("analysis.predict"))
