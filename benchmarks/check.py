"""python -m benchmarks.check out.json [--matrix ... narrowing as for pytest]

Checks a benchmark JSON against the cells its matrix should hold: every cell present, every
one measured (or failed/skipped *on record*, which fails the check unless --allow-failed),
every measured cell with all six phases accounted for, no probe problem (a probe that found
nothing to wrap, or failed) and no check failed. Three verdicts, as compare's: exit 0 pass;
1 failed (a cell failed, failed its checks, or measured with a phase, a probe or its wall
time missing); 3 inconclusive (a cell missing from the document or skipped: no evidence
either way; the run's machine facts missing); 2 unreadable or not such a document.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.verdict import EXIT_INCONCLUSIVE
from benchmarks.matrix.plan import AXES, select, split_values
from coldstart.cli import progress_name, run_program
from coldstart.errors import InputError
from harness.document import AXIS_OPTIONS, read_run
from harness.schema import (
    DOCUMENT_KEY,
    NOT_APPLICABLE_PREFIX,
    PHASE_NAMES,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n")[0]
    parser.add_argument("json", type=Path)
    parser.add_argument("--matrix", default=None,
                        help="the matrix the run should hold (default: the one the run says "
                             "it is of, else smoke)")
    for axis, option in AXIS_OPTIONS.items():
        parser.add_argument(f"--{option}", dest=axis, default=None)
    parser.add_argument("--allow-failed", action="store_true")


def run(args: argparse.Namespace) -> int:
    prog = progress_name(args, "benchmarks.check")
    doc = read_run(args.json)
    # the run names its own matrix; a built-in name or a file checked against it
    args.matrix = args.matrix or doc.coldstart.matrix or "smoke"
    try:
        expected = select(args.matrix, **{a: split_values(getattr(args, a), AXIS_OPTIONS[a])
                                          for a in AXES})
    except ValueError as exc:  # an unknown matrix, an axis value that is none
        raise InputError(str(exc)) from None
    by_cell = {c.id: c.headline for c in doc.cells()}
    problems = []
    undecided = []  # no evidence either way: inconclusive, not failed
    for cell in expected:
        r = by_cell.get(cell.id)
        if r is None:
            undecided.append(f"{cell.id}: missing from {args.json}")
            continue
        line = f"{cell.id}: {r.state}"
        if r.state == "measured":
            # A measured boot may leave a phase empty only where it does not apply.
            missing = [p for p in PHASE_NAMES if r.phases[p] is None
                       and not r.phase_notes.get(p, "").startswith(NOT_APPLICABLE_PREFIX)]
            if missing:
                problems.append(f"{cell.id}: phases not measured: "
                                f"{ {p: r.phase_notes.get(p) for p in missing} }")
            if r.evidence.probe_problems:
                problems.append(f"{cell.id}: probe problems: {r.evidence.probe_problems}")
            if r.wall_s is None:
                problems.append(f"{cell.id}: measured, but no wall time")
            else:
                line += f", ready in {r.wall_s:.1f} s"
        else:
            line += f" ({r.reason})"
            if not args.allow_failed:
                (undecided if r.state == "skipped" else problems).append(line)
        print(line)
    for key in ("machine_info", DOCUMENT_KEY):
        if key not in doc.model_fields_set:
            undecided.append(f"no {key!r} in {args.json}")
    # Cells pytest-benchmark kept no entry for (all of them with --benchmark-disable) carry
    # their failed checks beside the result, as measured ones do in extra_info.
    for cell in doc.cells():
        if cell.checks_failed:
            problems.append(f"{cell.id}: assertions failed: {cell.checks_failed}")
    # A document may hold more than the cells checked (a larger matrix, narrowed here): not a
    # problem, but not silence either, so that checking a scaling run as smoke is seen.
    expected_ids = {cell.id for cell in expected}
    outside = sorted(set(by_cell) - expected_ids)
    if outside:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3
                                          else "")
        recorded = doc.coldstart.matrix
        hint = (f" (the run says it is of matrix {recorded!r}: --matrix {recorded})"
                if recorded and recorded != args.matrix else "")
        print(f"{prog}: {len(outside)} recorded cell(s) outside --matrix "
              f"{args.matrix} not checked: {shown}{hint}")
    for p in problems + undecided:
        print(f"{prog}: {p}", file=sys.stderr)
    verdict = ("FAILED (exit 1)" if problems else
               f"INCONCLUSIVE (exit {EXIT_INCONCLUSIVE})" if undecided else "pass (exit 0)")
    print(f"{prog}: {len(expected)} cells expected, {len(problems)} problem(s), "
          f"{len(undecided)} without evidence: {verdict}")
    return 1 if problems else EXIT_INCONCLUSIVE if undecided else 0


def main(argv: list[str] | None = None) -> int:
    return run_program("benchmarks.check", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
