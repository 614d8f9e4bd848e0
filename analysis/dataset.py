"""Result files -> one row per (configuration, model): the phases and the model's features.

Configuration grouping (documented choice): boots are fitted separately per configuration,
the tuple (platform, vLLM version, loader, compile_cache, page_cache, entrypoint). A cold
compile cache, a streaming loader or an evicted page cache change what a phase does, not
only how long it takes, so one line per phase across them would mix physics; a predictor
file holds one set of phase models per configuration and ``predict`` picks one.

Within a configuration, several cells or rounds of the same model are reduced to their median
per phase (failed and skipped boots are counted, never fitted).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, NamedTuple

from analysis.features import FeatureError, ModelFeatures, from_model_dir
from harness.schema import PHASE_NAMES, BootResult, read_results

__all__ = ["CONFIG_FIELDS", "Row", "Dataset", "build_dataset", "config_label"]

CONFIG_FIELDS: tuple[str, ...] = ("platform", "vllm_version", "loader", "compile_cache",
                                  "page_cache", "entrypoint")


class Row(NamedTuple):
    model: str
    config: tuple[tuple[str, str | None], ...]
    phases: dict[str, float | None]
    subphases: dict[str, float]
    wall_s: float | None
    features: ModelFeatures
    boots: int


class Dataset(NamedTuple):
    rows: list[Row]
    not_measured: dict[str, int]  # state -> count of boots left out
    inputs: list[str]


def config_key(r: BootResult) -> tuple[tuple[str, str | None], ...]:
    return tuple((f, getattr(r, f)) for f in CONFIG_FIELDS)


def config_label(key: tuple[tuple[str, str | None], ...] | dict[str, Any]) -> str:
    items = key.items() if isinstance(key, dict) else key
    return " ".join(f"{k}={v}" for k, v in items if v is not None) or "unspecified"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _features_for(r: BootResult, known: dict[str, ModelFeatures],
                  cache: dict[str, ModelFeatures]) -> ModelFeatures:
    if r.model in known:
        return known[r.model]
    if r.model_path:
        key = f"{r.model_path}|{r.platform}|{r.vllm_version}"
        if key not in cache:
            compile_dir = r.evidence.get("compile_cache_dir") if r.evidence else None
            if compile_dir and not Path(compile_dir).is_dir():
                compile_dir = None
            cache[key] = from_model_dir(r.model_path, model=r.model, platform=r.platform,
                                        vllm_version=r.vllm_version,
                                        compile_cache_dir=compile_dir)
        return cache[key]
    raise FeatureError(f"no features for model {r.model!r}: its results have no model_path; "
                       "give --features FILE")


def build_dataset(results: list[BootResult], features: dict[str, ModelFeatures],
                  inputs: list[str]) -> Dataset:
    """Group measured boots by configuration and model; attach each model's features."""
    groups: dict[tuple[Any, str], list[BootResult]] = {}
    not_measured: dict[str, int] = {}
    for r in results:
        if r.state != "measured":
            not_measured[r.state] = not_measured.get(r.state, 0) + 1
            continue
        groups.setdefault((config_key(r), r.model), []).append(r)
    cache: dict[str, ModelFeatures] = {}
    rows = []
    for (key, model), boots in groups.items():
        phases = {p: _median([b.phases[p] for b in boots if b.phases.get(p) is not None])
                  for p in PHASE_NAMES}
        subnames = sorted({s for b in boots for s, v in b.subphases.items() if v is not None})
        subphases = {s: _median([b.subphases[s] for b in boots if b.subphases.get(s) is not None])
                     for s in subnames}
        wall = _median([b.wall_s for b in boots if b.wall_s is not None])
        rows.append(Row(model, key, phases, {k: v for k, v in subphases.items() if v is not None},
                        wall, _features_for(boots[0], features, cache), len(boots)))
    return Dataset(rows, not_measured, inputs)


def read_inputs(paths: list[str]) -> list[BootResult]:
    """Every boot of the given result files (``harness.schema.read_results``, median rounds)."""
    out: list[BootResult] = []
    for p in paths:
        out.extend(read_results(p))
    return out
