"""Compare two result documents phase by phase; exit 1 on a regression (the CI gate).

    python -m analysis.compare BASE.json NEW.json [--threshold 0.10] [--noise-floor-s 0.05]
        [--alpha 0.05] [--force] [--strict] [--allow-missing] [--json FILE] [--all]

Cells are matched by their run's cell id (model, loader, compile_cache, page_cache, entrypoint
and a matrix file's own axes; the platform is checked with the machine, below); the vLLM
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

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis.changes import (
    EXACT_MAX_ARRANGEMENTS,
    FAILING,
    MISSING,
    POSSIBLE,
    CellChange,
    DetailChange,
    compare_results,
    detail_changes,
    failing_changes,
    metric_change,
    min_two_sided_p,
    where_changes_went,
)
from analysis.dataset import cell_identities, machine_differences, machine_identity
from analysis.metrics import (
    CELL_FIELDS,
    NO_SUBPHASE,
    OVERLAP_TOLERANCE_S,
    OVERLAPPING_SUBPHASES,
    RESIDUAL,
    TOTAL,
    cell_of_boot,
    median_of_rounds,
    metric_values,
)
from coldstart.cli import InputError, check_output, console_width, progress_name, run_program
from harness.document import RunDocument, read_cells
from harness.schema import BootResult, SchemaError

# The verdicts live in analysis.changes, a metric's round values in analysis.metrics: every
# name stays importable from here.
__all__ = ["CELL_FIELDS", "EXACT_MAX_ARRANGEMENTS", "FAILING", "MISSING", "NO_SUBPHASE",
           "OVERLAPPING_SUBPHASES", "OVERLAP_TOLERANCE_S", "POSSIBLE", "RESIDUAL", "TOTAL",
           "CellChange", "DetailChange", "Prepared", "cell_of_boot",
           "cell_overlap", "compare_results", "detail_changes", "failing_changes", "main",
           "median_of_rounds", "metric_change", "metric_values", "min_two_sided_p", "prepare",
           "vllm_versions", "where_changes_went"]


def vllm_versions(doc: RunDocument | None, boots: list[BootResult]) -> str:
    """The vLLM versions a run's boots ran (else its ``machine_info`` says), for a heading."""
    found = sorted({b.vllm_version for b in boots if b.vllm_version})
    if not found and doc is not None:
        v = doc.machine_info.get("vllm_version") or doc.machine_facts.get("vllm")
        found = [v] if v else []
    return ", ".join(found) or "unknown"


def _load(path: str) -> tuple[RunDocument | None, list[BootResult]]:
    doc, cells = read_cells(path)  # raises SchemaError on a bad file
    boots = [r for c in cells for r in c.rounds]
    if not boots:
        # An empty run must not pass the gate as "nothing changed".
        raise SchemaError(f"{path}: holds no boot (no benchmarks, nothing unrecorded): "
                          "nothing to compare")
    return doc, boots


def _cell_machines(doc: RunDocument | None,
                   boots: list[BootResult]) -> dict[str, dict[str, Any]]:
    """Each cell's machine identity: its own in a merge of shards, else the document's."""
    cells = cell_identities(doc)
    if not cells:
        ident = machine_identity(doc, boots)
        return {cell_of_boot(b): ident for b in boots}
    return {cell_of_boot(head): ident for head, ident in cells}


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
    cells_base, cells_new = {cell_of_boot(b) for b in base}, {cell_of_boot(b) for b in new}
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

    base_doc: RunDocument | None
    base: list[BootResult]
    new_doc: RunDocument | None
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Compare two runs phase by phase."
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


