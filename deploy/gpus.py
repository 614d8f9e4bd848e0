"""The GPUs one boot of a matrix needs at most: the largest tensor x pipeline x data parallel
size over its cells, read by the project's own matrix reader (benchmarks.matrixfile).

    python deploy/gpus.py examples/matrices/gpu-node.yaml        # prints 2
    python deploy/gpus.py smoke                                    # prints 1

A cell's value comes from where the benchmark takes it: the file's ``engine_args``, then the
cell's axes, then the model entry's own ``engine_args`` (the model's wins). Set the number as
``GPUS`` in deploy/kubernetes/params/params.env: each shard pod requests that many GPUs.
A matrix that cannot be read is one line and exit 2.
"""

from __future__ import annotations

import sys
from typing import Any

PARALLEL_ARGS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")


def _size(values: dict[str, Any], name: str) -> int:
    value = values.get(name, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: {value!r} is not a whole number of 1 or more")
    return value


def gpus(matrix: str) -> int:
    """The most GPUs one cell of ``matrix`` (a built-in name or a file) boots on."""
    from benchmarks.matrix import load_plan

    plan = load_plan(matrix)
    common = dict(plan.settings.engine_args) if plan.settings else {}
    most = 1
    for cell in plan.cells:
        own = dict(plan.models[cell.model].engine_args) if cell.model in plan.models else {}
        values = common | dict(cell.extra) | own
        count = 1
        for name in PARALLEL_ARGS:
            count *= _size(values, name)
        most = max(most, count)
    return most


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
