"""``coldstart compact``: a result document without timelines, small enough to commit.

    coldstart compact out.json -o small.json [--keep-events]
    coldstart compact --upgrade OLD.json...      # stats restated in place, nothing dropped

What is dropped and kept is ``document``'s to say (its ``compact`` and
``restate_stats``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from coldstart.cli import check_output
from document import compact, read_run, restate_stats, write_run
from document.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("json", type=Path, nargs="+")
    parser.add_argument("-o", "--out", type=Path, default=None)
    parser.add_argument("--upgrade", action="store_true",
                        help="rewrite each document in place with its stats restated and its "
                             "entries named by run (pytest-benchmark compare reads it); drops "
                             "nothing")
    parser.add_argument("--keep-events", action="store_true",
                        help="keep each cell's headline round's events (the run page's timeline, "
                             "coldstart trace --cell); drop only the rounds' copies")


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
