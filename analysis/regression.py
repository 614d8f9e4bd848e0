"""One small linear model per phase: fitting, outlier screening, prediction intervals.

A phase model is ordinary least squares of the phase's seconds on one feature,
``seconds = intercept + slope * feature`` (or the intercept alone for a phase that is constant
per machine). It is stored as plain numbers (coefficients, their covariance, the residual
variance and degrees of freedom) so that ``analysis.predict`` computes prediction intervals
with numpy and scipy only.

References
----------
- Ordinary least squares and the prediction interval for a new observation,
  ``yhat +- t(1 - alpha/2, n - p) * sqrt(s^2 + x' Cov(b) x)``: D. C. Montgomery, E. A. Peck,
  G. G. Vining, *Introduction to Linear Regression Analysis*, 5th ed., Wiley 2012, sec. 2.5
  and 3.5; statsmodels ``OLSResults.get_prediction(...).summary_frame()`` (``obs_ci_*``)
  computes the same, and the tests check that.
- Outlier screening: externally studentized residuals with a Bonferroni correction,
  R. D. Cook and S. Weisberg, *Residuals and Influence in Regression*, Chapman & Hall 1982,
  sec. 2.2; statsmodels ``OLSResults.outlier_test(method="bonferroni")``.
- Combining independent phase intervals into one for the total: the Welch-Satterthwaite
  approximation of the degrees of freedom of a sum of variances, F. E. Satterthwaite,
  "An approximate distribution of estimates of variance components", *Biometrics Bulletin*
  2(6), 1946.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy import stats

from document.errors import UserError

__all__ = ["FitError", "PhaseModel", "Prediction", "combine_predictions", "fit_phase",
           "screening_budget", "MAX_OUTLIER_FRACTION", "MIN_POINTS_CONSTANT",
           "MIN_POINTS_LINEAR", "MIN_POINTS_OUTLIER_TEST"]

# A line needs one residual degree of freedom beyond its two coefficients for any interval;
# a constant needs two points.
MIN_POINTS_LINEAR = 3
MIN_POINTS_CONSTANT = 2
# Below this many points an outlier test has too little power to mean anything.
MIN_POINTS_OUTLIER_TEST = 6
# The screening leaves out at most this share of a fit's points.
MAX_OUTLIER_FRACTION = 0.2


class FitError(UserError, ValueError):
    """Data that cannot be fitted (too few points, nothing to fit)."""


class Prediction(NamedTuple):
    mean_s: float
    low_s: float
    high_s: float
    variance_s2: float  # variance of a new observation: s^2 + x' Cov(b) x
    df: float
    extrapolated: bool


class PhaseModel(BaseModel):
    """What ``predict`` needs of one phase's fit, and what a report says about it."""

    model_config = ConfigDict(extra="forbid")

    phase: str
    status: Literal["fit", "not_applicable"] = "fit"
    feature: str | None = None  # None: intercept only
    feature_scale: float = 1.0  # the fit is on feature / feature_scale
    feature_unit: str = ""
    coefficients: list[float] = Field(default_factory=list)  # [intercept, slope per unit]
    covariance: list[list[float]] = Field(default_factory=list)
    residual_variance_s2: float = 0.0
    df_resid: float = 0.0
    n: int = 0
    r2: float | None = None
    models: list[str] = Field(default_factory=list)
    outliers: dict[str, float] = Field(default_factory=dict)  # model -> Bonferroni p
    feature_range: list[float] = Field(default_factory=list)  # [min, max] in base units
    note: str = ""

    def row(self, x: float | None) -> np.ndarray:
        """The design row of feature value ``x`` (base units): [1] or [1, x / feature_scale]."""
        if self.feature is None:
            return np.array([1.0])
        if x is None:
            raise FitError(f"{self.phase}: needs feature {self.feature!r}, which is unknown for "
                           f"this model (give it with --set {self.feature.split('_x_')[0]}=VALUE)")
        return np.array([1.0, float(x) / self.feature_scale])

    def predict(self, x: float | None = None, alpha: float = 0.05) -> Prediction:
        """Mean and (1 - alpha) prediction interval of this phase for feature value ``x``.

        ``x`` is in base units (bytes, parameters, ...). Seconds are clipped at 0 below: a
        phase never takes negative time.
        """
        if self.status == "not_applicable":
            return Prediction(0.0, 0.0, 0.0, 0.0, math.inf, False)
        row = self.row(x)
        beta = np.asarray(self.coefficients)
        cov = np.asarray(self.covariance)
        mean = float(row @ beta)
        var = float(self.residual_variance_s2 + row @ cov @ row)
        half = float(stats.t.ppf(1 - alpha / 2, self.df_resid)) * math.sqrt(max(var, 0.0))
        extrapolated = False
        if self.feature is not None and self.feature_range and x is not None:
            lo, hi = self.feature_range
            extrapolated = not (lo <= float(x) <= hi)
        return Prediction(max(mean, 0.0), max(mean - half, 0.0), max(mean + half, 0.0), var,
                          self.df_resid, extrapolated)

    @property
    def slope_per_unit(self) -> float | None:
        if self.feature is None or len(self.coefficients) < 2:
            return None
        return self.coefficients[1]


