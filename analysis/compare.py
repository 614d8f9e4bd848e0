"""Compare two result documents phase by phase and give one verdict: pass (exit 0),
regression (exit 1) or inconclusive (exit 3). The CI gate.

    coldstart compare BASE.json NEW.json [--threshold 0.10] [--noise-floor-s 0.05]
        [--alpha 0.05] [--strict] [--allow-missing] [--accept-machine-difference]
        [--accept-inconclusive] [--json FILE] [--all]

Cells are matched by their run's cell id (model, loader, compile_cache, page_cache, entrypoint
and a matrix file's own axes; the platform is checked with the machine, below); the vLLM
version is what is under test, so it is reported, never matched on. For every cell and every
phase (and the total: the wall time when both sides have it, else the sum of the phases):

- the change of the median over rounds, absolute and relative: per metric, the median of
  the measured rounds' values (``median_of_rounds``, the one median every page shows);
- the margin: the larger of ``--threshold`` x the base median and ``--noise-floor-s``, both
  the user's, never the observed spread;
- the interval of the change (``analysis.bounds``: a pooled t-interval on log seconds, each
  end a one-sided bound at its level), and where it lies against the margin.

The decision rule (``analysis.bounds``, ``analysis.verdict``): a **pass** is a bound: every
cell's total (its gated metric) has its interval's upper end inside the margin, at one-sided
alpha (an intersection-union test: no split is needed, a false pass needs the one total that
moved to be bounded wrongly), and no phase regresses. A **regression** is a total or a phase
whose lower end is above its margin, at its share of alpha (split over the cells, half to a
cell's total and half over its phases: Bonferroni, any dependence), or a cell measured in
BASE that failed in NEW, or whose share of failed rounds grew. **Inconclusive** is the rest:
a total the rounds cannot bound ("not bounded"), a slowdown beyond the margin the interval
does not confirm ("possible regression": ``--strict`` makes it a regression), a cell with no
measured round on a side (``only in base``, ``only in new``, ``not measured in new``, ``not
measured``), more skipped rounds, a phase NEW lost (``--allow-missing`` accepts these), a
cell that failed its checks on a side (its seconds measured something else), machines that
differ (``--accept-machine-difference``), or nothing compared at all.
``--accept-inconclusive`` exits 0 on an inconclusive verdict, which still says so.

Two runs a sequential gate wrote (``coldstart gate``, its ``coldstart.gate.design``) are
judged at the gate's last look at each cell, with the alpha that look had left; any other
pair is one look of a fixed design, all of alpha. A two-sided Mann-Whitney p (Holm over every
test) is shown beside each interval, never decided on. An inconclusive verdict names the gate
command that would decide it, adding rounds only to the cells it left undecided.

Beneath the verdicts, where each phase's change went (``detail_changes``, never gated): each
sub-phase's change, the change of the part of the phase in no sub-phase (per round, the phase
less its sub-phases, where they do not overlap), and the residual's; a phase that changed is
summed up in one line (``where_changes_went``: "model_loading +0.90 s: +0.88 s of it is in no
sub-phase").

Two runs must share a cell: runs with none in common (two different matrices) are refused
(exit 2); with cells only on one side, one warning line says how many.

The machines must be comparable (``analysis.dataset.machine_identity(full=True)``): CPU model,
ISA flags, cores and affinity, memory, kernel, OS and architecture, platform, GPU model and
driver, and the storage under the model folder. A merge of shards (``analysis.merge``) is
checked cell by cell: each cell's machine against the machine the same cell ran on in the
other run. A fact one side did not record is listed as unchecked. A document without any boot
is refused (exit 2).
Exit codes: 0 pass, 1 regression, 3 inconclusive, 2 bad input or a refused comparison.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analysis.bounds import Look
from analysis.changes import (
    FAILING,
    INCONCLUSIVE,
    CellChange,
    DetailChange,
    compare_results,
    detail_changes,
    where_changes_went,
)
from analysis.console import console_width
from analysis.dataset import cell_identities, machine_differences, machine_identity
from analysis.metrics import cell_of_boot
from analysis.verdict import Verdict, command_groups, gate_command, judge, verdict_lines
from document import CELL_AXES, RunDocument, cell_axes, read_cells
from document.boot_result import BootResult, SchemaError
from document.errors import InputError

# The verdicts live in analysis.changes, a metric's round values in analysis.metrics.
__all__ = ["Comparison", "PreparedRuns", "decide", "cell_overlap", "compare_runs", "prepare",
           "vllm_versions"]


def vllm_versions(doc: RunDocument | None, boots: list[BootResult]) -> str:
    """The vLLM versions a run's boots ran (else its ``machine_info`` says), for a heading."""
    found = sorted({b.vllm_version for b in boots if b.vllm_version})
    if not found and doc is not None:
        v = doc.machine_facts.vllm_version
        found = [v] if v else []
    return ", ".join(found) or "unknown"


