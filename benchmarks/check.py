"""Is a run what its matrix asks for (``coldstart check``)?

Judges a benchmark document against the cells its matrix should hold: every cell present,
every one measured (or failed/skipped *on record*, a problem unless failures are allowed),
every measured cell with all six phases accounted for, no probe problem (a probe that found
nothing to wrap, or failed) and no check failed. What is wrong is a *problem* (the run
failed) or *undecided* (a cell missing or skipped, the machine facts missing: no evidence
either way, inconclusive).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.matrix.cells import Cell
from document import AXIS_OPTIONS, RunDocument
from document.boot_result import DOCUMENT_KEY, matrix_cells


@dataclass
class CheckReport:
    """What ``check_run`` found: a line per expected cell found, the problems (failed), what
    has no evidence either way (inconclusive), and the recorded cells not checked."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


def as_selected(doc: RunDocument, expected: Sequence[Cell]) -> tuple[list[Cell], str]:
    """The cells of ``expected`` the run selected, where its ``coldstart.matrix_cells`` digest
    says which, and a line saying how ``expected`` was narrowed or why it was not.

    ``expected`` is the whole matrix here. The digest is of every selected cell's id, recorded
    or not, so a cell the run selected and then lost altogether leaves it unmatched: then the
    whole of ``expected`` stays expected (its missing cells count as without evidence), never a
    silently smaller set. So it does where the run's digest of its whole matrix differs from
    ``expected``'s: the matrix has gained or lost cells since, and which of them the run would
    have selected is not on record."""
    recorded = doc.coldstart.matrix_cells or {}
    present = {c.id for c in doc.cells()}
    mine = [c for c in expected if c.id in present]
    then = recorded.get("matrix")
    now = matrix_cells([c.id for c in expected])
    if recorded.get("sha256") and isinstance(then, dict) and then != now:
        # Its selection was of another set of cells: what it would select of this one is
        # not on record, so every cell of it is expected (a cell added since: no evidence).
        return list(expected), (f"the matrix has changed since the run: it had "
                                f"{then.get('count')} cells then and has {now['count']} now, so "
                                f"every cell of it is expected (give the axis options the run "
                                f"was narrowed by to check only those)")
    if recorded.get("sha256"):
        if matrix_cells([c.id for c in mine]) == {"count": recorded.get("count"),
                                                  "sha256": recorded["sha256"]}:
            unsure = ("" if isinstance(then, dict) else
                      "; the run records no digest of its whole matrix, so a cell added to the "
                      "matrix since would not be noticed")
            return mine, (f"{len(mine)} of the matrix's {len(expected)} cells, the ones the "
                          f"run selected (its matrix_cells digest); axis options check "
                          f"others{unsure}")
        return list(expected), (f"the run selected {recorded.get('count')} cells (its "
                                f"matrix_cells digest) and holds {len(mine)} of this matrix's "
                                f"that are not all of them: every cell of the matrix is "
                                f"expected (a shard, or cells lost from the document: merge "
                                f"the shards, or give the axis options it ran with)")
    # No digest (a document written before schema 3 recorded one, or by hand): say what
    # narrowing its own cells suggest rather than guess it.
    values = {a: sorted({str(c.axes.get(a)) for c in doc.cells() if c.axes.get(a) is not None})
              for a in AXIS_OPTIONS}
    options = " ".join(f"--{AXIS_OPTIONS[a]} {','.join(v)}" for a, v in values.items() if v)
    if len(mine) < len(expected) and options:
        return list(expected), (f"the run records no selection digest: all {len(expected)} "
                                f"cells are expected; if it was run narrowed, say how "
                                f"(its cells' values: {options})")
    return list(expected), ""


def check_run(doc: RunDocument, expected: Sequence[Cell], source: object,
              allow_failed: bool = False) -> CheckReport:
    """``doc`` (read from ``source``, named in the lines) against the ``expected`` cells."""
    report = CheckReport()
    cells = {c.id: c for c in doc.cells()}
    by_cell = {i: c.headline for i, c in cells.items()}
    failed_checks = {c.id: c.checks_failed for c in doc.cells() if c.checks_failed}
    for cell in expected:
        r = by_cell.get(cell.id)
        if r is None:
            report.undecided.append(f"{cell.id}: missing from {source}")
            continue
        line = f"{cell.id}: {r.state}"
        if r.state == "measured":
            # A measured boot may leave a phase empty only where it does not apply.
            report.problems += cells[cell.id].measurement_problems()
            if r.wall_s is not None:
                line += f", ready in {r.wall_s:.1f} s"
            # Its own line says so: a boot that was timed but failed its checks (the answer,
            # the page cache's state) is not a measurement to read as one.
            if cell.id in failed_checks:
                line += f", but FAILED {len(failed_checks[cell.id])} check(s): " \
                        + "; ".join(failed_checks[cell.id])
        else:
            line += f" ({r.reason})"
            if not allow_failed:
                (report.undecided if r.state == "skipped" else report.problems).append(line)
        report.lines.append(line)
    for key in ("machine_info", DOCUMENT_KEY):
        if key not in doc.model_fields_set:
            report.undecided.append(f"no {key!r} in {source}")
    # Cells pytest-benchmark kept no entry for (all of them with --benchmark-disable) carry
    # their failed checks beside the result, as measured ones do in extra_info.
    for cell in doc.cells():
        if cell.checks_failed:
            report.problems.append(f"{cell.id}: assertions failed: {cell.checks_failed}")
    # A document may hold more than the cells checked (a larger matrix, narrowed here).
    report.outside = sorted(set(by_cell) - {cell.id for cell in expected})
    return report


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks.check"))
