"""The GPUs one boot of a matrix needs at most: the largest tensor x pipeline x data parallel
size over its cells, read by the project's own matrix reader (benchmarks.matrix.file).

    python deploy/gpus.py examples/matrices/gpu-node.yaml        # prints 2
    python deploy/gpus.py smoke                                    # prints 1

A cell's value comes from where the benchmark takes it: the file's ``engine_args``, then the
cell's axes, then the model entry's own ``engine_args`` (the model's wins). Set the number as
``GPUS`` in deploy/kubernetes/params/params.env: each shard pod requests that many GPUs.
A matrix that cannot be read is one line and exit 2.
"""

from __future__ import annotations

import sys


def gpus(matrix: str) -> int:
    """The most GPUs one cell of ``matrix`` (a built-in name or a file) boots on."""
    from benchmarks.matrix.cells import load_plan
    from benchmarks.preflight import cell_gpus

    plan = load_plan(matrix)
    return max((cell_gpus(plan, cell) for cell in plan.cells), default=1)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python deploy/gpus.py MATRIX (a built-in name or a matrix file)",
              file=sys.stderr)
        return 2
    try:
        print(gpus(argv[0]))
    except (ValueError, OSError) as exc:  # MatrixFileError is a ValueError
        print(f"gpus: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    sys.exit(main())