def _load(path: str) -> tuple[RunDocument | None, list[BootResult], dict[str, list[str]]]:
    """The run's document, every round of every cell, and the checks each cell failed."""
    doc, cells = read_cells(path)  # raises SchemaError on a bad file
    boots = [r for c in cells for r in c.rounds]
    if not boots:
        # An empty run must not pass the gate as "nothing changed".
        raise SchemaError(f"{path}: holds no boot (no benchmarks, nothing unrecorded): "
                          "nothing to compare")
    checks = {cell_of_boot(c.headline): list(c.checks_failed) for c in cells if c.checks_failed}
    return doc, boots, checks


def _cell_machines(doc: RunDocument | None,
                   boots: list[BootResult]) -> dict[str, dict[str, Any]]:
    """Each cell's machine identity: its own in a merge of shards, else the document's."""
    cells = cell_identities(doc, full=True)
    if not cells:
        ident = machine_identity(doc, boots, full=True)
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
class PreparedRuns:
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
    checks_failed: tuple[dict[str, list[str]], dict[str, list[str]]] = ({}, {})


def prepare(base_path: str, new_path: str, *, force: bool = False) -> PreparedRuns:
    """Read both runs; refuse (SchemaError) an empty run and runs with no cell in common.
    Machines that differ are stated in ``disagree`` (the verdict is inconclusive unless they
    are accepted). What ``analysis.report`` uses too. ``force`` is kept for callers; the
    acceptance is the verdict's (``analysis.verdict.judge``)."""
    del force
    base_doc, base, base_checks = _load(base_path)
    new_doc, new, new_checks = _load(new_path)
    meta_base = machine_identity(base_doc, base, full=True)
    meta_new = machine_identity(new_doc, new, full=True)
    disagree = machine_differences(meta_base, meta_new)
    if cell_identities(base_doc) or cell_identities(new_doc):
        # A merge of shards: each cell against the machine the same cell ran on in the other.
        disagree = _cell_machine_differences(_cell_machines(base_doc, base),
                                             _cell_machines(new_doc, new))
    unchecked = [k for k in meta_base if meta_base[k] is None or meta_new.get(k) is None]
    warning = cell_overlap(base, new, str(base_path), str(new_path))
    return PreparedRuns(base_doc, base, new_doc, new, meta_base, meta_new, disagree, unchecked,
                    warning, (base_checks, new_checks))


@dataclass
class Comparison:
    """Two runs compared: what was read, every change, where each went, and the verdict."""

    prepared: PreparedRuns
    changes: list[CellChange]
    details: list[DetailChange]
    verdict: Verdict


def _release(doc: RunDocument | None, boots: list[BootResult], side: str) -> str:
    """The release a side ran, as the gate names it (NAME==VERSION)."""
    gate = doc.coldstart.gate if doc is not None else None
    if gate is not None:
        return gate.release(side)
    dist = (doc.machine_facts.vllm_distribution if doc is not None else None) or "vllm"
    version = vllm_versions(doc, boots)
    return f"{dist}=={version}" if version != "unknown" and "," not in version else \
        f"{side.upper()}_RELEASE"


def interval_text(c: CellChange) -> str:
    """``[-1.20, +3.40]``: the interval of a change in seconds, or ``-`` without one."""
    if c.interval_lo_s is None or c.interval_hi_s is None:
        return "-"
    return f"[{c.interval_lo_s:+.2f}, {c.interval_hi_s:+.2f}]"


