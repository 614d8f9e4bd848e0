"""The benchmark matrices, as data. A cell is one point of the named axes.

Axis names are the pytest parametrize argument names, so they land in pytest-benchmark's
``params`` and in stable test ids (``model=smollm2-135m-loader=safetensors-...``): saved runs
are matched across vLLM releases by that id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from document import CELL_AXES
from document.boot_result import (
    COMPILE_CACHE_MODES,
    ENTRYPOINTS,
    LOADERS,
    PAGE_CACHE_MODES,
    cell_id,
)
from document.boot_result import matrix_cells as digest_cells

# The five axes every cell has (document.CELL_AXES, where a cell is defined).
AXES: tuple[str, ...] = CELL_AXES
REAL_MODEL = "smollm2-135m"
# The built-in matrices are matrix files (benchmarks/matrices/NAME.yaml, read by
# benchmarks.matrix.file), named on the command line by NAME; --matrix also takes a file's path.
MATRIX_DIR = Path(__file__).parents[1] / "matrices"
BUILT_IN = ("smoke", "scaling", "full")


@dataclass(frozen=True)
class Cell:
    model: str
    loader: str
    compile_cache: str
    page_cache: str
    entrypoint: str = "offline"
    # The matrix file's axes beyond the five (engine arguments, environment variables), in
    # the file's order: they follow the five in the cell id, only where the matrix has them.
    extra: tuple[tuple[str, Any], ...] = ()

    def params(self, base_only: bool = False) -> dict[str, Any]:
        base = {"model": self.model, "loader": self.loader, "compile_cache": self.compile_cache,
                "page_cache": self.page_cache, "entrypoint": self.entrypoint}
        return base if base_only else {**base, **dict(self.extra)}

    @property
    def id(self) -> str:
        return cell_id(self.params())

    def __lt__(self, other: Cell) -> bool:
        return self.id < other.id


@dataclass
class Plan:
    """A matrix made ready to run: its cells, each model's source and settings, the file's."""

    cells: list[Cell]
    models: dict[str, Any] = field(default_factory=dict)  # label -> benchmarks.matrix.file.Model
    settings: Any = None  # benchmarks.matrix.file.Settings
    path: Path | None = None


def matrix_path(matrix: str) -> Path:
    """A built-in matrix's file, or the matrix file ``matrix`` names."""
    if matrix in BUILT_IN:
        return MATRIX_DIR / f"{matrix}.yaml"
    path = Path(matrix).expanduser()
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return path
    raise ValueError(f"unknown matrix {matrix!r}; choose one of {', '.join(BUILT_IN)}, or name "
                     "a matrix file (.yaml)")


def load_plan(matrix: str, *, check_engine_args: bool = False) -> Plan:
    """Read a built-in matrix or a matrix file: its cells in the file's order, with models.

    ``check_engine_args`` checks engine-argument names against the installed vLLM (a
    subprocess that imports it) where the file names any.
    """
    from benchmarks.matrix import file as matrixfile

    path = matrix_path(matrix)
    models, points, settings = matrixfile.load(path)
    if check_engine_args and matrixfile.names_engine_args(models, points, settings):
        models, points, settings = matrixfile.load(
            path, engine_arg_names=matrixfile.engine_arg_names())
    cells = [cell for m in models for cell in model_cells(m, points)]
    return Plan(_unique(cells), {m.label: m for m in models}, settings, path)


def model_cells(model: Any, points: list[dict[str, Any]]) -> list[Cell]:
    """One model's cells: a value the model entry sets itself (an engine argument or a
    variable) wins over the same axis, and ``enforce_eager: true`` makes its cells compile
    nothing (compile_cache off), as the id then says."""
    from benchmarks.matrix.file_schema import BASE_AXES

    own = dict(model.engine_args) | dict(model.env)
    cells = []
    for point in points:
        base = {k: str(point[k]) for k in BASE_AXES}
        if own.get("enforce_eager") is True:
            base["compile_cache"] = "off"
        extra = tuple((k, own.get(k, v)) for k, v in point.items() if k not in BASE_AXES)
        cells.append(Cell(model.label, **base, extra=extra))
    return _unique(cells)


def _unique(cells: list[Cell]) -> list[Cell]:
    # By id: a model's own value for an axis may be a mapping (compilation_config), which
    # does not hash.
    return list({c.id: c for c in cells}.values())


