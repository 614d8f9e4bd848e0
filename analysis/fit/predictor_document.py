"""What a fit writes: the versioned predictor file ``analysis.predict`` reads, and the
``--json`` summary of PCCs, holdout and cross-validation errors."""

from __future__ import annotations

from datetime import timezone
from typing import Any

from analysis.fit.groups import GroupFit
from analysis.predictor_file import PredictorFile, PredictorGroup
from analysis.storage import training_bandwidth
from document.boot_result import SCHEMA_VERSION
from document.dates import written_at

__all__ = ["PREDICTOR_SCHEMA_VERSION", "predictor_document", "summary_json"]

# Predictor file changelog (bump on any change a reader must know about):
# - 1 (2026-11-29): groups of per-phase PhaseModel objects plus a constant "residual".
# - 2 (2026-12-01): a group's "phases" may hold sub-phases ("torch_compile.dynamo_transform")
#   in place of their phase; "split" maps such a phase to them. The total is still the sum
#   of every entry; a phase's prediction is the sum of its sub-phases'.
# - 3 (2026-12-02): a group's "load_bandwidth" holds the training boots' measured weight
#   load bandwidth (median, range, count; analysis.storage), what a line on
#   weight_bytes_over_load_bandwidth assumes when the operator gives no --load-gbps.
PREDICTOR_SCHEMA_VERSION = 3


def _feature_methods(features: list[Any]) -> dict[str, str]:
    methods = {f.compiled_graph_method for f in features if f.compiled_graph_method}
    if not methods:
        return {}
    return {"compiled_graph_bytes": methods.pop() if len(methods) == 1 else "mixed"}


def predictor_document(fits: list[GroupFit], inputs: list[str], alpha: float = 0.05,
                       machine: dict[str, Any] | None = None) -> PredictorFile:
    """The versioned predictor file ``analysis.predict`` reads."""
    return PredictorFile(
        predictor_schema_version=PREDICTOR_SCHEMA_VERSION,
        result_schema_version=SCHEMA_VERSION,
        created=written_at().astimezone(timezone.utc).isoformat(timespec="seconds"),
        inputs=inputs,
        # The machine the seconds were measured on (what the inputs say of it): the lines
        # predict that machine only.
        machine=machine or {},
        interval_level=1 - alpha,
        groups=[PredictorGroup(
            key=f.key,
            train=f.train,
            holdout=f.holdout,
            measured_total=f.measured_total,
            phases=f.models,
            split=f.split,
            load_bandwidth=training_bandwidth(r.features for r in f.rows if r.model in f.train),
            feature_methods=_feature_methods([r.features for r in f.rows
                                              if r.model in f.train]),
            # So predict can say when a model is of a kind the lines did not describe.
            train_traits={r.model: r.features.traits() for r in f.rows
                          if r.model in f.train and r.features.traits()},
        ) for f in fits],
    )


def summary_json(fits: list[GroupFit], not_fitted: list[dict[str, Any]] | None = None
                 ) -> dict[str, Any]:
    """``--json``: PCCs, holdout and cross-validation errors (first group at top level), and
    the configurations too small to fit (``ShortConfiguration.as_json``)."""
    def one(f: GroupFit) -> dict[str, Any]:
        hold = f.holdout_eval
        return {
            "config": f.key,
            "train": f.train,
            "pcc": f.pcc,
            "features": {p: m.feature or "constant" for p, m in f.models.items()
                         if m.status == "fit"},
            "selection": f.selection,
            "split": f.split,
            "cv": {k: v for k, v in f.cv.items()},
            "holdout": None if hold is None else {
                "mse_s": hold.get("mse_s"), "mae_s": hold.get("mae_s"),
                "max_error_s": hold.get("max_error_s"), "rmse_s": hold.get("rmse_s"),
                "mape": hold.get("mape"), "n": hold.get("n"),
                "per_model": hold.get("per_model", {})},
            "baseline_study_method": f.baseline,
            "notes": f.notes,
        }
    groups = [one(f) for f in fits]
    return {**groups[0], "groups": groups, "not_fitted": list(not_fitted or [])}

