"""The verdict on each cell and metric of two runs, and where each phase's change went.

Per metric, the change of the median over rounds (``median_of_rounds``), the margin (the
larger of ``--threshold`` x the base median and ``--noise-floor-s``) and the interval of the
change at the levels of ``analysis.bounds`` (which states the rule and why); a status per
metric from where the interval lies against the margin, and per cell for rounds failed,
skipped or missing on a side, or checks failed. A two-sided Mann-Whitney p (exact up to
``EXACT_MAX_ARRANGEMENTS``, Holm-adjusted over the comparison) is shown beside it, never
decided on. ``analysis.verdict`` turns the statuses into one verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analysis.bounds import Look, regression_share
from analysis.metrics import (
    NO_SUBPHASE,
    RESIDUAL,
    TOTAL,
    cell_of_boot,
    median_of_rounds,
    median_of_values,
    metric_values,
)
from document.boot_result import PHASE_BY_NAME, PHASE_NAMES, BootResult

__all__ = ["BOUNDED", "EXACT_MAX_ARRANGEMENTS", "FAILING", "INCONCLUSIVE", "MISSING", "POSSIBLE",
           "CellChange", "DetailChange", "compare_results", "detail_changes",
           "failing_changes", "holm_adjusted", "metric_change",
           "min_two_sided_p", "where_changes_went"]


@dataclass
class CellChange:
    """One cell's metric in two runs: the medians, the change, the margin, the interval of the
    change and the status it earns (``analysis.bounds`` states the rule)."""

    cell: str
    metric: str
    base_median_s: float | None
    new_median_s: float | None
    change_s: float | None
    change_rel: float | None
    margin_s: float
    n_base: int
    n_new: int
    p_value: float | None
    min_attainable_p: float | None
    significant: bool
    status: str  # regression, improvement, no change, possible regression, not bounded,
    #              within noise, failed in new, failures grew, fixed in new, only in base,
    #              only in new, not measured in new, not measured, skips grew, metric lost,
    #              checks failed, not judged (a metric of a cell that failed its checks)
    note: str = ""
    # Holm's adjusted Mann-Whitney p over every test of the comparison (``family`` of them):
    # shown beside the interval, never what the verdict is decided on.
    p_value_adjusted: float | None = None
    family: int = 1
    # The interval of the change in seconds (``analysis.bounds.change_interval``): its
    # estimate and ends, each end a one-sided bound at its level; None without one.
    estimate_s: float | None = None
    interval_lo_s: float | None = None
    interval_hi_s: float | None = None
    alpha_lo: float | None = None
    alpha_hi: float | None = None
    interval_scale: str | None = None
    # The total gates a pass; a phase gates regressions only (analysis.bounds).
    gated: bool = False
    look: int | None = None  # rounds a side at the look that judged it

    @property
    def p_adjusted(self) -> float | None:
        return self.p_value_adjusted


# The three kinds of status (analysis.verdict decides from them): a regression fails the
# gate; an inconclusive one leaves it undecided unless the user accepts it (MISSING ones
# with --allow-missing, POSSIBLE ones fail instead with --strict); every other is judged
# and passes.
FAILING = frozenset({"regression", "failed in new", "failures grew"})
MISSING = frozenset({"only in base", "only in new", "not measured in new", "not measured",
                     "skips grew", "metric lost"})
POSSIBLE = frozenset({"possible regression"})
INCONCLUSIVE = MISSING | POSSIBLE | {"checks failed", "not bounded"}
# A metric whose interval ends on both sides of nothing the verdict needs: a phase whose
# estimate is inside its margin (phases are not gated for a pass) or a bounded change.
BOUNDED = frozenset({"no change", "improvement"})

# Up to this many arrangements of the rounds (C(n1 + n2, n1); 8 vs 8 rounds: 12870) the
# Mann-Whitney p is computed exactly by enumerating them (ties handled exactly); 10 vs 10
# (184756) takes over a second per metric. Beyond it the smallest attainable p is below
# 1e-4, far from any alpha, and scipy's default (exact without ties, else the tie-corrected
# normal approximation) is close enough.
EXACT_MAX_ARRANGEMENTS = 20_000


def min_two_sided_p(n1: int, n2: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney test of n1 vs n2 rounds can give."""
    # The most extreme arrangement: 2 / C(n1 + n2, n1). Ties across the two sides can only
    # raise the smallest p, never lower it.
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def _mann_whitney_p(new: list[float], base: list[float]) -> float:
    """Two-sided Mann-Whitney p, exact (ties included) for the round counts a gate runs."""
    from scipy import stats

    if len(set(base) | set(new)) == 1:
        return 1.0
    if math.comb(len(base) + len(new), len(base)) <= EXACT_MAX_ARRANGEMENTS:
        # n_resamples=inf: every distinct arrangement is enumerated, a deterministic exact p.
        method: Any = stats.PermutationMethod(n_resamples=math.inf)
    else:
        method = "auto"
    p = float(stats.mannwhitneyu(new, base, alternative="two-sided", method=method).pvalue)
    # No arrangement of the rounds can give less; an approximation must not claim less.
    return max(p, min_two_sided_p(len(base), len(new)))


