"""A predictor made on one machine, scaled to another by one boot of a model it was fitted on.

Machines differ, even two VMs of one kind: the committed CPU scaling fit, made on a 2-core
AMD EPYC VM, predicted 81.4 s for a boot that took 150.1 s on another 2-core AMD EPYC (issue
19), and SmolLM2-135M boots in 88 s on the first and 155 s on a 2-core Intel Xeon. What a machine changes is the speed of each phase's work (interpreter
and imports, Inductor's compile per graph, the storage's bandwidth), not which model feature
that work grows with. So a calibration keeps every phase's line and multiplies it by that
phase's ratio on this machine, measured on one boot of a model of the training set:

    scale(phase) = measured(phase) / predicted(phase)      for the reference model

and the storage the reference boot loaded its weights at becomes the predictor's load
bandwidth (``analysis.storage``). A phase the reference boot measured under
``MIN_PHASE_S`` (a fraction of a second swings by half between rounds) or did not measure
takes the ratio of the whole boot. Coefficients scale by ``scale``, their covariance and the
residual variance by ``scale**2``: the intervals are this machine's in proportion. The scale's
own error (one boot) is not in them; ``calibration.scales`` records every ratio.

The boot itself is run by ``coldstart calibrate`` (``benchmarks.calibrate``): this module
only computes, and imports without vLLM. ``analysis.predictors.describe_calibration`` says
what a predictor file is calibrated to.
"""

from __future__ import annotations

import copy
import math
from datetime import datetime, timezone
from typing import Any

from analysis.feature_model import ModelFeatures
from analysis.model import PhaseModel
from analysis.predict import predict_features
from analysis.storage import (
    boot_load_bandwidth,
    predicted_storage,
    uses_load_bandwidth,
    with_load_bandwidth,
)

__all__ = ["MIN_PHASE_S", "calibrate_group", "calibrate_predictor", "measured_value"]

# Below this a phase is too short to carry its own ratio (the committed smoke rounds: phases
# under 2 s vary up to 4x between rounds, benchmarks.budgets).
MIN_PHASE_S = 2.0


def measured_value(boot: Any, name: str) -> float | None:
    """What ``boot`` (a BootResult) measured for a predictor entry: a phase, a sub-phase
    (``PHASE.SUB``) or the residual."""
    if name == "residual":
        return boot.residual_s
    if "." in name:
        return (boot.subphases or {}).get(name)
    return (boot.phases or {}).get(name)


def _scaled(raw: dict[str, Any], scale: float) -> dict[str, Any]:
    model = PhaseModel.model_validate(raw)
    if model.status != "fit":
        return raw
    return model.model_copy(update={
        "coefficients": [c * scale for c in model.coefficients],
        "covariance": [[v * scale * scale for v in row] for row in model.covariance],
        "residual_variance_s2": model.residual_variance_s2 * scale * scale,
    }).model_dump(mode="json")


def calibrate_group(group: dict[str, Any], boot: Any,
                    features: ModelFeatures) -> tuple[dict[str, Any], dict[str, Any]]:
    """``group`` scaled to the machine ``boot`` ran on; and what was measured, predicted and
    scaled, by entry."""
    group = copy.deepcopy(group)
    bandwidth = boot_load_bandwidth(boot, features.weight_bytes)
    if bandwidth is not None and uses_load_bandwidth(group):
        group["load_bandwidth"] = {"median_bytes_per_s": bandwidth, "min_bytes_per_s": bandwidth,
                                   "max_bytes_per_s": bandwidth, "n": 1}
    if bandwidth is not None:
        features = with_load_bandwidth(features, bandwidth)
    else:
        features, _ = predicted_storage(group, features, None)
    parts, total = predict_features(group, features)
    whole = boot.wall_s / total.mean_s if total.mean_s > 0 and boot.wall_s else 1.0
    record: dict[str, Any] = {"whole_boot": {"measured_s": boot.wall_s,
                                             "predicted_s": total.mean_s, "scale": whole}}
    for name, predicted in parts.items():
        measured = measured_value(boot, name)
        own = (measured is not None and measured >= MIN_PHASE_S and predicted.mean_s > 0
               and math.isfinite(measured))
        scale = measured / predicted.mean_s if own else whole
        group["phases"][name] = _scaled(group["phases"][name], scale)
        record[name] = {"measured_s": measured, "predicted_s": predicted.mean_s,
                        "scale": scale, "from": "its own" if own else "the whole boot"}
    return group, record


def calibrate_predictor(doc: dict[str, Any], group: dict[str, Any], boot: Any,
                        features: ModelFeatures, machine: dict[str, Any]) -> dict[str, Any]:
    """A predictor document holding ``group`` calibrated to ``machine`` (the machine ``boot``
    ran on), recording both machines and the ratios."""
    calibrated, record = calibrate_group(group, boot, features)
    out = {k: v for k, v in doc.items() if k != "groups"}
    out["groups"] = [calibrated]
    out["machine"] = machine
    out["calibration"] = {
        "fitted_on": doc.get("machine"), "machine": machine, "reference_model": boot.model,
        "reference_cell": {k: getattr(boot, k) for k in ("loader", "compile_cache",
                                                          "page_cache", "entrypoint")},
        "scales": record, "min_phase_s": MIN_PHASE_S,
        "calibrated_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S%z"),
        "previous": doc.get("calibration"),
    }
    return out
