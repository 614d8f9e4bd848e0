"""What a fit reads from a data set's rows, and how its predictions are scored.

A *target* is a phase (``model_loading``), a sub-phase (``torch_compile.dynamo_transform``) or
the ``residual`` (the wall time the phases leave unexplained). These helpers turn rows
(``analysis.dataset.Row``) into the points one line is fitted to, predict a row's phases and
total from fitted lines, and measure errors and correlations: the building blocks of feature
selection (``analysis.fit.selection``), validation (``analysis.fit.validate``) and the group fit
(``analysis.fit.groups``).

Error metrics come from ``sklearn.metrics``; the Pearson correlation and its 95 % interval
from ``scipy.stats.pearsonr(...).confidence_interval()`` (Fisher's z transform; R. A. Fisher,
"On the probable error of a coefficient of correlation deduced from a small sample",
*Metron* 1, 1921).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from analysis.dataset import Row
from analysis.features.model_features import ModelFeatures, feature_unit, feature_value
from analysis.regression import PhaseModel, Prediction, combine_predictions, fit_phase

__all__ = ["RESIDUAL", "error_metrics", "fit_target", "measured_total", "missing_feature",
           "pearson", "predict_row", "target_points", "target_value"]

# The wall time the phases leave unexplained (process exit, KV-cache allocation where a
# reader does not attribute it), predicted as a constant.
RESIDUAL = "residual"


def target_value(r: Row, target: str) -> float | None:
    """The seconds ``r`` measured for ``target`` (None: not measured)."""
    if target == RESIDUAL:
        if r.wall_s is None:
            return None
        return r.wall_s - sum(v for v in r.phases.values() if v is not None)
    if "." in target:
        return r.subphases.get(target)
    return r.phases.get(target)


def target_points(rows: list[Row], target: str, feature: str | None
                  ) -> tuple[list[str], list[float] | None, list[float]]:
    """Names, feature values and seconds of the rows that measured ``target``.

    A row whose ``feature`` is unknown is left out; with ``feature`` None the values are None.
    """
    names, xs, ys = [], [], []
    for r in rows:
        y = target_value(r, target)
        if y is None:
            continue
        x = None if feature is None else feature_value(r.features, feature)
        if feature is not None and x is None:
            continue
        names.append(r.model)
        xs.append(x)
        ys.append(y)
    return names, (None if feature is None else xs), ys


def fit_target(target: str, rows: list[Row], feature: str | None,
               outlier_alpha: float | None) -> PhaseModel:
    """``target``'s line on ``feature`` (its intercept alone for None) over ``rows``.

    Raises
    ------
    FitError
        Fewer points than the fit needs, or a feature with one value.
    """
    names, x, y = target_points(rows, target, feature)
    scale, unit = feature_unit(feature) if feature else (1.0, "")
    return fit_phase(target, y, names, feature=feature, x=x, feature_scale=scale,
                     feature_unit=unit, outlier_alpha=outlier_alpha)


def predict_row(models: dict[str, PhaseModel], features: ModelFeatures,
                alpha: float = 0.05) -> tuple[dict[str, Prediction], Prediction]:
    """Each target's prediction for a model of ``features``, and their sum."""
    parts = {}
    for name, m in models.items():
        x = None if m.feature is None else feature_value(features, m.feature)
        parts[name] = m.predict(x, alpha)
    return parts, combine_predictions(list(parts.values()), alpha)


def measured_total(r: Row, how: str) -> float | None:
    """The boot's total: its wall time (``how == "wall_s"``) or the sum of its phases."""
    if how == "wall_s":
        return r.wall_s
    return sum(v for v in r.phases.values() if v is not None)


def missing_feature(r: Row, models: dict[str, PhaseModel]) -> str | None:
    """A feature some fitted line needs that ``r`` lacks (and that line), or None."""
    for p, m in models.items():
        if m.status == "fit" and m.feature and feature_value(r.features, m.feature) is None:
            return f"{m.feature} (the {p} line)"
    return None


def error_metrics(predicted: list[float], measured: list[float]) -> dict[str, float]:
    """MSE, RMSE, MAE, max error (seconds) and MAPE (a share) of ``predicted``."""
    from sklearn.metrics import (
        max_error,
        mean_absolute_error,
        mean_absolute_percentage_error,
        mean_squared_error,
    )

    mse = float(mean_squared_error(measured, predicted))
    return {"mse_s": mse, "rmse_s": math.sqrt(mse),
            "mae_s": float(mean_absolute_error(measured, predicted)),
            "max_error_s": float(max_error(measured, predicted)),
            "mape": float(mean_absolute_percentage_error(measured, predicted))}


def pearson(x: list[float], y: list[float]) -> dict[str, Any]:
    """Pearson's r of ``x`` and ``y``, its p-value and 95 % interval (None where undefined)."""
    from scipy import stats

    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"r": None, "ci_low": None, "ci_high": None, "n": n}
    res = stats.pearsonr(x, y)
    out: dict[str, Any] = {"r": float(res.statistic), "p_value": float(res.pvalue), "n": n,
                           "ci_low": None, "ci_high": None}
    if n > 3:  # Fisher's z needs n - 3 > 0
        ci = res.confidence_interval(confidence_level=0.95)
        out["ci_low"], out["ci_high"] = float(ci.low), float(ci.high)
    return out
