"""``coldstart features RESULT.json ... -o features.json``: the features of every model in the
result files (``analysis.features.runs``), as a file fit's and predict's ``--features`` take;
``--matrix`` names the revision a hub model is read at."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.features.runs import features_of_runs
from coldstart.cli import check_output, progress_name
from document.errors import FeatureError

# what its lines are named by when run is called without the front door
PROG = "coldstart features"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("The features of every model in the result files, read from their "
                          "model folders (a hub model's from the hub), as a file fit's "
                          "--features takes: a fit can then be repeated where the model "
                          "folders are not.")
    parser.add_argument("results", nargs="+", metavar="RUN.json", help="result documents")
    parser.add_argument("-o", "--out", required=True, metavar="FEATURES.json")
    parser.add_argument("--matrix", help="the matrix the results are of: a hub model is read "
                                         "at the revision it names (default: the hub's main)")
    parser.add_argument("--hub-only", action="store_true",
                        help="only the hub models, the others named and left out (where their "
                             "folders are not: the Kubernetes merge Job's); none is no error")


def hub_revisions(matrix: str | None) -> dict[str, str | None]:
    """{model label: revision} of the matrix's hub models."""
    if matrix is None:
        return {}
    from benchmarks.matrix.cells import load_plan

    try:
        plan = load_plan(matrix)
    except ValueError as exc:  # MatrixFileError, an unknown built-in matrix
        raise FeatureError(f"--matrix: {exc}") from None
    return {label: m.revision for label, m in plan.models.items() if m.kind == "hub"}


def run(args: argparse.Namespace) -> int:
    check_output(args.out, "-o")
    out, left_out = features_of_runs(args.results, revisions=hub_revisions(args.matrix),
                                     hub_only=args.hub_only)
    prog = progress_name(args, PROG)
    for model, folder in sorted(left_out.items()):
        print(f"{prog}: {model}: not a hub model (its folder {folder}): left out (--hub-only)",
              file=sys.stderr)
    if not out:
        if args.hub_only:
            print(f"{prog}: no measured boot of a hub model in {', '.join(args.results)}: "
                  f"{args.out} not written")
            return 0
        raise FeatureError("no measured boot with a model folder in "
                           f"{', '.join(args.results)}: no features to write")
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"features of {len(out)} models -> {args.out}")
    return 0