def compare_runs(base_path: str | Path, new_path: str | Path, *, threshold: float = 0.10,
                 noise_floor_s: float = 0.05, alpha: float = 0.05, force: bool = False,
                 strict: bool = False, allow_missing: bool = False, show_all: bool = False,
                 json_path: str | Path | None = None,
                 program: str = "analysis.compare") -> int:
    """``python -m analysis.compare`` as a function: print the table (and the warning of
    cells on one side) and write ``json_path``; 0 no regression, 1 regression. Bad input or
    a refused comparison raises its ``UserError`` (``InputError``, ``SchemaError``)."""
    if not (math.isfinite(threshold) and math.isfinite(noise_floor_s)) \
            or threshold < 0 or noise_floor_s < 0 or not 0 < alpha < 1:
        # NaN compares false with everything: it would turn every change into "no change".
        raise InputError("--threshold and --noise-floor-s must be finite and >= 0, --alpha "
                         "in (0, 1)")

    prepared = prepare(str(base_path), str(new_path), force=force)
    base_doc, base, new_doc, new = (prepared.base_doc, prepared.base, prepared.new_doc,
                                    prepared.new)
    meta_base, meta_new = prepared.meta_base, prepared.meta_new
    disagree, unchecked = prepared.disagree, prepared.unchecked
    if prepared.overlap_warning:
        print(f"{program}: warning: {prepared.overlap_warning}", file=sys.stderr)

    changes = compare_results(base, new, threshold=threshold,
                              floor_s=noise_floor_s, alpha=alpha)
    failed = failing_changes(changes, strict=strict, allow_missing=allow_missing)
    details = detail_changes(base, new)
    went = where_changes_went(changes, details)

    from rich.console import Console
    from rich.table import Table

    console = Console(width=console_width(140))
    console.print(f"vLLM {vllm_versions(base_doc, base)} (base) -> {vllm_versions(new_doc, new)} (new)")
    if disagree:
        console.print("[red]compared despite differing metadata (--force):[/red] "
                      + "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in disagree.items()))
    if unchecked:
        console.print("metadata not recorded on a side, unchecked: " + ", ".join(unchecked))
    table = Table(title_justify="left")
    for h in ("cell", "metric", "base median s", "new median s", "change", "noise s", "n",
              "p", "status"):
        table.add_column(h, overflow="fold")
    shown = [c for c in changes if show_all or c.status != "no change"]
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
    # A cell on one side only is listed, not compared: it is no comparison of the count.
    one_side = {side: sum(c.status == f"only in {side}" for c in changes)
                for side in ("base", "new")}
    compared = len(changes) - sum(one_side.values())
    console.print(f"{compared} comparisons, {sum(c.status == 'no change' for c in changes)} "
                  f"unchanged, {len(failed)} failing the gate"
                  + "".join(f"; {n} cell(s) only in {side}" for side, n in one_side.items()
                            if n))
    # Timed comparisons whose rounds cannot give p < alpha (one round a side: no test).
    untestable = sum(c.base_median_s is not None and (c.min_attainable_p is None
                                                      or c.min_attainable_p >= alpha)
                     for c in changes)
    if untestable and not strict:
        console.print(f"[yellow]{untestable} comparisons have too few rounds to reach p < "
                      f"{alpha}: a slowdown there can only fail the gate with "
                      "--strict[/yellow]")
    if json_path:
        Path(json_path).write_text(json.dumps({
            "base": str(base_path), "new": str(new_path),
            "metadata": {"base": meta_base, "new": meta_new},
            "metadata_disagreement": {k: list(v) for k, v in disagree.items()},
            "vllm_version": {"base": vllm_versions(base_doc, base), "new": vllm_versions(new_doc, new)},
            "threshold": threshold, "noise_floor_s": noise_floor_s,
            "alpha": alpha, "strict": strict, "allow_missing": allow_missing,
            "changes": [asdict(c) for c in changes],
            "details": [asdict(d) for d in details],
            "where_changes_went": [{"cell": k[0], "phase": k[1], "line": v}
                                   for k, v in went.items()],
            "failing": len(failed)}, indent=2) + "\n")
    return 1 if failed else 0


def run(args: argparse.Namespace) -> int:
    check_output(args.json, "--json")
    return compare_runs(args.base, args.new, threshold=args.threshold,
                        noise_floor_s=args.noise_floor_s, alpha=args.alpha, force=args.force,
                        strict=args.strict, allow_missing=args.allow_missing,
                        show_all=args.all, json_path=args.json,
                        program=progress_name(args, "analysis.compare"))


def main(argv: list[str] | None = None) -> int:
    return run_program("analysis.compare", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
