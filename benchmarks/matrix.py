"""The benchmark matrices, as data. A cell is one point of the named axes.

Axis names are the pytest parametrize argument names, so they land in pytest-benchmark's
``params`` and in stable test ids (``model=smollm2-135m-loader=safetensors-...``): saved runs
are matched across vLLM releases by that id.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from itertools import product

from harness.schema import COMPILE_CACHE_MODES, ENTRYPOINTS, LOADERS, PAGE_CACHE_MODES, cell_id

AXES: tuple[str, ...] = ("model", "loader", "compile_cache", "page_cache", "entrypoint")
# The command-line option that narrows each axis (pytest benchmarks/, benchmarks.check).
AXIS_OPTIONS: dict[str, str] = {"model": "models", "loader": "loaders",
                                "compile_cache": "compile-caches", "page_cache": "page-caches",
                                "entrypoint": "entrypoints"}
REAL_MODEL = "smollm2-135m"

# Models of the scaling matrix: sizes, depths and vocabularies far enough apart for the PCCs
# and the per-phase fits (fixtures/catalog.py says what each one is).
SCALING_MODELS: tuple[str, ...] = (
    "rand-smollm2-135m-l4",
    "rand-smollm2-135m-l15",
    "rand-smollm2-135m-l30",
    "rand-smollm2-360m",
    "rand-qwen2.5-0.5b-l6",
    "rand-qwen2.5-0.5b-l12",
    "rand-qwen2.5-0.5b",
    "rand-llama3.2-1b",
)


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


# The smoke matrix: every value of every axis once, in six boots of the real model, so a
# newcomer's first run ends within 20 minutes on a 2-core CPU machine (a compiled boot of
# SmolLM2-135M takes 1.5-3 min there, an eager one less). The compile axis is varied on one
# loader (safetensors); the other loaders boot eager, which is what sets them apart (weight
# loading) without a compile each. Order matters: the cold cell runs before the warm one, and
# the warm one reuses the compile cache the cold one left (harness.boot.keep_as_warm_cache;
# the cache's key has no page-cache state, which the compile does not depend on), so no
# unmeasured priming boot is paid. --matrix full holds every combination.
SMOKE_CONFIGS: tuple[tuple[str, str, str, str], ...] = (
    # loader, compile_cache, page_cache, entrypoint
    ("safetensors", "cold", "evicted", "offline"),
    ("safetensors", "warm", "warm", "offline"),
    ("safetensors", "off", "warm", "offline"),
    ("runai_streamer", "off", "evicted", "offline"),
    ("tensorizer", "off", "evicted", "offline"),
    ("safetensors", "off", "warm", "serve"),
)


def _smoke() -> list[Cell]:
    return [Cell(REAL_MODEL, *config) for config in SMOKE_CONFIGS]


def _scaling() -> list[Cell]:
    from fixtures.catalog import TOKENIZER_SWEEP

    models = list(dict.fromkeys([*SCALING_MODELS, *TOKENIZER_SWEEP]))
    return [Cell(m, "safetensors", "cold", "warm") for m in models]


def _full() -> list[Cell]:
    from fixtures.catalog import CATALOG

    return [Cell(*point) for point in product(sorted(CATALOG), LOADERS, COMPILE_CACHE_MODES,
                                              PAGE_CACHE_MODES, ENTRYPOINTS)]


MATRICES = {"smoke": _smoke, "scaling": _scaling, "full": _full}


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
    if matrix not in MATRICES:
        raise ValueError(f"unknown matrix {matrix!r}; choose one of {', '.join(MATRICES)}")
    unknown_axes = set(narrow) - set(AXES)
    if unknown_axes:
        raise ValueError(f"unknown axis {sorted(unknown_axes)}; axes: {', '.join(AXES)}")
    allowed = {"loader": LOADERS, "compile_cache": COMPILE_CACHE_MODES,
               "page_cache": PAGE_CACHE_MODES, "entrypoint": ENTRYPOINTS}
    cells = MATRICES[matrix]()
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
