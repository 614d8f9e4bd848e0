"""``coldstart report RUN.json [-o report.html]`` or ``coldstart report BASE.json NEW.json
[-o compare.html] [compare's options]``: a run, or two runs compared, as one self-contained HTML
page (``analysis.report``: the pages, what they show and how they are made)."""

from __future__ import annotations

import argparse
import math
import sys

from analysis.report.comparison_page import render_comparison
from analysis.report.run_page import render_run
from coldstart.cli import check_output, progress_name
from document.errors import InputError, unreadable

# what its lines are named by when run is called without the front door
PROG = "coldstart report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("A run (one JSON) or a comparison (two) as one self-contained "
                          "HTML page.")
    parser.add_argument("json", nargs="+", help="RUN.json, or BASE.json NEW.json")
    parser.add_argument("-o", "--out", help="the HTML file (default report.html, compare.html)")
    group = parser.add_argument_group("comparison (the same as coldstart compare's)")
    group.add_argument("--threshold", type=float, default=0.10)
    group.add_argument("--noise-floor-s", type=float, default=0.05)
    group.add_argument("--alpha", type=float, default=0.05)
    group.add_argument("--strict", action="store_true")
    group.add_argument("--allow-missing", action="store_true")
    group.add_argument("--accept-machine-difference", "--force", dest="force",
                       action="store_true")
    group.add_argument("--accept-inconclusive", action="store_true")


def run(args: argparse.Namespace) -> int:
    prog = progress_name(args, PROG)
    if len(args.json) > 2:
        raise InputError("give one run (RUN.json) or two to compare (BASE.json NEW.json)")
    if not (math.isfinite(args.threshold) and math.isfinite(args.noise_floor_s)) \
            or args.threshold < 0 or args.noise_floor_s < 0 or not 0 < args.alpha < 1:
        raise InputError("--threshold and --noise-floor-s must be finite and >= 0, --alpha "
                         "in (0, 1)")
    out = check_output(args.out or ("report.html" if len(args.json) == 1 else "compare.html"),
                       "-o")
    for given in args.json:  # before the progress line: a bad name is one line
        if (why := unreadable(given)) is not None:
            raise InputError(f"{given}: {why}")
    if len(args.json) == 1:
        print(f"{prog}: drawing {args.json[0]}", file=sys.stderr)
        text = render_run(args.json[0])
        summary = ""
    else:
        print(f"{prog}: comparing {args.json[0]} and {args.json[1]}", file=sys.stderr)
        text, code = render_comparison(
            args.json[0], args.json[1], threshold=args.threshold, floor_s=args.noise_floor_s,
            alpha=args.alpha, strict=args.strict, allow_missing=args.allow_missing,
            force=args.force, accept_inconclusive=args.accept_inconclusive,
            warn=lambda line: print(f"{prog}: warning: {line}", file=sys.stderr))
        summary = "; verdict: " + {0: "pass", 1: "REGRESSION (compare exits 1)",
                                   3: "INCONCLUSIVE (compare exits 3)"}.get(
                                       code, f"compare exits {code}")
    out.write_text(text, encoding="utf-8")
    print(f"{out} ({out.stat().st_size / 1e3:.0f} kB){summary}")
    return 0
