"""``coldstart merge RUN.json... [SHARD.json.cells.jsonl...] -o merged.json``: the shards of
one matrix as one run (``analysis.merge`` merges; here the options, the cells ``--matrix``
expects and the lines said)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.merge import merge, missing_cells
from coldstart.cli import check_output, progress_name
from document import AXIS_OPTIONS, write_run
from document.errors import InputError, UsageError

# what its lines are named by when run is called without the front door
PROG = "coldstart merge"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Merge the shards of one matrix into one run."
    parser.add_argument("inputs", nargs="+", type=Path,
                        help="shard documents (--benchmark-json) and cells logs (*.cells.jsonl)")
    parser.add_argument("-o", "--out", required=True, type=Path, help="the merged document")
    parser.add_argument("--prefer", choices=["newest"],
                        help="a cell found with different results: keep the one written last")
    parser.add_argument("--matrix", help="the matrix the shards ran (a built-in name or a "
                        "file), narrowed by the axis options as for benchmarks.check: the "
                        "cells the merge must hold")
    for axis, option in AXIS_OPTIONS.items():
        parser.add_argument(f"--{option}", dest=f"narrow_{axis}", default=None,
                            help=argparse.SUPPRESS)
    parser.add_argument("--allow-missing", action="store_true",
                        help="exit 0 when cells of the matrix are missing (still said)")
    parser.add_argument("--allow-mixed-versions", action="store_true",
                        help="merge shards of different vLLM versions")
    parser.add_argument("--allow-mixed-commits", action="store_true",
                        help="merge shards of different commits (each cell keeps its "
                             "commit_info in extra_info)")


def _expected(args: argparse.Namespace) -> list[str] | None:
    """The cell ids ``--matrix`` and the axis options select, as pytest and check do."""
    narrowed = [o for a, o in AXIS_OPTIONS.items() if getattr(args, f"narrow_{a}") is not None]
    if args.matrix is None:
        if narrowed:
            raise UsageError(f"--{narrowed[0]} narrows --matrix: give --matrix too")
        return None
    from benchmarks.matrix.cells import select, split_values

    try:
        return [c.id for c in select(args.matrix, **{
            a: split_values(getattr(args, f"narrow_{a}"), o) for a, o in AXIS_OPTIONS.items()})]
    except ValueError as exc:  # an unknown matrix, an axis value that is none
        raise InputError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    check_output(args.out, "-o")
    expected = _expected(args)
    paths = list(dict.fromkeys(args.inputs))  # a file named twice is read once
    doc = merge(paths, prefer_newest=args.prefer == "newest",
                allow_mixed_versions=args.allow_mixed_versions,
                allow_mixed_commits=args.allow_mixed_commits,
                program=progress_name(args, PROG))
    write_run(doc, args.out)
    meta = doc.coldstart
    prog = progress_name(args, PROG)
    print(f"{prog}: {len(doc.benchmarks) + len(meta.unrecorded)} cells "
          f"({len(doc.benchmarks)} recorded, {len(meta.unrecorded)} unrecorded) from "
          f"{len(paths)} inputs, {meta.machines} machine(s) -> {args.out}")
    count, gone = missing_cells(args.out, expected)
    if count < 0:
        print(f"{prog}: the cells were not counted against the matrix: the shards do not say "
              "how many it has (give --matrix)", file=sys.stderr)
        return 0
    if not count:
        return 0
    names = (": " + ", ".join(gone)) if gone else " (give --matrix to name them)"
    print(f"{prog}: {count} cell(s) of the matrix missing, a shard not merged?{names}; "
          f"{'accepted (--allow-missing)' if args.allow_missing else '--allow-missing to accept'}"
          f" (exit {0 if args.allow_missing else 1}; {args.out} is written)", file=sys.stderr)
    return 0 if args.allow_missing else 1
