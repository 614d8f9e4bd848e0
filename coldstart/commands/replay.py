"""``coldstart replay [DOCS ...] [--sims N] [--seed S] [--json OUT] [--plot PNG]
[--markdown]``: the gate's error rates, measured by replaying its sequential rule on rounds
resampled from real runs (``analysis.replay``): the false-alarm rate when nothing changed,
the chance of a pass under known slowdowns of the total and of a phase of about a second,
and the boots to a verdict, each with its Monte-Carlo error. Without DOCS, the committed
real runs under docs/data."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from coldstart.cli import check_output
from document.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split(": ", 1)[1].split("\n\n")[0].replace("\n", " ")
    parser.add_argument("docs", nargs="*", help="result documents with rounds (default: the "
                        "committed real runs)")
    parser.add_argument("--sims", type=int, default=4000,
                        help="simulated gates per scenario and kind of cell (default 4000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--threshold", type=float, default=0.10)
    parser.add_argument("--noise-floor-s", type=float, default=0.05)
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    parser.add_argument("--plot", type=Path, default=None, help="write the figure here (PNG)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")


def run(args: argparse.Namespace) -> int:
    from analysis import replay

    if args.sims < 10:
        raise InputError("--sims must be >= 10")
    if not 0 < args.alpha < 1 or args.threshold < 0 or args.noise_floor_s < 0:
        raise InputError("--alpha must be in (0, 1), --threshold and --noise-floor-s >= 0")
    check_output(args.json, "--json")
    check_output(args.plot, "--plot")
    docs = args.docs or list(replay.DEFAULT_DOCUMENTS)
    print(f"replay: {args.sims} simulated gates per scenario on the rounds of {len(docs)} "
          "document(s)", file=sys.stderr)
    result = replay.replay_all(docs, sims=args.sims, seed=args.seed, alpha=args.alpha,
                               threshold=args.threshold, floor_s=args.noise_floor_s)
    if not result["rows"]:
        raise InputError(f"{', '.join(docs)}: no cell with two measured rounds or more: no "
                         "noise to resample")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        replay.plot(result, args.plot)
    if args.markdown or not args.json:
        print(replay.markdown(result))
    return 0
