"""Compare two result documents phase by phase; exit 1 on a regression (the CI gate).

    python -m analysis.compare BASE.json NEW.json [--threshold 0.10] [--noise-floor-s 0.05]
        [--alpha 0.05] [--force] [--strict] [--allow-missing] [--json FILE] [--all]

Cells are matched by (model, platform, loader, compile_cache, page_cache, entrypoint); the vLLM
version is what is under test, so it is reported, never matched on. For every cell and every
phase (and the total: the wall time when both sides have it, else the sum of the phases):

- the change of the median over rounds, absolute and relative: per metric, the median of
  the measured rounds' values (``median_of_rounds``, the one median every page shows:
  ``analysis.report``'s run page states the same per cell; the median *round*, the boot of
  median wall time that a run keeps as its headline, is a boot, not this statistic);
- a noise floor: the larger of ``--noise-floor-s`` and the interquartile range of either side
  (``scipy.stats.iqr``); a change inside it is noise;
- a two-sided Mann-Whitney U test of the rounds (``scipy.stats.mannwhitneyu``; H. B. Mann and
  D. R. Whitney, *Ann. Math. Statist.* 18, 1947) where both sides have at least two rounds.
  Its p is exact (every arrangement of the rounds enumerated, ties included) up to
  ``EXACT_MAX_ARRANGEMENTS``; scipy's default would use the normal approximation as soon as
  two rounds tie, which gives p below what the rounds can attain (3 vs 3 tied rounds: 0.047
  where the exact p is 0.10). One round per side is never called significant; with few
  rounds the test cannot reach ``--alpha`` at all (at 0.05 it needs 4 rounds a side, or 3
  against 5): such a change is never significant, and the report says so.

A regression is slower by more than ``--threshold`` (relative) and more than the noise floor,
and significant. These fail the gate too: a cell measured in BASE that failed in NEW; a cell
whose share of failed rounds grew (``failures grew``); a cell of BASE that NEW lacks or never
measured (``only in base``, ``not measured in new``), whose share of skipped rounds grew
(``skips grew``), or a phase or total BASE measured and no measured round of NEW has
(``metric lost``; ``--allow-missing`` lets these four pass).
Slower beyond threshold and floor but without a significant test is reported as "possible
regression"; ``--strict`` fails on those as well (what a one-round CI run must use).

Beneath the verdicts, where each phase's change went (``detail_changes``, never gated): each
sub-phase's change, the change of the part of the phase in no sub-phase (per round, the phase
less its sub-phases, where they do not overlap), and the residual's; a phase that changed is
summed up in one line (``where_changes_went``: "model_loading +0.90 s: +0.88 s of it is in no
sub-phase").

Two runs must share a cell: runs with none in common (two different matrices) are refused
(exit 2); with cells only on one side, one warning line says how many.

The run's checked metadata (``machine_info``: CPU model, core count, OS and machine, GPU
model, and the boots' platform) must agree; otherwise the comparison is refused (exit 2)
unless ``--force``. A merge of shards (``analysis.merge``) is checked cell by cell: each
cell's machine against the machine the same cell ran on in the other run. A document without any boot is refused (exit 2).
Exit codes: 0 no regression, 1 regression, 2 bad input or refused comparison.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis._cli import ArgumentParser, InputError, run_cli
from analysis.dataset import cell_identities, machine_differences, machine_identity
from harness.schema import PHASE_BY_NAME, PHASE_NAMES, BootResult, SchemaError, read_results

__all__ = ["CellChange", "DetailChange", "Prepared", "compare_results", "detail_changes",
           "failing_changes", "main", "median_of_rounds", "prepare", "where_changes_went"]

TOTAL = "total"
RESIDUAL = "residual"
# The part of a phase its sub-phases do not cover, per round: the phase less its sub-phases.
NO_SUBPHASE = "in no sub-phase"
# framework_bootstrap's sub-phases are stretches of different processes and nested calls
# (model_inspection inside engine_config: harness.timeline.cut_phases), not a partition: the
# phase less their sum means nothing. The other phases' sub-phases are one process's calls in
# sequence; a round whose sub-phases still sum to more than the phase (by more than this)
# leaves its cell without a remainder.
OVERLAPPING_SUBPHASES = frozenset({"framework_bootstrap"})
OVERLAP_TOLERANCE_S = 0.005
CELL_FIELDS = ("model", "platform", "loader", "compile_cache", "page_cache", "entrypoint")


@dataclass
class CellChange:
    cell: str
    metric: str
    base_median_s: float | None
    new_median_s: float | None
    change_s: float | None
    change_rel: float | None
    noise_floor_s: float
    n_base: int
    n_new: int
    p_value: float | None
    min_attainable_p: float | None
    significant: bool
    status: str  # regression, improvement, possible regression, possible improvement,
    #              no change, failed in new, failures grew, fixed in new, only in base,
    #              not measured in new, skips grew, metric lost, only in new
    note: str = ""


# Statuses that fail the gate; MISSING ones unless --allow-missing, POSSIBLE with --strict.
FAILING = frozenset({"regression", "failed in new", "failures grew"})
MISSING = frozenset({"only in base", "not measured in new", "skips grew", "metric lost"})
POSSIBLE = frozenset({"possible regression"})

# Up to this many arrangements of the rounds (C(n1 + n2, n1); 8 vs 8 rounds: 12870) the
# Mann-Whitney p is computed exactly by enumerating them (ties handled exactly); 10 vs 10
# (184756) takes over a second per metric. Beyond it the smallest attainable p is below
# 1e-4, far from any alpha, and scipy's default (exact without ties, else the tie-corrected
# normal approximation) is close enough.
EXACT_MAX_ARRANGEMENTS = 20_000


def _versions(doc: dict[str, Any], boots: list[BootResult]) -> str:
    found = sorted({b.vllm_version for b in boots if b.vllm_version})
    if not found and isinstance(doc, dict):
        info = doc.get("machine_info") or {}
        v = info.get("vllm_version") or (info.get("coldstart") or {}).get("vllm")
        found = [v] if v else []
    return ", ".join(found) or "unknown"


# ------------------------------------------------------------------------------ values
def _cell(b: BootResult) -> str:
    return _cell_of({f: getattr(b, f) for f in CELL_FIELDS} | {"axes": b.axes})


def _cell_of(fields: dict[str, Any]) -> str:
    """The cell a result is of: its fields, then the matrix's extra axes (engine arguments,
    variables) as the cell id has them."""
    parts = [f"{f}={fields[f]}" for f in CELL_FIELDS if fields.get(f) is not None]
    parts += [f"{k}={v}" for k, v in (fields.get("axes") or {}).items()]
    return "-".join(parts)


def _no_subphase(b: BootResult, phase: str) -> float | None:
    """The seconds of ``phase`` in none of its sub-phases, in one round; None where the phase
    has no sub-phase measured or its sub-phases overlap (sum to more than the phase)."""
    value = b.phases.get(phase)
    subs = [v for k, v in b.subphases.items() if k.split(".")[0] == phase and v is not None]
    if value is None or not subs or phase in OVERLAPPING_SUBPHASES:
        return None
    rest = value - sum(subs)
    return None if rest < -OVERLAP_TOLERANCE_S else max(rest, 0.0)


def _metric_values(boots: list[BootResult], metric: str, total_from_wall: bool) -> list[float]:
    """Each round's value of ``metric``: a phase, ``TOTAL``, ``RESIDUAL``, a sub-phase
    (``phase.sub``) or a phase's remainder (``phase.`` + ``NO_SUBPHASE``)."""
    out = []
    for b in boots:
        if metric == TOTAL:
            if total_from_wall:
                v = b.wall_s
            else:
                present = [x for x in b.phases.values() if x is not None]
                v = sum(present) if present else None
        elif metric == RESIDUAL:
            v = b.residual_s
        elif metric.endswith(f".{NO_SUBPHASE}"):
            v = _no_subphase(b, metric.split(".")[0])
        elif "." in metric:
            v = b.subphases.get(metric)
        else:
            v = b.phases.get(metric)
        if v is not None and math.isfinite(v):
            out.append(float(v))
    return out


