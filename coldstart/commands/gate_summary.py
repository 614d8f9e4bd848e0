"""``coldstart gate-summary``: a gate's verdict as markdown for a CI job's summary.

    coldstart gate-summary COMPARE_JSON_OR_GATE_DIR [--out FILE] [--exit-zero]

Exits with the verdict's code (pass 0, regression 1, inconclusive 3), so the step that
writes the summary also fails the job; ``--exit-zero`` exits 0 whatever the verdict. What the
markdown holds is ``benchmarks.gate_summary``'s to say.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.gate_summary import read_comparison, summary
from coldstart.cli import check_output, progress_name

PROG = "coldstart gate-summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("comparison", type=Path,
                        help="compare.json, or the gate's --out-dir that holds it")
    parser.add_argument("--out", type=Path, default=None,
                        help="write the markdown here (default: stdout)")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 whatever the verdict (default: pass 0, regression 1, "
                             "inconclusive 3)")


def run(args: argparse.Namespace) -> int:
    out = check_output(args.out, "--out")
    doc, path = read_comparison(args.comparison)
    text, verdict = summary(doc, source=str(path))
    if out is None:
        print(text)
    else:
        out.write_text(text + "\n")
        print(f"{progress_name(args, PROG)}: {verdict.verdict} (exit {verdict.exit_code}); "
              f"wrote {out}", file=sys.stderr)
    return 0 if args.exit_zero else verdict.exit_code