def cell_from_params(params: dict[str, Any]) -> Cell:
    """The cell of a test's parameters (the five axes, and ``cell_extra`` where the matrix
    has more), as pytest's callspec or a JSON entry's flattened ``params`` hold them."""
    extra = params.get("cell_extra")
    if extra is None:
        extra = {k: v for k, v in params.items() if k not in AXES}
    return Cell(*(params[a] for a in AXES), extra=tuple(extra.items()))


def selection_digest(matrix: str, selected: list[Cell]) -> dict[str, Any]:
    """``coldstart.matrix_cells`` of a run that selected ``selected`` from ``matrix``: the
    selection's digest and, where the matrix still reads, its whole one."""
    try:
        whole: list[str] | None = [c.id for c in load_plan(matrix).cells]
    except (ValueError, OSError):
        # A matrix file moved or broken since the boots: the selection still says itself,
        # and check then says it cannot tell whether the matrix changed.
        whole = None
    return digest_cells([c.id for c in selected], of=whole)


def matrix_cells(matrix: str) -> list[Cell]:
    """The cells of a built-in matrix or a matrix file, in the file's order."""
    return load_plan(matrix).cells


def _scaling_models() -> tuple[str, ...]:
    return tuple(dict.fromkeys(c.model for c in matrix_cells("scaling")))


# The models every scaling fit is made from (a model kept out of them is an unseen one).
SCALING_MODELS: tuple[str, ...] = _scaling_models()




def split_values(raw: str | None, option: str) -> list[str] | None:
    """An axis option's comma-separated values, as pytest and benchmarks.check both read them:
    blanks around a value ignored, an option not given is no narrowing (None).

    An option given without a value (``--models ,``, ``--loaders ""``) is a ValueError: read
    as no narrowing it would start the whole matrix, hours of boots nobody asked for.
    """
    if raw is None:
        return None
    values = [v.strip() for v in raw.split(",") if v.strip()]
    if not values:
        raise ValueError(f"--{option} {raw!r}: no value; name at least one, or leave the "
                         "option out to keep the whole axis")
    return values


def select(matrix: str | Plan, **narrow: list[str] | None) -> list[Cell]:
    """The cells of ``matrix``, narrowed on any axis (``loader=["safetensors"]``, ...).

    ``model`` replaces the matrix's models (every configuration of the matrix, for each model
    given: a fixture name, a model folder or a hub id); the other axes filter. A value an axis
    does not know, or a selection that leaves no cell, is an error, never an empty run.
    """
    plan = matrix if isinstance(matrix, Plan) else load_plan(matrix)
    name = matrix if isinstance(matrix, str) else str(plan.path)
    unknown_axes = set(narrow) - set(AXES)
    if unknown_axes:
        raise ValueError(f"unknown axis {sorted(unknown_axes)}; axes: {', '.join(AXES)}")
    allowed = {"loader": LOADERS, "compile_cache": COMPILE_CACHE_MODES,
               "page_cache": PAGE_CACHE_MODES, "entrypoint": ENTRYPOINTS}
    cells = plan.cells
    # A value named twice is one cell, not two with ids suffixed 0 and 1.
    narrow = {axis: list(dict.fromkeys(values)) if values else values
              for axis, values in narrow.items()}
    models = narrow.get("model")
    if models:
        chosen = [plan.models.get(m) or _model_named(m) for m in models]
        for m in chosen:
            plan.models.setdefault(m.label, m)
        configs = list(dict.fromkeys(
            (c.loader, c.compile_cache, c.page_cache, c.entrypoint, c.extra) for c in cells))
        points = [{"loader": lo, "compile_cache": cc, "page_cache": pc, "entrypoint": ep,
                   **dict(extra)} for lo, cc, pc, ep, extra in configs]
        cells = _unique([c for m in chosen for c in model_cells(m, points)])
    for axis, values in narrow.items():
        if axis == "model" or not values:
            continue
        unknown = [v for v in values if v not in allowed[axis]]
        if unknown:
            raise ValueError(f"unknown {axis} {unknown}; choose from {', '.join(allowed[axis])}")
        cells = [c for c in cells if getattr(c, axis) in values]
    if not cells:
        raise ValueError(f"no cell of matrix {name!r} is left after narrowing "
                         f"({', '.join(f'{k}={v}' for k, v in narrow.items() if v)})")
    return cells


def _model_named(text: str) -> Any:
    """``--models`` value: a fixture name, else a model folder, else a hub id (ORG/NAME)."""
    from benchmarks.matrix.file import model_from_string
    from benchmarks.matrix.file_schema import MatrixFileError

    try:
        return model_from_string(text)
    except MatrixFileError as exc:
        raise ValueError(f"--models {text!r}: {str(exc).split(': ', 1)[-1]}") from None