def median_of_rounds(boots: list[BootResult], metric: str) -> float | None:
    """The median of ``metric`` over the measured rounds of one cell (None if none has it).

    The one median of a metric every page states: ``analysis.compare``'s base and new
    columns, and ``analysis.report``'s run page. The total is the wall time when every
    measured round has one, else the sum of the phases.
    """
    rounds = [b for b in boots if b.state == "measured"]
    return _median(_metric_values(rounds, metric, all(b.wall_s is not None for b in rounds)))


def _median(values: list[float]) -> float | None:
    # The median of a metric's round values: the middle one, or the mean of the two middle
    # ones (an even count); symmetric, so a drift that ABBA order splits evenly cancels.
    return statistics.median(values) if values else None


def _min_two_sided_p(n1: int, n2: int) -> float:
    # The most extreme arrangement of an exact Mann-Whitney test: 2 / C(n1 + n2, n1). Ties
    # across the two sides can only raise the smallest p, never lower it.
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
    return max(p, _min_two_sided_p(len(base), len(new)))


def _change(cell: str, metric: str, base: list[float], new: list[float], *, threshold: float,
            floor_s: float, alpha: float) -> CellChange:
    from scipy import stats

    mb, mn = _median(base), _median(new)
    change = mn - mb
    rel = change / mb if mb > 0 else (math.inf if change > 0 else 0.0)
    spread = max((float(stats.iqr(v)) for v in (base, new) if len(v) >= 2), default=0.0)
    noise = max(floor_s, spread)
    p = min_p = None
    significant = False
    note = ""
    if len(base) >= 2 and len(new) >= 2:
        min_p = _min_two_sided_p(len(base), len(new))
        p = _mann_whitney_p(new, base)
        significant = p < alpha and min_p < alpha
        if min_p >= alpha:
            note = (f"{len(base)} vs {len(new)} rounds: the test cannot reach p < {alpha} "
                    f"(smallest possible p {min_p:.2f}); --strict fails on the change instead")
    else:
        note = "one round on a side: no test; never called significant"
    beyond = abs(change) > noise and abs(rel) > threshold
    if not beyond:
        status = "no change"
    elif change > 0:
        status = "regression" if significant else "possible regression"
    else:
        status = "improvement" if significant else "possible improvement"
    return CellChange(cell, metric, mb, mn, change, rel, noise, len(base), len(new), p, min_p,
                      significant, status, note)


