"""Compare two result documents phase by phase; exit 1 on a regression (the CI gate).

    python -m analysis.compare BASE.json NEW.json [--threshold 0.10] [--noise-floor-s 0.05]
        [--alpha 0.05] [--force] [--strict] [--json FILE] [--all]

Cells are matched by (model, platform, loader, compile_cache, page_cache, entrypoint); the vLLM
version is what is under test, so it is reported, never matched on. For every cell and every
phase (and the total: the wall time when both sides have it, else the sum of the phases):

- the change of the median over rounds, absolute and relative;
- a noise floor: the larger of ``--noise-floor-s`` and the interquartile range of either side
  (``scipy.stats.iqr``); a change inside it is noise;
- a two-sided Mann-Whitney U test of the rounds (``scipy.stats.mannwhitneyu``; H. B. Mann and
  D. R. Whitney, *Ann. Math. Statist.* 18, 1947) where both sides have at least two rounds.
  One round per side is never called significant; with very few rounds the test cannot reach
  ``--alpha`` at all (two rounds a side: p >= 1/3), and the report says so.

A regression is slower by more than ``--threshold`` (relative) and more than the noise floor,
and significant. A cell measured in BASE that failed in NEW is a regression too. Slower beyond
threshold and floor but without a significant test is reported as "possible regression";
``--strict`` fails on those as well.

The run's checked metadata (``machine_info``: CPU model, core count, OS and machine, GPU
model, and the boots' platform) must agree; otherwise the comparison is refused (exit 2)
unless ``--force``.
Exit codes: 0 no regression, 1 regression, 2 bad input or refused comparison.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis._cli import InputError, run_cli
from harness.schema import PHASE_NAMES, BootResult, SchemaError, read_results

__all__ = ["CellChange", "checked_metadata", "compare_results", "main"]

TOTAL = "total"
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
    #              no change, failed in new, fixed in new, only in base, only in new
    note: str = ""


# ---------------------------------------------------------------------------- metadata
def _cpu(info: dict[str, Any]) -> tuple[Any, Any]:
    cpu = info.get("cpu")
    if isinstance(cpu, dict):
        return cpu.get("brand_raw") or cpu.get("brand"), cpu.get("count")
    return cpu, info.get("cpu_count")


def checked_metadata(doc: dict[str, Any], boots: list[BootResult]) -> dict[str, Any]:
    """The metadata that must agree between two runs for their times to be comparable.

    Read from pytest-benchmark's ``machine_info`` (``cpu.brand_raw``, ``cpu.count``,
    ``system``, ``machine``) and, where those are absent, from the suite's own
    ``machine_info.coldstart`` facts (``benchmarks/provenance.py``); the platform from the
    boots themselves.
    """
    info = (doc.get("machine_info") or {}) if isinstance(doc, dict) else {}
    ours = info.get("coldstart") or {}
    brand, count = _cpu(info)
    platforms = sorted({b.platform for b in boots if b.platform})
    gpus = sorted(str(g.get("name")) for g in ours.get("gpus") or [] if isinstance(g, dict))
    return {"cpu": brand or ours.get("cpu_model"),
            "cpu_count": count if count is not None else ours.get("cpu_count"),
            "system": info.get("system"), "machine": info.get("machine"),
            "platform": ",".join(platforms) if platforms else ours.get("platform"),
            "gpu": ",".join(gpus) if gpus else info.get("gpu")}


def _versions(doc: dict[str, Any], boots: list[BootResult]) -> str:
    found = sorted({b.vllm_version for b in boots if b.vllm_version})
    if not found and isinstance(doc, dict):
        info = doc.get("machine_info") or {}
        v = info.get("vllm_version") or (info.get("coldstart") or {}).get("vllm")
        found = [v] if v else []
    return ", ".join(found) or "unknown"


# ------------------------------------------------------------------------------ values
def _cell(b: BootResult) -> str:
    return "-".join(f"{f}={getattr(b, f)}" for f in CELL_FIELDS if getattr(b, f) is not None)


def _metric_values(boots: list[BootResult], metric: str, total_from_wall: bool) -> list[float]:
    out = []
    for b in boots:
        if metric == TOTAL:
            if total_from_wall:
                v = b.wall_s
            else:
                present = [x for x in b.phases.values() if x is not None]
                v = sum(present) if present else None
        else:
            v = b.phases.get(metric)
        if v is not None and math.isfinite(v):
            out.append(float(v))
    return out


def _min_two_sided_p(n1: int, n2: int) -> float:
    # The most extreme arrangement of an exact Mann-Whitney test: 2 / C(n1 + n2, n1).
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def _change(cell: str, metric: str, base: list[float], new: list[float], *, threshold: float,
            floor_s: float, alpha: float) -> CellChange:
    from scipy import stats

    mb, mn = statistics.median(base), statistics.median(new)
    change = mn - mb
    rel = change / mb if mb > 0 else (math.inf if change > 0 else 0.0)
    spread = max((float(stats.iqr(v)) for v in (base, new) if len(v) >= 2), default=0.0)
    noise = max(floor_s, spread)
    p = min_p = None
    significant = False
    note = ""
    if len(base) >= 2 and len(new) >= 2:
        min_p = _min_two_sided_p(len(base), len(new))
        if len(set(base) | set(new)) == 1:
            p = 1.0
        else:
            p = float(stats.mannwhitneyu(new, base, alternative="two-sided").pvalue)
        significant = p < alpha
        if min_p >= alpha:
            note = (f"{len(base)} vs {len(new)} rounds: the test cannot reach p < {alpha} "
                    f"(smallest possible p {min_p:.2f})")
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


def compare_results(base: list[BootResult], new: list[BootResult], *, threshold: float = 0.10,
                    floor_s: float = 0.05, alpha: float = 0.05) -> list[CellChange]:
    """Every cell and metric of two runs, with its change, noise floor and test.

    ``base`` and ``new`` hold every round (``read_results(..., all_rounds=True)``).
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

        def flat(status: str, note: str = "") -> CellChange:
            return CellChange(cell, TOTAL, None, None, None, None, 0.0, len(b_ok), len(n_ok),
                              None, None, False, status, note)

        if not b_all:
            changes.append(flat("only in new"))
            continue
        if not n_all:
            changes.append(flat("only in base"))
            continue
        if b_ok and not n_ok:
            errors = {b.error for b in n_all if b.error}
            changes.append(flat("failed in new", "; ".join(sorted(errors))[:200]))
            continue
        if n_ok and not b_ok:
            changes.append(flat("fixed in new"))
            continue
        if not b_ok:
            changes.append(flat("no change", "failed on both sides"))
            continue
        wall = all(b.wall_s is not None for b in b_ok + n_ok)
        for metric in (*PHASE_NAMES, TOTAL):
            bv, nv = _metric_values(b_ok, metric, wall), _metric_values(n_ok, metric, wall)
            if not bv or not nv:
                continue
            changes.append(_change(cell, metric, bv, nv, threshold=threshold, floor_s=floor_s,
                                   alpha=alpha))
    return changes