def change_record(c: CellChange) -> dict[str, Any]:
    """One change as compare.json holds it: every field, ``p_adjusted`` under its old name
    too (pytest-benchmark-era readers)."""
    out = asdict(c)
    out["p_adjusted"] = out.pop("p_value_adjusted")
    return out


def _design_record(prepared: PreparedRuns) -> dict[str, Any]:
    looks, cells, kind = design_looks(prepared)
    return {"kind": kind, "cells": cells,
            "looks": {cell: {"n": lk.n, "n_prev": lk.n_prev, "n_max": lk.n_max}
                      for cell, lk in looks.items()}}


def witness_disagreements(prepared: PreparedRuns) -> dict[str, dict[str, list[str]]]:
    """Per side and cell, where the probes, vLLM's log and its spans disagree on a phase in
    some measured round (``harness.witness_agreement``): shown beside the verdict, not judged."""
    from harness.witness_agreement import disagreements

    out: dict[str, dict[str, list[str]]] = {}
    for side, boots in (("base", prepared.base), ("new", prepared.new)):
        for b in boots:
            if b.state == "measured":
                for line in disagreements(b):
                    lines = out.setdefault(side, {}).setdefault(cell_of_boot(b), [])
                    if line not in lines:
                        lines.append(line)
    return out


def _decide_note(prepared: PreparedRuns, changes: list[CellChange]) -> str | None:
    """What to know about running ``_decide_with``'s command."""
    same = _release(prepared.base_doc, prepared.base, "base") == \
        _release(prepared.new_doc, prepared.new, "new")
    notes = []
    if prepared.disagree:
        notes.append("both sides must run on one machine: the gate boots both releases on the "
                     "machine it runs on" if not same else "both sides must run on one "
                     "machine: make the base run again there too, with the same command")
    elif same and not all(d is not None and d.coldstart.gate for d in
                          (prepared.base_doc, prepared.new_doc)):
        # (the sides of one gate of a release against itself: the command makes both again)
        notes.append("both runs are of one vLLM release: make each side again with this "
                     "command, on its machine, then compare the two")
    undecided = _undecided_axes(prepared, changes)
    groups = len(command_groups(undecided))
    if groups > 1:
        notes.append(f"{groups} commands, one per group of cells that axis options select "
                     f"together, each writing its own documents: compare each group's")
    extra = sorted({k for a in undecided for k in a} - set(CELL_AXES))
    if extra:
        notes.append(f"axis options cannot narrow the matrix's own axes ({', '.join(extra)}): "
                     f"every value of them boots too")
    return "; ".join(notes) or None


def _undecided_axes(prepared: PreparedRuns, changes: list[CellChange]) -> list[dict[str, str]]:
    """The axes of each cell the comparison left undecided (every cell where the machines
    differ)."""
    undecided = {c.cell for c in changes if c.status in INCONCLUSIVE}
    if prepared.disagree:
        undecided = {c.cell for c in changes}
    axes = {cell_of_boot(b): cell_axes(b) for b in prepared.base + prepared.new}
    return [axes[c] for c in sorted(undecided) if c in axes]


def _decide_with(prepared: PreparedRuns, changes: list[CellChange]) -> str:
    """The gate command that would decide the cells this comparison left undecided."""
    undecided = {c.cell for c in changes if c.status in INCONCLUSIVE}
    if prepared.disagree:  # on differing machines every cell is undecided
        undecided = {c.cell for c in changes}
    rounds_now = max((min(c.n_base, c.n_new) for c in changes if c.cell in undecided),
                     default=0)
    matrix = next((d.coldstart.matrix for d in (prepared.new_doc, prepared.base_doc)
                   if d is not None and d.coldstart.matrix), None)
    return gate_command(_release(prepared.base_doc, prepared.base, "base"),
                        _release(prepared.new_doc, prepared.new, "new"), matrix,
                        _undecided_axes(prepared, changes), rounds_now=rounds_now)


