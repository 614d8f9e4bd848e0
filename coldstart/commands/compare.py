"""``coldstart compare BASE.json NEW.json``: two runs phase by phase and one verdict, the CI
gate (``analysis.compare``: the method and the exit codes)."""

from __future__ import annotations

import argparse

from analysis.compare import compare_runs
from coldstart.cli import check_output, progress_name

# what its lines are named by when run is called without the front door
PROG = "coldstart compare"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Compare two runs phase by phase and give one verdict. Exit codes: "
                          "0 pass, 1 regression, 3 inconclusive (the verdict says why and what "
                          "would decide it), 2 bad input.")
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--threshold", type=float, default=0.10,
                        help="relative change that counts (0.10 = 10 %%)")
    parser.add_argument("--noise-floor-s", type=float, default=0.05,
                        help="absolute change in seconds below which a change is noise")
    parser.add_argument("--alpha", type=float, default=0.05, help="test level")
    parser.add_argument("--accept-machine-difference", "--force", dest="force",
                        action="store_true",
                        help="judge runs of differing machines as if one machine ran both "
                             "(else the verdict is inconclusive)")
    parser.add_argument("--strict", action="store_true",
                        help="a slowdown beyond the threshold that the rounds cannot confirm "
                             "is a regression (else the verdict is inconclusive)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="accept cells one side lacks or never measured, more skipped "
                             "rounds and phases NEW lost (else the verdict is inconclusive)")
    parser.add_argument("--accept-inconclusive", action="store_true",
                        help="exit 0 on an inconclusive verdict (still stated as such)")
    parser.add_argument("--all", action="store_true", help="list unchanged metrics too")
    parser.add_argument("--json", help="write every comparison as JSON here")


def run(args: argparse.Namespace) -> int:
    check_output(args.json, "--json")
    return compare_runs(args.base, args.new, threshold=args.threshold,
                        noise_floor_s=args.noise_floor_s, alpha=args.alpha, force=args.force,
                        strict=args.strict, allow_missing=args.allow_missing,
                        accept_inconclusive=args.accept_inconclusive, show_all=args.all,
                        json_path=args.json,
                        program=progress_name(args, PROG))
