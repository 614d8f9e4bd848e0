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

import math
from datetime import datetime, timezone
from typing import Any

from analysis.features.model_features import ModelFeatures, feature_value
from analysis.features.sources import like_training
from analysis.predict import predict_features
from analysis.predictor_file import LoadBandwidth, PredictorFile, PredictorGroup
from analysis.regression import PhaseModel
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


def _on_this_machine(group: PredictorGroup, boot: Any,
                    features: ModelFeatures) -> tuple[ModelFeatures, float | None]:
    """The reference's features as the training models' were made (``like_training``), at
    the bandwidth its boot loaded at (else the group's)."""
    features, _ = like_training(features, group)
    bandwidth = boot_load_bandwidth(boot, features.weight_bytes)
    if bandwidth is not None:
        return with_load_bandwidth(features, bandwidth), bandwidth
    features, _ = predicted_storage(group, features, None)
    return features, None


def _line_scales(model: PhaseModel, xs: list[float | None],
                 measured: list[float]) -> tuple[float, float] | None:
    """(intercept scale, slope scale) that put the line through both reference boots' own
    values; None where the boots do not tell the two apart: a constant, a feature whose
    slope adds under ``MIN_PHASE_S`` between them, or a scale that is not positive."""
    if model.feature is None or len(model.coefficients) != 2 or None in xs:
        return None
    b0, b1 = model.coefficients
    x1, x2 = (x / model.feature_scale for x in xs)  # type: ignore[operator]
    spread = b1 * (x2 - x1)
    if abs(spread) < MIN_PHASE_S:
        return None
    slope = (measured[1] - measured[0]) / spread
    rest = measured[0] - slope * b1 * x1
    # an intercept near 0 s carries no ratio of its own: it moves with the slope
    intercept = rest / b0 if abs(b0) >= 0.1 * MIN_PHASE_S else slope
    if not (intercept > 0 and slope > 0 and math.isfinite(intercept) and math.isfinite(slope)):
        return None
    return intercept, slope


def _rescaled(model: PhaseModel, intercept: float, slope: float) -> PhaseModel:
    scales = [intercept, slope][:len(model.coefficients)]
    return model.model_copy(update={
        "coefficients": [c * k for c, k in zip(model.coefficients, scales)],
        "covariance": [[v * scales[i] * scales[j] for j, v in enumerate(row)]
                       for i, row in enumerate(model.covariance)],
        "residual_variance_s2": model.residual_variance_s2 * max(scales) ** 2,
    })


def calibrate_group(group: PredictorGroup, boot: Any, features: ModelFeatures,
                    second: tuple[Any, ModelFeatures] | None = None
                    ) -> tuple[PredictorGroup, dict[str, Any]]:
    """``group`` scaled to the machine ``boot`` ran on; and what was measured, predicted and
    scaled, by entry.

    With one reference boot every phase's line is multiplied by its ratio. With a ``second``
    (a larger training model booted on the same machine), a line whose slope the two boots
    tell apart gets its intercept and its slope scaled apart, so that it passes through both
    boots' values: a machine that imports 1.5x slower but compiles each layer 2.5x slower
    predicts a large model by both. Other entries take the ratio of the two boots' sums.
    """
    refs = [(boot, features)] + ([second] if second is not None else [])
    placed = [_on_this_machine(group, b, f) for b, f in refs]
    bandwidths = [bw for _, bw in placed if bw is not None]
    if bandwidths and uses_load_bandwidth(group):
        group = group.model_copy(update={"load_bandwidth": LoadBandwidth.of(bandwidths)})
    predictions = [predict_features(group, f) for f, _ in placed]
    walls = [b.wall_s for b, _ in refs]
    totals = [total.mean_s for _, total in predictions]
    whole = (sum(walls) / sum(totals) if sum(totals) > 0 and None not in walls else 1.0)
    record: dict[str, Any] = {"whole_boot": {"measured_s": walls[0] if len(refs) == 1 else walls,
                                             "predicted_s": totals[0] if len(refs) == 1
                                             else totals, "scale": whole}}
    phases = dict(group.phases)
    for name in predictions[0][0]:
        model = group.phases[name]
        measured = [measured_value(b, name) for b, _ in refs]
        predicted = [parts[name].mean_s for parts, _ in predictions]
        known = [m for m in measured if m is not None and math.isfinite(m)]
        own = (len(known) == len(refs) and max(known) >= MIN_PHASE_S and sum(predicted) > 0)
        apart = (_line_scales(model, [feature_value(f, model.feature) if model.feature
                                      else None for f, _ in placed], known)
                 if own and len(refs) == 2 and model.status == "fit" else None)
        if apart is not None:
            phases[name] = _rescaled(model, *apart)
            record[name] = {"measured_s": measured, "predicted_s": predicted,
                            "scale": apart[1], "intercept_scale": apart[0],
                            "from": "both boots, intercept and slope apart"}
            continue
        scale = sum(known) / sum(predicted) if own else whole
        if model.status == "fit":
            phases[name] = _rescaled(model, scale, scale)
        one = len(refs) == 1
        record[name] = {"measured_s": measured[0] if one else measured,
                        "predicted_s": predicted[0] if one else predicted, "scale": scale,
                        "from": ("its own" if one else "both boots' sum") if own
                        else "the whole boot"}
    return group.model_copy(update={"phases": phases}), record


def calibrate_predictor(predictor: PredictorFile, group: PredictorGroup, boot: Any,
                        features: ModelFeatures, machine: dict[str, Any],
                        second: tuple[Any, ModelFeatures] | None = None) -> PredictorFile:
    """``predictor`` holding ``group`` alone, calibrated to ``machine`` (the machine ``boot``
    ran on), recording both machines and the ratios."""
    calibrated, record = calibrate_group(group, boot, features, second)
    calibration = {
        "fitted_on": predictor.machine, "machine": machine, "reference_model": boot.model,
        "second_reference_model": second[0].model if second is not None else None,
        "reference_cell": {k: getattr(boot, k) for k in ("loader", "compile_cache",
                                                          "page_cache", "entrypoint")},
        "scales": record, "min_phase_s": MIN_PHASE_S,
        "calibrated_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S%z"),
        "previous": predictor.calibration,
    }
    return predictor.model_copy(update={"groups": [calibrated], "machine": machine,
                                        "calibration": calibration})