def _share(boots: list[BootResult], state: str) -> tuple[int, float]:
    count = sum(b.state == state for b in boots)
    return count, count / len(boots) if boots else 0.0


def compare_results(base: list[BootResult], new: list[BootResult], *, threshold: float = 0.10,
                    floor_s: float = 0.05, alpha: float = 0.05) -> list[CellChange]:
    """Every cell and metric of two runs, with its change, noise floor and test.

    ``base`` and ``new`` hold every round (``read_results(..., all_rounds=True)``). Besides
    one entry per cell and metric, a cell gets a ``failures`` entry when its share of failed
    rounds grew, and a ``total`` entry with a status but no times when one side has no
    measured round (``only in base``, ``failed in new``, ...).
    """
    def by_cell(boots: list[BootResult]) -> dict[str, list[BootResult]]:
        out: dict[str, list[BootResult]] = {}
        for b in boots:
            out.setdefault(_cell(b), []).append(b)
        return out

    cells_base, cells_new = by_cell(base), by_cell(new)
    changes = []
    for cell in sorted(set(cells_base) | set(cells_new)):
        b_all, n_all = cells_base.get(cell, []), cells_new.get(cell, [])
        b_ok = [b for b in b_all if b.state == "measured"]
        n_ok = [b for b in n_all if b.state == "measured"]

        def flat(status: str, note: str = "", metric: str = TOTAL) -> CellChange:
            return CellChange(cell, metric, None, None, None, None, 0.0, len(b_ok), len(n_ok),
                              None, None, False, status, note)

        if not b_all:
            changes.append(flat("only in new"))
            continue
        if not n_all:
            if b_ok:
                changes.append(flat("only in base", "BASE measured it, NEW has no boot of it"))
            else:  # nothing was lost: BASE never measured it either
                changes.append(flat("no change", "never measured in BASE, absent from NEW"))
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
            changes.append(flat("no change", "no round measured on either side"))
            continue
        wall = all(b.wall_s is not None for b in b_ok + n_ok)
        for metric in (*PHASE_NAMES, TOTAL):
            bv, nv = _metric_values(b_ok, metric, wall), _metric_values(n_ok, metric, wall)
            if bv and not nv:  # BASE measured it, no NEW round did (or only NaN/inf)
                changes.append(flat("metric lost", f"{metric}: measured in BASE, in no "
                                    "measured round of NEW", metric=metric))
                continue
            if not bv or not nv:
                continue
            changes.append(_change(cell, metric, bv, nv, threshold=threshold, floor_s=floor_s,
                                   alpha=alpha))
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
                sides.setdefault(_cell(b), ([], []))[i].append(b)
    out = []
    for cell in sorted(sides):
        b_ok, n_ok = sides[cell]
        if not b_ok or not n_ok:
            continue
        for phase in PHASE_NAMES:
            parts = [f"{phase}.{s}" for s in PHASE_BY_NAME[phase].subphases]
            rest = f"{phase}.{NO_SUBPHASE}"
            # The remainder only where every round of both sides has one.
            whole = all(len(_metric_values(ok, rest, False)) == sum(
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
    """The changes that fail the gate (see the module docstring)."""
    failing = FAILING | (set() if allow_missing else MISSING) | (POSSIBLE if strict else set())
    return [c for c in changes if c.status in failing]


def _load(path: str) -> tuple[dict[str, Any], list[BootResult]]:
    boots = read_results(path, all_rounds=True)  # raises SchemaError on a bad file
    if not boots:
        # An empty run must not pass the gate as "nothing changed".
        raise SchemaError(f"{path}: holds no boot (no benchmarks, nothing unrecorded): "
                          "nothing to compare")
    doc = json.loads(Path(path).read_text())
    return (doc if isinstance(doc, dict) else {}), boots


def _cell_machines(doc: dict[str, Any], boots: list[BootResult]) -> dict[str, dict[str, Any]]:
    """Each cell's machine identity: its own in a merge of shards, else the document's."""
    cells = cell_identities(doc)
    if not cells:
        ident = machine_identity(doc, boots)
        return {_cell(b): ident for b in boots}
    return {_cell_of(fields): ident for fields, ident in cells}


def _cell_machine_differences(base: dict[str, dict[str, Any]],
                              new: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    out: dict[str, tuple[Any, Any]] = {}
    for cell in base.keys() & new.keys():
        for k, v in machine_differences(base[cell], new[cell]).items():
            out.setdefault(k, v)
    return out


def cell_overlap(base: list[BootResult], new: list[BootResult], base_name: str,
                 new_name: str) -> str | None:
    """Refuse two runs with no cell in common (SchemaError); a warning line where some cells
    are on one side only, else None."""
    cells_base, cells_new = {_cell(b) for b in base}, {_cell(b) for b in new}
    common = cells_base & cells_new
    only_base, only_new = len(cells_base - common), len(cells_new - common)
    if not common:
        raise SchemaError(f"{base_name} ({len(cells_base)} cells) and {new_name} "
                          f"({len(cells_new)} cells) have no cell in common: runs of different "
                          "matrices, nothing to compare")
    if only_base or only_new:
        return (f"{only_base} cell(s) only in base, {only_new} only in new: compared on the "
                f"{len(common)} cell(s) in common")
    return None


@dataclass
class Prepared:
    """Two runs read and checked as the gate reads them (``prepare``)."""

    base_doc: dict[str, Any]
    base: list[BootResult]
    new_doc: dict[str, Any]
    new: list[BootResult]
    meta_base: dict[str, Any]
    meta_new: dict[str, Any]
    disagree: dict[str, tuple[Any, Any]]
    unchecked: list[str]
    overlap_warning: str | None


def prepare(base_path: str, new_path: str, *, force: bool = False) -> Prepared:
    """Read both runs; refuse (SchemaError) an empty run, runs whose checked metadata differ
    (unless ``force``) and runs with no cell in common. What ``analysis.report`` uses too."""
    base_doc, base = _load(base_path)
    new_doc, new = _load(new_path)
    meta_base, meta_new = machine_identity(base_doc, base), machine_identity(new_doc, new)
    disagree = machine_differences(meta_base, meta_new)
    if cell_identities(base_doc) or cell_identities(new_doc):
        # A merge of shards: each cell against the machine the same cell ran on in the other.
        disagree = _cell_machine_differences(_cell_machines(base_doc, base),
                                             _cell_machines(new_doc, new))
    unchecked = [k for k in meta_base if meta_base[k] is None or meta_new[k] is None]
    if disagree and not force:
        what = "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in disagree.items())
        raise SchemaError(f"runs differ in checked metadata ({what}): not comparable; "
                          "--force to compare anyway")
    warning = cell_overlap(base, new, str(base_path), str(new_path))
    return Prepared(base_doc, base, new_doc, new, meta_base, meta_new, disagree, unchecked,
                    warning)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m analysis.compare",
                                     description="Compare two runs phase by phase.")
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--threshold", type=float, default=0.10,
                        help="relative change that counts (0.10 = 10 %%)")
    parser.add_argument("--noise-floor-s", type=float, default=0.05,
                        help="absolute change in seconds below which a change is noise")
    parser.add_argument("--alpha", type=float, default=0.05, help="test level")
    parser.add_argument("--force", action="store_true",
                        help="compare even when the checked metadata disagree")
    parser.add_argument("--strict", action="store_true",
                        help="also fail on possible regressions (beyond threshold, untested); "
                             "needed where the rounds cannot reach --alpha (one round a side)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="let cells of BASE that NEW lacks or never measured, more "
                             "skipped rounds and phases NEW lost pass")
    parser.add_argument("--all", action="store_true", help="list unchanged metrics too")
    parser.add_argument("--json", help="write every comparison as JSON here")
    args = parser.parse_args(argv)
    if not (math.isfinite(args.threshold) and math.isfinite(args.noise_floor_s)) \
            or args.threshold < 0 or args.noise_floor_s < 0 or not 0 < args.alpha < 1:
        # NaN compares false with everything: it would turn every change into "no change".
        raise InputError("--threshold and --noise-floor-s must be finite and >= 0, --alpha "
                         "in (0, 1)")

    run = prepare(args.base, args.new, force=args.force)
    base_doc, base, new_doc, new = run.base_doc, run.base, run.new_doc, run.new
    meta_base, meta_new, disagree, unchecked = (run.meta_base, run.meta_new, run.disagree,
                                                run.unchecked)
    if run.overlap_warning:
        print(f"analysis.compare: warning: {run.overlap_warning}", file=sys.stderr)

    changes = compare_results(base, new, threshold=args.threshold,
                              floor_s=args.noise_floor_s, alpha=args.alpha)
    failed = failing_changes(changes, strict=args.strict, allow_missing=args.allow_missing)
    details = detail_changes(base, new)
    went = where_changes_went(changes, details)

    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(f"vLLM {_versions(base_doc, base)} (base) -> {_versions(new_doc, new)} (new)")
    if disagree:
        console.print("[red]compared despite differing metadata (--force):[/red] "
                      + "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in disagree.items()))
    if unchecked:
        console.print("metadata not recorded on a side, unchecked: " + ", ".join(unchecked))
    table = Table(title_justify="left")
    for h in ("cell", "metric", "base median s", "new median s", "change", "noise s", "n",
              "p", "status"):
        table.add_column(h, overflow="fold")
    shown = [c for c in changes if args.all or c.status != "no change"]
    for c in shown:
        change = "-" if c.change_s is None else f"{c.change_s:+.2f} s ({100 * c.change_rel:+.1f} %)"
        table.add_row(c.cell, c.metric,
                      "-" if c.base_median_s is None else f"{c.base_median_s:.2f}",
                      "-" if c.new_median_s is None else f"{c.new_median_s:.2f}", change,
                      f"{c.noise_floor_s:.2f}", f"{c.n_base}/{c.n_new}",
                      "-" if c.p_value is None else f"{c.p_value:.3f}",
                      c.status + (f" ({c.note})" if c.note and c.status != "no change" else ""))
    if shown:
        console.print(table)
    for (cell, _), line in went.items():
        console.print(f"where it went: {cell}: {line}", soft_wrap=True, highlight=False,
                      markup=False)
    console.print(f"{len(changes)} comparisons, {sum(c.status == 'no change' for c in changes)} "
                  f"unchanged, {len(failed)} failing the gate")
    # Timed comparisons whose rounds cannot give p < alpha (one round a side: no test).
    untestable = sum(c.base_median_s is not None and (c.min_attainable_p is None
                                                      or c.min_attainable_p >= args.alpha)
                     for c in changes)
    if untestable and not args.strict:
        console.print(f"[yellow]{untestable} comparisons have too few rounds to reach p < "
                      f"{args.alpha}: a slowdown there can only fail the gate with "
                      "--strict[/yellow]")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "base": args.base, "new": args.new, "metadata": {"base": meta_base, "new": meta_new},
            "metadata_disagreement": {k: list(v) for k, v in disagree.items()},
            "vllm_version": {"base": _versions(base_doc, base), "new": _versions(new_doc, new)},
            "threshold": args.threshold, "noise_floor_s": args.noise_floor_s,
            "alpha": args.alpha, "strict": args.strict, "allow_missing": args.allow_missing,
            "changes": [asdict(c) for c in changes],
            "details": [asdict(d) for d in details],
            "where_changes_went": [{"cell": k[0], "phase": k[1], "line": v}
                                   for k, v in went.items()],
            "failing": len(failed)}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_cli("analysis.compare", main))
