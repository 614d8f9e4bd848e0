"""The interval for a change, the level each end is taken at, and the spending of alpha over
the looks of a sequential gate: what makes a pass a bound.

**The interval.** Per cell and metric, the change of NEW against BASE as the ratio of the two
sides' geometric means: a Student t-interval on the difference of the mean log seconds, with
the two sides' variances pooled (``scipy.stats.t``), turned into seconds by the base median
(``change = base median x (ratio - 1)``). Where a side holds a value that is not positive
(a phase measured as 0.0 s) the same interval is taken on seconds. Why this one, on the
committed real rounds (docs/analysis-decisions.md, "the gate's interval"): boot times are
right-skewed and their spread scales with the phase (a multiplicative noise), which logs
make symmetric and alike across phases; a gate runs as many rounds on both sides (pairs
interleaved), where the pooled t is robust to unequal variances; and it reaches the levels
the family needs with 3 rounds a side, where a rank interval (Hodges-Lehmann's
distribution-free one) cannot: 3 vs 3 rounds give it 20 arrangements, so no one-sided level
beyond 1 - 1/20. Spread widens the interval; an outlier widens it too. The replay
(``analysis.replay``) measures what this costs on resampled real rounds rather than assuming
normal ones.

**The margin.** ``max(threshold x base median, noise floor)``, both set by the user
(``--threshold``, ``--noise-floor-s``), never by the observed spread.

**The hierarchy and the levels.** Each cell's total (launch to ready) is the gated metric:
a pass needs every cell's total bounded (the interval's upper end below the margin). Phases
are tested for regressions (a lower end beyond its margin) and explain the change; a phase
whose estimate is beyond its margin but not confirmed leaves its cell undecided.

- The upper ends (pass): each at one-sided ``alpha_look``, with no split over cells or
  metrics. A pass claims every total within its margin; it is wrong only if some total is
  not, and that total's own bound then had to miss, which happens with probability at most
  ``alpha_look`` (the intersection-union test: R. L. Berger, *Technometrics* 24, 1982).
- The lower ends (regression): ``alpha_look`` split by Bonferroni over the cells, and within
  a cell half to the total and half over its phases, so that the chance of naming any false
  regression in the whole release is at most ``alpha_look`` under any dependence between the
  tests (the total is the sum of the phases).

**The looks.** A sequential gate looks at a cell after its first rounds and after each pair
it adds, up to ``max_rounds`` a side. Look k at n rounds spends ``F(n / max_rounds) -
F(n_prev / max_rounds)`` of alpha, with Lan and DeMets' Pocock-type spending function
``F(t) = alpha ln(1 + (e - 1) t)`` (K. K. G. Lan, D. L. DeMets, *Biometrika* 70, 1983), which
spends much early (half of alpha by 3 rounds of 8), so that clear cells stop early. The looks'
errors are added (Bonferroni over looks): whatever the correlation between looks, the chance
of any false pass, or any false regression, over every look is at most the sum of what they
spent, at most alpha. This is cruder than group-sequential boundaries that use the looks'
correlation, and holds without their large-sample normality, which 3 rounds do not have.
A budget that stops the gate before ``max_rounds`` leaves alpha unspent: never more error.
A fixed design (``--rounds N``, or compare of two runs not made by a sequential gate) is one
look that spends all of alpha.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Interval", "Look", "change_interval", "margin_s", "regression_share", "spent"]


def spent(n: int, n_max: int, alpha: float) -> float:
    """The alpha spent by all looks up to one at ``n`` rounds of at most ``n_max``."""
    t = min(1.0, max(0.0, n / n_max)) if n_max > 0 else 1.0
    return alpha * math.log(1.0 + (math.e - 1.0) * t)


@dataclass(frozen=True)
class Look:
    """One look at a cell: at ``n`` rounds a side, the previous look at ``n_prev`` (0 for the
    first), of a design of at most ``n_max`` rounds over ``cells`` cells (the regression
    side's split). The fixed design is ``Look(n, 0, n)``."""

    n: int
    n_prev: int = 0
    n_max: int | None = None
    cells: int | None = None

    def alpha(self, alpha: float) -> float:
        n_max = self.n_max if self.n_max is not None else self.n
        if self.n_prev <= 0 and self.n >= n_max:
            return alpha
        return spent(self.n, n_max, alpha) - spent(self.n_prev, n_max, alpha)


def regression_share(metric_is_total: bool, phases_in_cell: int, cells: int) -> float:
    """The share of a look's alpha a lower end is taken at: 1/cells for the cell, half of it
    to the total and half over the cell's phases (all of it to the total where the cell has
    no phase tested)."""
    cell = 1.0 / max(cells, 1)
    if phases_in_cell <= 0:
        return cell if metric_is_total else 0.0
    return cell / 2 if metric_is_total else cell / (2 * phases_in_cell)


def margin_s(base_median: float, threshold: float, floor_s: float) -> float:
    """The change a gate tolerates: the larger of ``threshold`` x the base median and the
    noise floor in seconds."""
    return max(threshold * abs(base_median), floor_s)


@dataclass(frozen=True)
class Interval:
    """The change NEW - BASE in seconds: its estimate and its two ends, each a one-sided
    bound at its own level (``alpha_lo``, ``alpha_hi``); ``scale`` says whether it was taken
    on log seconds (the ratio of geometric means, given in seconds of the base median) or
    on seconds."""

    estimate_s: float
    lo_s: float
    hi_s: float
    alpha_lo: float
    alpha_hi: float
    scale: str
    df: int


def change_interval(base: Sequence[float], new: Sequence[float], *, alpha_lo: float,
                    alpha_hi: float, base_median: float) -> Interval | None:
    """The pooled-variance t-interval of the change (module docstring); None with fewer than
    two rounds on a side (no spread to bound it by: never a pass)."""
    import numpy as np
    from scipy import stats

    n1, n2 = len(base), len(new)
    if n1 < 2 or n2 < 2:
        return None
    b, w = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    logs = bool((b > 0).all() and (w > 0).all() and base_median > 0)
    if logs:
        b, w = np.log(b), np.log(w)
    df = n1 + n2 - 2
    pooled = ((n1 - 1) * b.var(ddof=1) + (n2 - 1) * w.var(ddof=1)) / df
    se = math.sqrt(max(pooled, 0.0) * (1 / n1 + 1 / n2))
    d = float(w.mean() - b.mean())
    lo = d - float(stats.t.ppf(1 - alpha_lo, df)) * se if alpha_lo > 0 else -math.inf
    hi = d + float(stats.t.ppf(1 - alpha_hi, df)) * se if alpha_hi > 0 else math.inf

    def seconds(x: float) -> float:
        if not logs:
            return x
        return base_median * math.expm1(x) if math.isfinite(x) else (
            math.inf if x > 0 else -base_median)

    return Interval(seconds(d), seconds(lo), seconds(hi), alpha_lo, alpha_hi,
                    "log" if logs else "seconds", df)