def holm_adjusted(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (S. Holm, *Scand. J. Statist.* 6, 1979), by
    statsmodels."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(p_values, method="holm")[1]]


def _round_test(base: list[float], new: list[float]) -> float | None:
    return _mann_whitney_p(new, base) if len(base) >= 2 and len(new) >= 2 else None


def _pct(x: float) -> str:
    return f"{100 * x:+.1f} %"


def metric_change(cell: str, metric: str, base: list[float], new: list[float], *,
                  threshold: float, floor_s: float, alpha: float, gated: bool | None = None,
                  alpha_lo: float | None = None, alpha_hi: float | None = None,
                  family: int = 1, p_value: float | None = None,
                  p_adjusted: float | None = None, look: int | None = None) -> CellChange:
    """The verdict on one metric of one cell from both sides' round values (none empty).

    ``gated``: the metric gates a pass (a cell's total; the default for ``TOTAL``);
    ``alpha_lo`` / ``alpha_hi``: the one-sided levels of the interval's lower and upper end
    (``analysis.bounds``; alone, both ``alpha``). ``p_value`` / ``p_adjusted``: the
    Mann-Whitney p shown beside it, where the caller computed it already."""
    from analysis.bounds import change_interval, margin_s

    gated = metric == TOTAL if gated is None else gated
    alpha_lo = alpha if alpha_lo is None else alpha_lo
    alpha_hi = alpha if alpha_hi is None else alpha_hi
    mb, mn = median_of_values(base), median_of_values(new)
    change = mn - mb
    rel = change / mb if mb > 0 else (math.inf if change > 0 else 0.0)
    margin = margin_s(mb, threshold, floor_s)
    p = p_value if p_value is not None else _round_test(base, new)
    if p is not None and p_adjusted is None and family == 1:
        p_adjusted = p
    min_p = min_two_sided_p(len(base), len(new)) if p is not None else None
    iv = change_interval(base, new, alpha_lo=alpha_lo, alpha_hi=alpha_hi, base_median=mb)
    estimate = iv.estimate_s if iv is not None else change
    levels = (f" (one-sided levels {alpha_lo:.2g} / {alpha_hi:.2g})" if iv is not None else "")
    if iv is None:
        status = ("possible regression" if estimate > margin else
                  "not bounded" if gated else "within noise")
        note = (f"{len(base)} vs {len(new)} rounds: no interval with one round on a side, "
                "never a pass")
    elif iv.lo_s > margin:
        status = "regression"
        note = (f"confirmed beyond the margin: the interval's lower end {iv.lo_s:+.2f} s is "
                f"above the margin +{margin:.2f} s{levels}")
    elif iv.hi_s < -margin:
        status, note = "improvement", f"confirmed faster: upper end {iv.hi_s:+.2f} s"
    elif iv.hi_s <= margin:
        status = "no change"
        note = (f"bounded: upper end {iv.hi_s:+.2f} s within the margin +{margin:.2f} s")
    elif estimate > margin:
        status = "possible regression"
        note = (f"estimate {estimate:+.2f} s beyond the margin +{margin:.2f} s, not confirmed: "
                f"the lower end {iv.lo_s:+.2f} s is not above it{levels}; more rounds can "
                "decide")
    else:
        status = "not bounded" if gated else "within noise"
        note = (f"upper end {iv.hi_s:+.2f} s beyond the margin +{margin:.2f} s{levels}"
                + ("; more rounds can bound it" if gated else
                   "; a phase gates regressions only, the total gates the pass"))
    significant = status in ("regression", "improvement")
    return CellChange(cell, metric, mb, mn, change, rel, margin, len(base), len(new), p, min_p,
                      significant, status, note, p_adjusted, family,
                      None if iv is None else iv.estimate_s, None if iv is None else iv.lo_s,
                      None if iv is None else iv.hi_s, alpha_lo if iv else None,
                      alpha_hi if iv else None, None if iv is None else iv.scale, gated, look)


def _share(boots: list[BootResult], state: str) -> tuple[int, float]:
    count = sum(b.state == state for b in boots)
    return count, count / len(boots) if boots else 0.0


def compare_results(base: list[BootResult], new: list[BootResult], *, threshold: float = 0.10,
                    floor_s: float = 0.05, alpha: float = 0.05,
                    checks_failed: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {}),
                    looks: Mapping[str, Look] | None = None, cells: int | None = None,
                    ) -> list[CellChange]:
    """Every cell and metric of two runs, with its change, noise floor and test.

    ``base`` and ``new`` hold every round (``read_results(..., all_rounds=True)``);
    ``checks_failed`` each side's failed checks by cell id. Besides one entry per cell and
    metric, a cell gets a ``failures`` entry when its share of failed rounds grew, and a
    ``total`` entry with a status but no times when one side has no measured round (``only
    in base``, ``failed in new``, ...) or a side's cell failed its checks (``checks failed``:
    its seconds are not evidence). Each metric's interval is taken at the levels
    ``analysis.bounds`` gives: ``looks`` holds a sequential gate's last look at each cell
    (else one look of a fixed design), ``cells`` the number of cells the regression side's
    alpha is split over (else the cells tested here). The Mann-Whitney p shown beside it is
    Holm-adjusted over every test.
    """
    def by_cell(boots: list[BootResult]) -> dict[str, list[BootResult]]:
        out: dict[str, list[BootResult]] = {}
        for b in boots:
            out.setdefault(cell_of_boot(b), []).append(b)
        return out

    cells_base, cells_new = by_cell(base), by_cell(new)
    changes: list[CellChange] = []
    tests: list[tuple[str, str, list[float], list[float], float | None]] = []
    for cell in sorted(set(cells_base) | set(cells_new)):
        b_all, n_all = cells_base.get(cell, []), cells_new.get(cell, [])
        b_ok = [b for b in b_all if b.state == "measured"]
        n_ok = [b for b in n_all if b.state == "measured"]

        def flat(status: str, note: str = "", metric: str = TOTAL) -> CellChange:
            return CellChange(cell, metric, None, None, None, None, 0.0, len(b_ok), len(n_ok),
                              None, None, False, status, note)

        if not b_all:
            changes.append(flat("only in new", "NEW measured it, BASE has no boot of it"
                                if n_ok else "in NEW only, and never measured there"))
            continue
        if not n_all:
            changes.append(flat("only in base", "BASE measured it, NEW has no boot of it"
                                if b_ok else "in BASE only, and never measured there"))
            continue
        errors = "; ".join(sorted({b.error for b in n_all if b.error}))[:200]
        if b_ok and not n_ok:
            if any(b.state == "failed" for b in n_all):
                changes.append(flat("failed in new", errors))
            else:  # every NEW round skipped (a page-cache state not reached): not measured
                reasons = "; ".join(sorted({b.skip_reason for b in n_all if b.skip_reason}))
                changes.append(flat("not measured in new", reasons[:200]))
            continue
        # Some rounds failing where fewer (or none) failed before is a regression even when
        # the rounds that did boot are as fast: a flaky start-up is worse than a slow one.
        (fb, rb), (fn, rn) = _share(b_all, "failed"), _share(n_all, "failed")
        if rn > rb:
            changes.append(flat("failures grew", f"failed rounds: base {fb}/{len(b_all)}, "
                                f"new {fn}/{len(n_all)}" + (f": {errors}" if errors else ""),
                                metric="failures"))
        # Rounds skipped (a page-cache state not reached) are rounds not measured: fewer of
        # them in NEW is a weaker comparison the gate must not pass without a word.
        (sb, qb), (sn, qn) = _share(b_all, "skipped"), _share(n_all, "skipped")
        if qn > qb:
            reasons = "; ".join(sorted({b.skip_reason for b in n_all if b.skip_reason}))
            changes.append(flat("skips grew", f"skipped rounds: base {sb}/{len(b_all)}, new "
                                f"{sn}/{len(n_all)}" + (f": {reasons[:200]}" if reasons else ""),
                                metric="skips"))
        if n_ok and not b_ok:
            changes.append(flat("fixed in new"))
            continue
        if not b_ok:
            changes.append(flat("not measured", "no round measured on either side"))
            continue
        failed_checks = [f"{side}: {check}" for side, by in zip(("base", "new"), checks_failed)
                         for check in by.get(cell, [])]
        if failed_checks:
            # A boot that failed its checks (page cache not evicted, probes that found
            # nothing) measured something else than its cell: no evidence either way. Its
            # seconds are still shown, outside the family of tests, as "not judged".
            changes.append(flat("checks failed", "; ".join(failed_checks)[:300],
                                metric="checks"))
        wall = all(b.wall_s is not None for b in b_ok + n_ok)
        for metric in (*PHASE_NAMES, TOTAL):
            bv, nv = metric_values(b_ok, metric, wall), metric_values(n_ok, metric, wall)
            if bv and not nv:  # BASE measured it, no NEW round did (or only NaN/inf)
                changes.append(flat("metric lost", f"{metric}: measured in BASE, in no "
                                    "measured round of NEW", metric=metric))
                continue
            if bv and nv and failed_checks:
                shown = metric_change(cell, metric, bv, nv, threshold=threshold,
                                      floor_s=floor_s, alpha=alpha)
                if shown.status != "no change":
                    shown.note = f"not judged (checks failed on a side): {shown.status}"
                    shown.status, shown.significant = "not judged", False
                changes.append(shown)
            elif bv and nv:
                tests.append((cell, metric, bv, nv, _round_test(bv, nv)))
    family = sum(p is not None for *_, p in tests)
    adjusted = iter(holm_adjusted([p for *_, p in tests if p is not None]))
    n_cells = cells or len({cell for cell, *_ in tests})
    phases_in = {cell: sum(c == cell and m != TOTAL for c, m, *_ in tests)
                 for cell, *_ in tests}
    for cell, metric, bv, nv, p in tests:
        look = (looks or {}).get(cell) or Look(min(len(bv), len(nv)))
        at = look.alpha(alpha)
        changes.append(metric_change(
            cell, metric, bv, nv, threshold=threshold, floor_s=floor_s, alpha=alpha,
            alpha_hi=at, alpha_lo=at * regression_share(metric == TOTAL, phases_in[cell],
                                                        n_cells),
            family=max(family, 1), p_value=p, p_adjusted=None if p is None else next(adjusted),
            look=min(len(bv), len(nv))))
    order = {cell: i for i, cell in enumerate(sorted(set(cells_base) | set(cells_new)))}
    metric_order = {m: i for i, m in enumerate(("failures", "skips", "checks", *PHASE_NAMES,
                                                TOTAL))}
    changes.sort(key=lambda c: (order[c.cell], metric_order.get(c.metric, 99)))
    return changes


