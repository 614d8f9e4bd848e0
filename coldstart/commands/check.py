"""``coldstart check``: is every cell of a benchmark JSON there, measured and checked?

    coldstart check out.json [--matrix ... narrowing as for pytest]

Without narrowing options, the cells expected are those the run selected, where it recorded
a digest of them (``coldstart.matrix_cells``); without one, all of its matrix.

Checks a benchmark JSON against the cells its matrix should hold (``benchmarks.check``): every
cell present, every one measured (or failed/skipped *on record*, which fails the check unless
--allow-failed), every measured cell with all six phases accounted for, no probe problem (a
probe that found nothing to wrap, or failed) and no check failed. Three verdicts, as
compare's: exit 0 pass; 1 failed (a cell failed, failed its checks, or measured with a phase,
a probe or its wall time missing); 3 inconclusive (a cell missing from the document or
skipped: no evidence either way; the run's machine facts missing); 2 unreadable or not such a
document.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.verdict import EXIT_INCONCLUSIVE
from benchmarks.check import as_selected, check_run
from benchmarks.matrix.cells import AXES, select, split_values
from coldstart.cli import progress_name
from document import AXIS_OPTIONS, read_run
from document.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("json", type=Path)
    parser.add_argument("--matrix", default=None,
                        help="the matrix the run should hold (default: the one the run says "
                             "it is of, else smoke)")
    for axis, option in AXIS_OPTIONS.items():
        parser.add_argument(f"--{option}", dest=axis, default=None)
    parser.add_argument("--allow-failed", action="store_true")


def run(args: argparse.Namespace) -> int:
    prog = progress_name(args, "coldstart check")
    doc = read_run(args.json)
    # the run names its own matrix; a built-in name or a file checked against it
    matrix = args.matrix or doc.coldstart.matrix or "smoke"
    try:
        narrow = {a: split_values(getattr(args, a), AXIS_OPTIONS[a]) for a in AXES}
        expected = select(matrix, **narrow)
    except ValueError as exc:  # an unknown matrix, an axis value that is none
        raise InputError(str(exc)) from None
    # Unless told otherwise, a run is held to the cells it selected (pytest's axis options
    # and -k), as its own digest of them says, not to its whole matrix.
    if not any(narrow.values()) and (args.matrix in (None, doc.coldstart.matrix)):
        expected, how = as_selected(doc, expected)
        if how:
            print(f"{prog}: {how}")
    report = check_run(doc, expected, args.json, allow_failed=args.allow_failed)
    for line in report.lines:
        print(line)
    # More recorded than checked is not a problem, but not silence either, so that checking
    # a scaling run as smoke is seen.
    if report.outside:
        outside = report.outside
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3
                                          else "")
        recorded = doc.coldstart.matrix
        hint = (f" (the run says it is of matrix {recorded!r}: --matrix {recorded})"
                if recorded and recorded != matrix else "")
        print(f"{prog}: {len(outside)} recorded cell(s) outside --matrix "
              f"{matrix} not checked: {shown}{hint}")
    for p in report.problems + report.undecided:
        print(f"{prog}: {p}", file=sys.stderr)
    verdict = ("FAILED (exit 1)" if report.problems else
               f"INCONCLUSIVE (exit {EXIT_INCONCLUSIVE})" if report.undecided else
               "pass (exit 0)")
    print(f"{prog}: {len(expected)} cells expected, {len(report.problems)} problem(s), "
          f"{len(report.undecided)} without evidence: {verdict}")
    return 1 if report.problems else EXIT_INCONCLUSIVE if report.undecided else 0
