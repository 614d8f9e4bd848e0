"""The benchmark matrices as data: a cell is one point of the named axes.

The cells of a built-in or given matrix (``plan``), the matrix file's format (``schema``) and
its reading (``file``, ``yaml_loader``).
"""

from benchmarks.matrix.file import load
from benchmarks.matrix.plan import (
    AXES,
    BUILT_IN,
    SCALING_MODELS,
    Cell,
    Plan,
    cell_from_params,
    load_plan,
    select,
    split_values,
)
from benchmarks.matrix.schema import ENV_NAME, MatrixFileError, Model

__all__ = ["AXES", "BUILT_IN", "ENV_NAME", "SCALING_MODELS", "Cell", "MatrixFileError", "Model",
           "Plan", "cell_from_params", "load", "load_plan", "select", "split_values"]
