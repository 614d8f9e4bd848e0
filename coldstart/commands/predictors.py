"""``coldstart predictors build [--check]`` re-makes the shipped predictor files from the
published data in the repository (``analysis.predictors.remake``: the recipes);
``coldstart predictors list`` lists them."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from analysis.predictor_file import load_predictor
from analysis.predictors import PACKAGE_DIR, list_lines
from analysis.predictors.remake import RECIPES, build_all, same_fit, undated


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Re-make (or --check) the shipped predictor files, or list them."
    actions = parser.add_subparsers(dest="action", required=True)
    build = actions.add_parser("build", help="re-make the shipped files from tests/data",
                               description="Re-make the shipped predictor files from the "
                               "published data in the repository.")
    build.add_argument("--only", action="append", choices=list(RECIPES), help="this one only")
    build.add_argument("--check", action="store_true",
                       help="build into a temporary folder; exit 1 if a committed file differs")
    actions.add_parser("list", help="one line per shipped file: machine, vLLM, data",
                       description="One line per shipped predictor: machine, vLLM, data.")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        print("\n".join(list_lines()))
        return 0
    if not args.check:
        for path in build_all(names=args.only):
            print(path)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        stale = [p.name for p in build_all(Path(tmp), names=args.only)
                 if not (PACKAGE_DIR / p.name).is_file()
                 or not same_fit(undated(load_predictor(p)),
                                 undated(load_predictor(PACKAGE_DIR / p.name)))]
    for name in stale:
        print(f"{name}: differs from what the data gives; run coldstart predictors "
              "build", file=sys.stderr)
    return 1 if stale else 0