def _load(path: str) -> tuple[dict[str, Any], list[BootResult]]:
    boots = read_results(path, all_rounds=True)  # raises SchemaError on a bad file
    doc = json.loads(Path(path).read_text())
    return (doc if isinstance(doc, dict) else {}), boots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.compare",
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
                        help="also fail on possible regressions (beyond threshold, untested)")
    parser.add_argument("--all", action="store_true", help="list unchanged metrics too")
    parser.add_argument("--json", help="write every comparison as JSON here")
    args = parser.parse_args(argv)
    if args.threshold < 0 or args.noise_floor_s < 0 or not 0 < args.alpha < 1:
        raise InputError("--threshold and --noise-floor-s must be >= 0, --alpha in (0, 1)")

    base_doc, base = _load(args.base)
    new_doc, new = _load(args.new)
    meta_base, meta_new = checked_metadata(base_doc, base), checked_metadata(new_doc, new)
    disagree = {k: (meta_base[k], meta_new[k]) for k in meta_base
                if meta_base[k] is not None and meta_new[k] is not None
                and meta_base[k] != meta_new[k]}
    unchecked = [k for k in meta_base if meta_base[k] is None or meta_new[k] is None]
    if disagree and not args.force:
        what = "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in disagree.items())
        raise SchemaError(f"runs differ in checked metadata ({what}): not comparable; "
                          "--force to compare anyway")

    changes = compare_results(base, new, threshold=args.threshold,
                              floor_s=args.noise_floor_s, alpha=args.alpha)
    failing = {"regression", "failed in new"} | ({"possible regression"} if args.strict else set())
    failed = [c for c in changes if c.status in failing]

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
    for h in ("cell", "metric", "base s", "new s", "change", "noise s", "n", "p", "status"):
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
    console.print(f"{len(changes)} comparisons, {sum(c.status == 'no change' for c in changes)} "
                  f"unchanged, {len(failed)} failing the gate")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "base": args.base, "new": args.new, "metadata": {"base": meta_base, "new": meta_new},
            "metadata_disagreement": {k: list(v) for k, v in disagree.items()},
            "vllm_version": {"base": _versions(base_doc, base), "new": _versions(new_doc, new)},
            "threshold": args.threshold, "noise_floor_s": args.noise_floor_s,
            "alpha": args.alpha, "changes": [asdict(c) for c in changes],
            "failing": len(failed)}, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_cli("analysis.compare", main))
