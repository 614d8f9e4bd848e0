"""``coldstart cluster-plan``: the values of deploy/kubernetes/params/params.env that a matrix
decides, printed as its lines (``KEY=value``).

    coldstart cluster-plan examples/matrices/gpu-node.yaml --splits 3 --rounds 3

Also run as ``python deploy/plan.py``, the form the Kubernetes manifests and docs name; what
each value is: ``deploy.plan``. A matrix that cannot be read, or a model whose size cannot be
known, is one line and exit 2.
"""

from __future__ import annotations

import argparse
import sys

from deploy.plan import plan_lines
from document.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("matrix", help="a built-in matrix or a matrix file")
    parser.add_argument("--splits", type=int, default=3, help="shards (the Job's completions)")
    parser.add_argument("--rounds", type=int, help="ROUNDS (default: the matrix's, else 1)")
    parser.add_argument("--model-bytes", type=int, help="the weights' bytes of all its models")


def run(args: argparse.Namespace) -> int:
    if args.splits < 1 or (args.rounds is not None and args.rounds < 1):
        raise InputError("--splits and --rounds are whole numbers of 1 or more")
    try:
        lines, notes = plan_lines(args.matrix, args.splits, args.rounds, args.model_bytes)
    except (ValueError, OSError) as exc:  # MatrixFileError is a ValueError
        raise InputError(str(exc)) from exc
    for note in notes:
        print(note, file=sys.stderr)
    print("\n".join(lines))
    return 0
