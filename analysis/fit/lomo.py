"""Nested leave-one-model-out validation: the whole method refitted without each model.

The cross-validation of ``analysis.fit.validate`` refits each phase's line without the
left-out model but keeps the features chosen on every training model, so the left-out model
helped choose them. Here each fold runs the whole fit on the other models: the choice of the
split, of every phase's feature (``analysis.fit.selection``), the outlier screening and the
lines (``analysis.fit.groups.fit_group`` with the model held out), then predicts the left-out
model's total. No choice has seen it. Every model whose total was measured and whose boot
measured every phase the others did is left out once.

The storage is an input of a prediction (``analysis.storage``), so each left-out model is
predicted twice: at the load bandwidth its own boot measured (``predicted_s``: the operator
knows the storage, the validation the suite's acceptance is about) and at the fold's training
median (``median_storage``: the operator gives none, what ``analysis.predict`` then assumes).
"""

from __future__ import annotations

import statistics
from typing import Any

from analysis.dataset import Row
from analysis.fit.groups import fit_group
from analysis.fit.targets import error_metrics, measured_total, target_value
from analysis.fit.validate import evaluate_holdout
from analysis.regression import FitError
from analysis.storage import with_load_bandwidth
from document.boot_result import PHASE_NAMES

__all__ = ["lomo_candidates", "lomo_line", "nested_lomo"]


def lomo_candidates(rows: list[Row]) -> list[Row]:
    """The rows a fold may leave out: a measured total and every phase another row measured."""
    how = "wall_s" if all(r.wall_s is not None for r in rows) else "phase_sum"
    phases = [p for p in PHASE_NAMES if any(target_value(r, p) is not None for r in rows)]
    return [r for r in rows if measured_total(r, how) is not None
            and all(target_value(r, p) is not None for p in phases)]


def _median_storage(row: Row, train: list[Row]) -> Row:
    known = [r.features.load_bandwidth for r in train if r.features.load_bandwidth is not None]
    if not known:
        return row
    return row._replace(features=with_load_bandwidth(row.features, statistics.median(known)))


def _scores(totals: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """Error figures of ``{model: (predicted, measured)}``, and the model furthest off."""
    if len(totals) < 2:
        return {"n": len(totals)}
    worst = max(totals, key=lambda m: abs(totals[m][0] - totals[m][1]))
    return {"n": len(totals), **error_metrics([p for p, _ in totals.values()],
                                              [t for _, t in totals.values()]),
            "worst_model": worst}


def nested_lomo(rows: list[Row], *, forced: dict[str, str] | None = None,
                outlier_alpha: float | None = 0.05) -> dict[str, Any]:
    """Leave each model out, fit the whole method on the others, predict its total.

    Parameters
    ----------
    rows : one per model, all of one configuration (``analysis.dataset.Row``).
    forced, outlier_alpha : as for ``fit_group`` (a forced feature is no choice; it holds in
        every fold).

    Returns
    -------
    ``{"n", "mse_s", "max_error_s", ..., "worst_model", "median_storage": {same figures},
    "per_model": {model: fold}, "not_scored": {model: why}}``; each fold holds ``train`` (the
    models its fit saw), ``features`` (what its selection chose), ``outliers`` (what its
    screening set aside), the predicted and measured total, the error and whether the
    measured total lies inside the 95 % interval, and ``median_storage``.
    """
    per_model: dict[str, dict[str, Any]] = {}
    not_scored: dict[str, str] = {}
    for left in lomo_candidates(rows):
        others = [r for r in rows if r.model != left.model]
        try:
            fold = fit_group(others + [left], holdout=[left.model], forced=forced,
                             outlier_alpha=outlier_alpha, validate=False)
            own = evaluate_holdout(fold.models, [left], fold.measured_total, fold.split)
            median = evaluate_holdout(fold.models, [_median_storage(left, others)],
                                      fold.measured_total, fold.split)
        except FitError as exc:
            not_scored[left.model] = str(exc)
            continue
        if left.model not in own["per_model"]:
            not_scored[left.model] = "its total was not measured"
            continue
        v, m = own["per_model"][left.model], median["per_model"][left.model]
        per_model[left.model] = {
            "train": fold.train,
            "features": {t: p.feature or "constant" for t, p in fold.models.items()
                         if p.status == "fit"},
            "outliers": {t: sorted(p.outliers) for t, p in fold.models.items() if p.outliers},
            "predicted_s": v["predicted_s"], "measured_s": v["measured_s"],
            "error_s": v["error_s"], "low_s": v["low_s"], "high_s": v["high_s"],
            "inside_interval": v["inside_interval"],
            "median_storage": {"predicted_s": m["predicted_s"], "error_s": m["error_s"]},
        }
    own = {m: (v["predicted_s"], v["measured_s"]) for m, v in per_model.items()}
    median = {m: (v["median_storage"]["predicted_s"], v["measured_s"])
              for m, v in per_model.items()}
    return {**_scores(own), "median_storage": _scores(median),
            "per_model": per_model, "not_scored": not_scored}


def lomo_line(lomo: dict[str, Any]) -> str:
    """One line of the figures, as the fit prints them."""
    if "mse_s" not in lomo:
        return f"nested leave-one-model-out: {lomo.get('n', 0)} model(s) scored, too few"
    median = lomo["median_storage"]
    tail = ""
    if "mse_s" in median:
        tail = (f"; at the training median bandwidth: MSE {median['mse_s']:.2f} s^2, max error "
                f"{median['max_error_s']:.2f} s ({median['worst_model']})")
    return (f"nested leave-one-model-out ({lomo['n']} models, every choice refitted per "
            f"fold): MSE {lomo['mse_s']:.2f} s^2, max error {lomo['max_error_s']:.2f} s "
            f"({lomo['worst_model']}) at each boot's measured load bandwidth{tail}")
