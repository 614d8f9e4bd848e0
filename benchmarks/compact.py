"""python -m benchmarks.compact out.json -o small.json: a result document without timelines.

Drops what a fit or a comparison does not read (per-process event timelines, log tails, the
rounds' copies of those), so a run can be kept as test data or attached to an issue.
``--keep-events`` keeps each cell's headline (median) round's events, all the run page's
timeline and ``harness.trace --cell`` read, and drops only the rounds' copies. Its
pytest-benchmark ``stats`` are restated from the rounds' ``wall_s``
(``harness.document.restate_stats``), so a run written before the two agreed reads the same to
``pytest-benchmark compare`` as to ``analysis.compare``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coldstart.cli import check_output, run_program
from coldstart.errors import UsageError
from harness.document import compact, read_run, restate_stats, write_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n")[0]
    parser.add_argument("json", type=Path, nargs="+")
    parser.add_argument("-o", "--out", type=Path, default=None)
    parser.add_argument("--upgrade", action="store_true",
                        help="rewrite each document in place with its stats restated and its "
                             "entries named by run (pytest-benchmark compare reads it); drops "
                             "nothing")
    parser.add_argument("--keep-events", action="store_true",
                        help="keep each cell's headline round's events (the run page's timeline, "
                             "harness.trace --cell); drop only the rounds' copies")


def run(args: argparse.Namespace) -> int:
    if args.upgrade:
        return _upgrade_files(args.json)
    if args.out is None or len(args.json) != 1:
        raise UsageError("give one document and -o OUT (or --upgrade FILE...)")
    check_output(args.out, "-o")
    args.json = args.json[0]
    doc = compact(read_run(args.json), keep_events=args.keep_events)
    write_run(doc, args.out, indent=1)
    print(f"{args.json} ({args.json.stat().st_size:,} B) -> {args.out} ({args.out.stat().st_size:,} B)")
    return 0


def _upgrade_files(paths: list[Path]) -> int:
    for path in paths:
        doc = restate_stats(read_run(path))
        write_run(doc, path, indent=1)
        print(f"upgraded {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program("benchmarks.compact", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