def design_looks(prepared: PreparedRuns) -> tuple[dict[str, Look], int | None, str]:
    """The last look at each cell and the cells alpha was split over, as a sequential gate
    recorded them in both sides (``coldstart.gate.design``); none (one look of a fixed
    design) where the sides do not both carry the same design."""
    designs = []
    for doc in (prepared.base_doc, prepared.new_doc):
        gate = doc.coldstart.gate if doc is not None else None
        designs.append(gate.design if gate is not None else None)
    design = designs[0]
    if design is None or designs[1] is None or design.model_dump() != designs[1].model_dump() \
            or design.kind != "sequential":
        return {}, None, "fixed"
    looks = {}
    for cell, ns in design.looks.items():
        if ns:
            looks[cell] = Look(ns[-1], ns[-2] if len(ns) > 1 else 0, design.max_rounds,
                               design.cells)  # both there: GateDesign refuses it without
    return looks, design.cells, "sequential"


def unbooted_changes(prepared: PreparedRuns, seen: set[str]) -> list[CellChange]:
    """The cells a gate chose and never booted (its budget spent, or stopped), as both its
    sides record them (``coldstart.gate.not_booted``, ``.stopped``): "not measured", so that
    a comparison of the sides is no pass on their behalf, as the gate's own verdict is not."""
    why: dict[str, str] = {}
    for doc in (prepared.base_doc, prepared.new_doc):
        gate = doc.coldstart.gate if doc is not None else None
        if gate is None:
            continue
        for cell in gate.not_booted:
            why.setdefault(cell, "the gate did not boot it within its budget")
        if gate.stopped is not None:
            for cell in gate.stopped.undecided:
                why.setdefault(cell, f"the gate was stopped ({gate.stopped.why}) "
                                     f"after {gate.stopped.after_boots} boots")
    return [CellChange(cell, "total", None, None, None, None, 0.0, 0, 0, None, None, False,
                       "not measured", note) for cell, note in sorted(why.items())
            if cell not in seen]


def decide(base_path: str | Path, new_path: str | Path, *, threshold: float = 0.10,
           noise_floor_s: float = 0.05, alpha: float = 0.05, strict: bool = False,
           allow_missing: bool = False, accept_inconclusive: bool = False,
           accept_machine_difference: bool = False) -> Comparison:
    """Read, compare and judge two runs: what the console, compare.json and the page state.
    Bad input or a refused comparison raises its ``UserError``."""
    if not (math.isfinite(threshold) and math.isfinite(noise_floor_s)) \
            or threshold < 0 or noise_floor_s < 0 or not 0 < alpha < 1:
        # NaN compares false with everything: it would turn every change into "no change".
        raise InputError("--threshold and --noise-floor-s must be finite and >= 0, --alpha "
                         "in (0, 1)")
    prepared = prepare(str(base_path), str(new_path))
    looks, cells, _kind = design_looks(prepared)
    changes = compare_results(prepared.base, prepared.new, threshold=threshold,
                              floor_s=noise_floor_s, alpha=alpha,
                              checks_failed=prepared.checks_failed, looks=looks, cells=cells)
    changes += unbooted_changes(prepared, {c.cell for c in changes})
    verdict = judge(changes, machine_differences=prepared.disagree, strict=strict,
                    allow_missing=allow_missing, accept_inconclusive=accept_inconclusive,
                    accept_machine_difference=accept_machine_difference,
                    decide_with=_decide_with(prepared, changes),
                    decide_note=_decide_note(prepared, changes))
    return Comparison(prepared, changes, detail_changes(prepared.base, prepared.new), verdict)