@dataclass
class DetailChange:
    """Where a phase's change went: one sub-phase, the phase's part in no sub-phase, or the
    residual (``phase`` None), each the change of its median over rounds. Never gated."""

    cell: str
    phase: str | None
    part: str  # a sub-phase's own name, NO_SUBPHASE or RESIDUAL
    base_median_s: float
    new_median_s: float
    change_s: float


def detail_changes(base: list[BootResult], new: list[BootResult]) -> list[DetailChange]:
    """Per cell measured on both sides: each phase's sub-phases and its part in no sub-phase
    (where the sub-phases do not overlap), then the residual, with their changes."""
    sides: dict[str, tuple[list[BootResult], list[BootResult]]] = {}
    for i, boots in enumerate((base, new)):
        for b in boots:
            if b.state == "measured":
                sides.setdefault(cell_of_boot(b), ([], []))[i].append(b)
    out = []
    for cell in sorted(sides):
        b_ok, n_ok = sides[cell]
        if not b_ok or not n_ok:
            continue
        for phase in PHASE_NAMES:
            parts = [f"{phase}.{s}" for s in PHASE_BY_NAME[phase].subphases]
            rest = f"{phase}.{NO_SUBPHASE}"
            # The remainder only where every round of both sides has one.
            whole = all(len(metric_values(ok, rest, False)) == sum(
                b.phases.get(phase) is not None and any(
                    k.split(".")[0] == phase and v is not None for k, v in b.subphases.items())
                for b in ok) for ok in (b_ok, n_ok))
            for metric in (*parts, *([rest] if whole else [])):
                mb, mn = median_of_rounds(b_ok, metric), median_of_rounds(n_ok, metric)
                if mb is not None and mn is not None:
                    out.append(DetailChange(cell, phase, metric.split(".", 1)[1], mb, mn,
                                            mn - mb))
        mb, mn = median_of_rounds(b_ok, RESIDUAL), median_of_rounds(n_ok, RESIDUAL)
        if mb is not None and mn is not None:
            out.append(DetailChange(cell, None, RESIDUAL, mb, mn, mn - mb))
    return out