def _ols(x: np.ndarray | None, y: np.ndarray):
    import statsmodels.api as sm  # only the fit needs statsmodels; predict does not

    design = np.ones((len(y), 1)) if x is None else sm.add_constant(x, has_constant="add")
    return sm.OLS(y, design).fit()


def outlier_p_bonferroni(res) -> np.ndarray:
    """Each point's Bonferroni-corrected two-sided p of its externally studentized residual
    (Cook and Weisberg 1982, sec. 2.2): what statsmodels' ``outlier_test(method="bonferroni")``
    gives, in closed form, ``t_i = e_i sqrt((n-p-1) / (SSE (1-h_ii) - e_i^2))``. Hand-written
    because statsmodels refits the line once per point (a leave-one-out loop) and the nested
    LOMO runs the screening 17,000 times: 80 % of its minutes. A point whose deleted fit is
    singular (leverage 1) gets NaN, untestable, as statsmodels'. ``tests/test_analysis_model``
    checks it against statsmodels."""
    design = np.asarray(res.model.exog, dtype=float)
    e = np.asarray(res.resid, dtype=float)
    n, k = design.shape
    dof = n - k - 1
    if dof < 1:
        return np.full(n, np.nan)
    hat = np.einsum("ij,jk,ik->i", design, np.linalg.pinv(design.T @ design), design)
    # SSE of the fit without point i; 0 when the others lie exactly on a line (then the
    # point's t is infinite, p 0, as statsmodels' deleted fit says)
    rest = np.maximum(float(e @ e) * (1.0 - hat) - e * e, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = e * np.sqrt(dof / rest)
    t[hat > 1.0 - 1e-10] = np.nan
    return np.minimum(1.0, 2.0 * stats.t.sf(np.abs(t), dof) * n)


def screening_budget(n: int, outlier_alpha: float | None,
                     max_outlier_fraction: float = MAX_OUTLIER_FRACTION) -> int:
    """How many of ``n`` points the outlier screening of ``fit_phase`` may leave out at most.

    0 without screening (``outlier_alpha`` None) or below ``MIN_POINTS_OUTLIER_TEST`` points.
    """
    if outlier_alpha is None or n < MIN_POINTS_OUTLIER_TEST:
        return 0
    return int(max_outlier_fraction * n)


def fit_phase(phase: str, y: Sequence[float], names: Sequence[str], *,
              feature: str | None = None, x: Sequence[float] | None = None,
              feature_scale: float = 1.0, feature_unit: str = "",
              outlier_alpha: float | None = 0.05,
              max_outlier_fraction: float = MAX_OUTLIER_FRACTION) -> PhaseModel:
    """Fit ``y = b0 + b1 * x / feature_scale`` by OLS, screening outliers first.

    Parameters
    ----------
    phase : the phase name, recorded in the model.
    y : seconds of the phase, one per model.
    names : the model names, in the order of ``y``.
    feature, x : the feature's name and values (base units); both None for a constant.
    feature_scale, feature_unit : fit on ``x / feature_scale`` (coefficients then read as
        seconds per GiB, per billion parameters, ...).
    outlier_alpha : Bonferroni-corrected level of the outlier test (None: no screening). The
        most extreme point is dropped while its corrected p is below this level, at most
        ``max_outlier_fraction`` of the points, and only with at least 6 points.

    Raises
    ------
    FitError
        Fewer points than the fit needs (3 for a line, 2 for a constant).
    """
    yv = np.asarray(y, dtype=float)
    xv = None if x is None else np.asarray(x, dtype=float) / feature_scale
    names = list(names)
    need = MIN_POINTS_CONSTANT if xv is None else MIN_POINTS_LINEAR
    if len(yv) < need:
        raise FitError(f"{phase}: {len(yv)} point(s), a {'constant' if xv is None else 'line'} "
                       f"needs at least {need}")
    if xv is not None and np.ptp(xv) == 0:
        raise FitError(f"{phase}: feature {feature!r} has the same value for every model")
    keep = np.ones(len(yv), dtype=bool)
    outliers: dict[str, float] = {}
    res = _ols(None if xv is None else xv[keep], yv[keep])
    budget = int(max_outlier_fraction * len(yv))
    while (outlier_alpha is not None and len(outliers) < budget
           and keep.sum() >= MIN_POINTS_OUTLIER_TEST and res.df_resid > 1):
        if not res.scale > 0:  # an exact fit (a sub-phase that is 0 s for every model)
            break
        p_bonf = outlier_p_bonferroni(res)
        if xv is not None:
            # Dropping the one point that gives the feature its spread would leave a line
            # through a single x value (not identified); its residual is 0/0 in exact
            # arithmetic, so a small p there is rounding, not evidence.
            kept_x = xv[keep]
            for j in range(len(kept_x)):
                if np.ptp(np.delete(kept_x, j)) == 0:
                    p_bonf[j] = np.nan
        if np.all(np.isnan(p_bonf)):
            break
        worst = int(np.nanargmin(p_bonf))
        if not p_bonf[worst] < outlier_alpha:
            break
        index = int(np.flatnonzero(keep)[worst])
        keep[index] = False
        outliers[names[index]] = float(p_bonf[worst])
        res = _ols(None if xv is None else xv[keep], yv[keep])
    kept_x = None if x is None else np.asarray(x, dtype=float)[keep]
    return PhaseModel(
        phase=phase, feature=feature, feature_scale=feature_scale, feature_unit=feature_unit,
        coefficients=[float(b) for b in res.params],
        covariance=np.asarray(res.cov_params()).tolist(),
        residual_variance_s2=float(res.scale), df_resid=float(res.df_resid),
        n=int(keep.sum()), r2=None if xv is None else float(res.rsquared),
        models=[n for n, k in zip(names, keep) if k], outliers=outliers,
        feature_range=[] if kept_x is None else [float(kept_x.min()), float(kept_x.max())],
    )


def combine_predictions(parts: Sequence[Prediction], alpha: float = 0.05) -> Prediction:
    """The sum of independent phase predictions and its (1 - alpha) prediction interval.

    Variances add; the degrees of freedom of the sum follow Welch-Satterthwaite.
    """
    live = [p for p in parts if p.variance_s2 > 0]
    mean = sum(p.mean_s for p in parts)
    var = sum(p.variance_s2 for p in live)
    if not live:
        return Prediction(mean, mean, mean, 0.0, math.inf, False)
    denom = sum(p.variance_s2 ** 2 / p.df for p in live if math.isfinite(p.df) and p.df > 0)
    df = var ** 2 / denom if denom > 0 else math.inf
    half = float(stats.t.ppf(1 - alpha / 2, df)) * math.sqrt(var)
    return Prediction(mean, max(mean - half, 0.0), mean + half, var, df,
                      any(p.extrapolated for p in parts))