def compare_runs(base_path: str | Path, new_path: str | Path, *, threshold: float = 0.10,
                 noise_floor_s: float = 0.05, alpha: float = 0.05, force: bool = False,
                 strict: bool = False, allow_missing: bool = False,
                 accept_inconclusive: bool = False, show_all: bool = False,
                 json_path: str | Path | None = None,
                 program: str = "analysis.compare") -> int:
    """``coldstart compare`` as a function: print the table, the verdict and why
    (and the warning of cells on one side) and write ``json_path``; the verdict's exit code
    (0 pass, 1 regression, 3 inconclusive). Bad input or a refused comparison raises its
    ``UserError`` (``InputError``, ``SchemaError``)."""
    comparison = decide(base_path, new_path, threshold=threshold, noise_floor_s=noise_floor_s,
                        alpha=alpha, strict=strict, allow_missing=allow_missing,
                        accept_inconclusive=accept_inconclusive,
                        accept_machine_difference=force)
    prepared, changes, details = comparison.prepared, comparison.changes, comparison.details
    verdict = comparison.verdict
    base_doc, base, new_doc, new = (prepared.base_doc, prepared.base, prepared.new_doc,
                                    prepared.new)
    meta_base, meta_new = prepared.meta_base, prepared.meta_new
    disagree, unchecked = prepared.disagree, prepared.unchecked
    if prepared.overlap_warning:
        print(f"{program}: warning: {prepared.overlap_warning}", file=sys.stderr)
    went = where_changes_went(changes, details)

    from rich.console import Console
    from rich.table import Table

    console = Console(width=console_width(140))
    console.print(f"vLLM {vllm_versions(base_doc, base)} (base) -> {vllm_versions(new_doc, new)} (new)")
    if disagree:
        console.print(("compared despite differing machines (--accept-machine-difference): "
                       if force else "the machines differ: ")
                      + "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in disagree.items()),
                      markup=False, highlight=False)
    if unchecked:
        console.print("metadata not recorded on a side, unchecked: " + ", ".join(unchecked))
    table = Table(title_justify="left")
    for h in ("cell", "metric", "base median s", "new median s", "change", "interval s",
              "margin s", "n", "status"):
        table.add_column(h, overflow="fold")
    shown = [c for c in changes if show_all or c.status != "no change"]
    for c in shown:
        change = "-" if c.change_s is None else f"{c.change_s:+.2f} s ({100 * c.change_rel:+.1f} %)"
        table.add_row(c.cell, c.metric,
                      "-" if c.base_median_s is None else f"{c.base_median_s:.2f}",
                      "-" if c.new_median_s is None else f"{c.new_median_s:.2f}", change,
                      interval_text(c), f"{c.margin_s:.2f}", f"{c.n_base}/{c.n_new}",
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
    tested = sum(c.interval_lo_s is not None for c in changes)
    both = [c for c in changes if not c.status.startswith("only in ")]
    counted = {"unchanged": sum(c.status == "no change" for c in both),
               "regressing": sum(c.status in FAILING for c in both),
               "undecided": sum(c.status in INCONCLUSIVE for c in both)}
    # Every other status by its own name ("improvement", "not judged"), so that the kinds
    # add up to the comparisons and none is mislabelled.
    rest = Counter(c.status for c in both if c.status != "no change"
                   and c.status not in FAILING and c.status not in INCONCLUSIVE)
    console.print(f"{compared} comparisons ({tested} with an interval), "
                  + ", ".join([*(f"{n} {what}" for what, n in counted.items()),
                               *(f"{n} {status}" for status, n in sorted(rest.items()))])
                  + "".join(f"; {n} cell(s) only in {side}" for side, n in one_side.items()
                            if n))
    witnesses = witness_disagreements(prepared)
    for side, cells in witnesses.items():
        for cell, lines in cells.items():
            console.print(f"witnesses disagree in {side}: {cell}: " + "; ".join(lines),
                          soft_wrap=True, highlight=False, markup=False)
    for line in verdict_lines(verdict):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    if json_path:
        Path(json_path).write_text(json.dumps({
            "base": str(base_path), "new": str(new_path),
            "verdict": verdict.model_dump(mode="json"),
            "metadata": {"base": meta_base, "new": meta_new},
            "metadata_disagreement": {k: list(v) for k, v in disagree.items()},
            "metadata_unchecked": unchecked,
            "vllm_version": {"base": vllm_versions(base_doc, base), "new": vllm_versions(new_doc, new)},
            "threshold": threshold, "noise_floor_s": noise_floor_s,
            "alpha": alpha, "design": _design_record(prepared), "strict": strict, "allow_missing": allow_missing,
            "accept_machine_difference": force, "accept_inconclusive": accept_inconclusive,
            "changes": [change_record(c) for c in changes],
            "details": [asdict(d) for d in details],
            "where_changes_went": [{"cell": k[0], "phase": k[1], "line": v}
                                   for k, v in went.items()],
            "witness_disagreements": witnesses,
            "failing": sum(c.status in FAILING for c in changes)}, indent=2) + "\n")
    return verdict.exit_code


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("analysis.compare"))