def where_changes_went(changes: list[CellChange], details: list[DetailChange]
                       ) -> dict[tuple[str, str], str]:
    """(cell, phase) -> one line for each phase whose verdict is a change: its sub-phases'
    changes and how much of it is in no sub-phase ("+0.88 s of +0.90 s is in no
    sub-phase"), or that its sub-phases overlap and leave no remainder to state."""
    out = {}
    for c in changes:
        if c.metric not in PHASE_NAMES or c.change_s is None or c.status == "no change" \
                or not PHASE_BY_NAME[c.metric].subphases:
            continue
        mine = [d for d in details if d.cell == c.cell and d.phase == c.metric]
        subs = [d for d in mine if d.part != NO_SUBPHASE]
        rest = next((d for d in mine if d.part == NO_SUBPHASE), None)
        line = f"{c.metric} {c.change_s:+.2f} s"
        if subs:
            line += ": sub-phases " + ", ".join(f"{d.part} {d.change_s:+.2f}" for d in subs)
        if rest is None:
            line += ("; its sub-phases overlap (stretches of several processes), so how much "
                     "of it is in none is not known" if subs else ": no sub-phase measured")
        else:
            mostly = abs(rest.change_s) > abs(c.change_s) / 2
            line += (f"; {rest.change_s:+.2f} s of {c.change_s:+.2f} s is in no sub-phase"
                     + (" (most of the change)" if mostly else ""))
        out[(c.cell, c.metric)] = line
    return out


def failing_changes(changes: list[CellChange], *, strict: bool = False,
                    allow_missing: bool = False) -> list[CellChange]:
    """The changes that are regressions (``--strict``: possible ones too); the verdict's
    other half, what leaves it inconclusive, is ``analysis.verdict.judge``'s."""
    del allow_missing  # what is missing leaves the verdict inconclusive, never a regression
    failing = FAILING | (POSSIBLE if strict else set())
    return [c for c in changes if c.status in failing]
