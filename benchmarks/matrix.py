"""The benchmark matrices, as data. A cell is one point of the named axes.

Axis names are the pytest parametrize argument names, so they land in pytest-benchmark's
``params`` and in stable test ids (``model=smollm2-135m-loader=safetensors-...``): saved runs
are matched across vLLM releases by that id.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from harness.schema import COMPILE_CACHE_MODES, ENTRYPOINTS, LOADERS, PAGE_CACHE_MODES, cell_id

AXES: tuple[str, ...] = ("model", "loader", "compile_cache", "page_cache", "entrypoint")
# The command-line option that narrows each axis (pytest benchmarks/, benchmarks.check).
AXIS_OPTIONS: dict[str, str] = {"model": "models", "loader": "loaders",
                                "compile_cache": "compile-caches", "page_cache": "page-caches",
                                "entrypoint": "entrypoints"}
REAL_MODEL = "smollm2-135m"
# The built-in matrices are matrix files (benchmarks/matrices/NAME.yaml, read by
# benchmarks.matrixfile), named on the command line by NAME; --matrix also takes a file's path.
MATRIX_DIR = Path(__file__).parent / "matrices"
BUILT_IN = ("smoke", "scaling", "full")


@dataclass(frozen=True, order=True)
class Cell:
    model: str
    loader: str
    compile_cache: str
    page_cache: str
    entrypoint: str = "offline"

    def params(self) -> dict[str, str]:
        return asdict(self)

    @property
    def id(self) -> str:
        return cell_id(self.params())


def matrix_path(matrix: str) -> Path:
    """A built-in matrix's file, or the matrix file ``matrix`` names."""
    if matrix in BUILT_IN:
        return MATRIX_DIR / f"{matrix}.yaml"
    path = Path(matrix).expanduser()
    if path.suffix in (".yaml", ".yml") or path.is_file():
        return path
    raise ValueError(f"unknown matrix {matrix!r}; choose one of {', '.join(BUILT_IN)}, or name "
                     "a matrix file (.yaml)")


def matrix_cells(matrix: str) -> list[Cell]:
    """The cells of a built-in matrix or a matrix file, in the file's order."""
    from benchmarks.matrixfile import BASE_AXES, load

    path = matrix_path(matrix)
    models, points, settings = load(path)
    # What the file may say beyond fixtures and the four base axes (folders, hub ids, engine
    # arguments, environment variables, budgets) is read and checked, but the cells pytest
    # runs carry the base axes only: refused rather than booted without it.
    beyond = [f"model {m.label!r} ({m.kind})" for m in models if m.kind != "fixture"]
    beyond += [f"settings of model {m.label!r}" for m in models if m.engine_args or m.env
               or m.budgets]
    beyond += sorted({k for p in points for k in p if k not in BASE_AXES})
    beyond += [k for k in ("budgets", "engine_args", "env") if getattr(settings, k)]
    if beyond:
        raise ValueError(f"{path}: {', '.join(beyond)}: checked, but pytest benchmarks/ runs "
                         "fixture models on the loader / compile_cache / page_cache / "
                         "entrypoint axes only in this release")
    return [Cell(m.label, **{k: str(p[k]) for k in BASE_AXES}) for m in models for p in points]


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


def select(matrix: str, **narrow: list[str] | None) -> list[Cell]:
    """The cells of ``matrix``, narrowed on any axis (``loader=["safetensors"]``, ...).

    ``model`` replaces the matrix's models (every configuration of the matrix, for each model
    given); the other axes filter. A value an axis does not know, or a selection that leaves
    no cell, is an error, never an empty run.
    """
    unknown_axes = set(narrow) - set(AXES)
    if unknown_axes:
        raise ValueError(f"unknown axis {sorted(unknown_axes)}; axes: {', '.join(AXES)}")
    allowed = {"loader": LOADERS, "compile_cache": COMPILE_CACHE_MODES,
               "page_cache": PAGE_CACHE_MODES, "entrypoint": ENTRYPOINTS}
    cells = matrix_cells(matrix)
    # A value named twice is one cell, not two with ids suffixed 0 and 1.
    narrow = {axis: list(dict.fromkeys(values)) if values else values
              for axis, values in narrow.items()}
    models = narrow.get("model")
    if models:
        from fixtures.catalog import CATALOG

        unknown = [m for m in models if m not in CATALOG]
        if unknown:
            raise ValueError(f"unknown model {unknown}; choose from {', '.join(sorted(CATALOG))}")
        configs = dict.fromkeys((c.loader, c.compile_cache, c.page_cache, c.entrypoint)
                                for c in cells)
        cells = [Cell(m, *cfg) for m in models for cfg in configs]
    for axis, values in narrow.items():
        if axis == "model" or not values:
            continue
        unknown = [v for v in values if v not in allowed[axis]]
        if unknown:
            raise ValueError(f"unknown {axis} {unknown}; choose from {', '.join(allowed[axis])}")
        cells = [c for c in cells if getattr(c, axis) in values]
    if not cells:
        raise ValueError(f"no cell of matrix {matrix!r} is left after narrowing "
                         f"({', '.join(f'{k}={v}' for k, v in narrow.items() if v)})")
    return cells
