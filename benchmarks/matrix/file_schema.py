"""The matrix file's document: its pydantic models (one source of truth for what a matrix file
may say, versioned) and the resolved models and settings a loaded file gives.
``benchmarks.matrix.file`` loads and checks a file against them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from document.boot_result import (
    COMPILE_CACHE_MODES,
    ENTRYPOINTS,
    LOADERS,
    PAGE_CACHE_MODES,
    PHASE_NAMES,
)

MATRIX_FILE_VERSION = 1  # 1: models, axes | configurations, engine_args, env, budgets, serve_params

# The axes every cell has, in the order of today's cell ids; extra axes follow them.
BASE_AXES: dict[str, tuple[str, ...]] = {"loader": LOADERS, "compile_cache": COMPILE_CACHE_MODES,
                                         "page_cache": PAGE_CACHE_MODES, "entrypoint": ENTRYPOINTS}
AXIS_DEFAULTS = {"loader": "safetensors", "compile_cache": "cold", "page_cache": "warm",
                 "entrypoint": "offline"}
# Set by the axes (model, loader, compile_cache), never by hand: the boot sets them.
RESERVED_ENGINE_ARGS = frozenset({"model", "load_format", "model_loader_extra_config",
                                  "enforce_eager"})
BUDGET_KEYS = ("ready_s", *PHASE_NAMES)
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
ARG_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class MatrixFileError(ValueError):
    """A matrix file that cannot be run: ``FILE:LINE: key: what is wrong``, one line."""


Scalar = str | int | float | bool | None


def _budgets_ok(budgets: dict[str, float]) -> dict[str, float]:
    for key, value in budgets.items():
        if key not in BUDGET_KEYS:
            raise ValueError(f"unknown budget {key!r}; one of {', '.join(BUDGET_KEYS)}")
        if not value > 0:
            raise ValueError(f"budget {key}: {value} s must be more than 0")
    return budgets


class ModelEntry(BaseModel):
    """One model: exactly one of ``fixture``, ``path`` or ``hub``."""

    model_config = ConfigDict(extra="forbid")

    fixture: str | None = None
    path: Path | None = None
    hub: str | None = None
    revision: str | None = None
    name: str | None = None
    engine_args: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str | int | float | bool] = Field(default_factory=dict)
    budgets: dict[str, float] = Field(default_factory=dict)

    _check_budgets = field_validator("budgets")(_budgets_ok)

    @model_validator(mode="after")
    def _one_source(self) -> ModelEntry:
        given = [k for k in ("fixture", "path", "hub") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a model names exactly one of fixture, path or hub"
                             + (f" (got {', '.join(given)})" if given else ""))
        if self.revision is not None and self.hub is None:
            raise ValueError("revision is for a hub model")
        return self

    @property
    def kind(self) -> Literal["fixture", "path", "hub"]:
        return "fixture" if self.fixture else "path" if self.path else "hub"

    @property
    def label(self) -> str:
        """The model's name in cell ids."""
        if self.name:
            return self.name
        if self.fixture:
            return self.fixture
        if self.path:
            return self.path.name
        return self.hub  # type: ignore[return-value]


class Node(BaseModel):
    """The machine a matrix's cells need: what each cell's pre-flight checks where it runs
    (benchmarks.preflight), and what the Kubernetes Job asks of a node (deploy/plan.py)."""

    model_config = ConfigDict(extra="forbid")

    platform: Literal["cuda", "rocm", "cpu", "tpu", "xpu"] | None = None
    # The node label's value (nvidia.com/gpu.product, set by GPU feature discovery).
    gpu_product: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")
    # The key of the taint the matrix's nodes carry (nvidia.com/gpu): tolerated, nothing else.
    toleration: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_./]*$")


class MatrixFile(BaseModel):
    # A file names its models (models:, or serve_params: whose models it runs); without
    # either the loader refuses it ("no model"), and so does the JSON Schema: {} is no matrix.
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "anyOf": [{"required": ["models"]}, {"required": ["serve_params"]}]})

    version: int = MATRIX_FILE_VERSION
    # Entries are checked one by one (_models): a union's errors would name every member.
    models: list[str | dict[str, Any]] | Literal["all-fixtures"] = Field(default_factory=list)
    axes: dict[str, list[Scalar] | Scalar] | None = None
    configurations: list[dict[str, Scalar]] | None = None
    engine_args: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str | int | float | bool] = Field(default_factory=dict)
    rounds: int | None = Field(default=None, ge=1)
    boot_timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    budgets: dict[str, float] = Field(default_factory=dict)
    serve_params: Path | None = None
    # "spans": every boot also records vLLM's own OpenTelemetry start-up spans, held against
    # the probes (document.span_phases); "spans-grpc" exports them over gRPC instead of HTTP.
    witness: Literal["probes", "spans", "spans-grpc"] = "probes"
    node: Node | None = None

    _check_budgets = field_validator("budgets")(_budgets_ok)

    @field_validator("version")
    @classmethod
    def _known_version(cls, v: int) -> int:
        if v != MATRIX_FILE_VERSION:
            raise ValueError(f"matrix file version {v}; this suite reads {MATRIX_FILE_VERSION}")
        return v

    @model_validator(mode="after")
    def _axes_or_configurations(self) -> MatrixFile:
        if self.axes is not None and self.configurations is not None:
            raise ValueError("give axes (a product) or configurations (chosen points), not both")
        return self


@dataclass(frozen=True)
class Model:
    """A resolved model of a matrix: where vLLM finds it and what the cells add to it."""

    label: str
    kind: Literal["fixture", "path", "hub"]
    source: str  # fixture name, absolute folder, or hub id
    revision: str | None = None
    engine_args: tuple[tuple[str, Any], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    budgets: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class MatrixSettings:
    """What a matrix says beyond its cells."""

    rounds: int | None = None
    boot_timeout: float | None = None
    budgets: dict[str, float] = field(default_factory=dict)
    engine_args: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    witness: str = "probes"
    node: Node | None = None

