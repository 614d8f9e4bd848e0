"""A run as the report's cells: each cell's axes, its headline (median) round and every round,
in the order the pages show them, and the pairs of cells that differ in one axis alone.

A result document (pytest-benchmark's, with its ``unrecorded`` cells), one BootResult or a
list of them all read as cells; ``analysis.report_run`` draws them, and the comparison page
states its runs' machines with them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.evidence import WeightsFacts
from harness.schema import (
    DOCUMENT_KEY,
    BootResult,
    SchemaError,
    cell_id,
    read_json,
    read_results,
    validation_summary,
)

__all__ = ["AXES", "AXIS_ORDER", "RESIDUAL", "Cell", "axis_effects", "axis_names",
           "cell_axes", "load_run", "measured_rounds", "phase_median", "storage_floor_s",
           "varying_axes"]

AXES = ("model", "loader", "compile_cache", "page_cache", "entrypoint")
RESIDUAL = "residual"
# The order in which an axis's values are compared: the first is the baseline.
AXIS_ORDER = {"compile_cache": ("cold", "warm", "off"), "page_cache": ("warm", "evicted"),
              "loader": ("safetensors", "runai_streamer", "tensorizer"),
              "entrypoint": ("offline", "serve")}


@dataclass
class Cell:
    """One cell of a run: its axes, its headline (median) round and every round."""

    id: str
    axes: dict[str, str]
    headline: BootResult
    rounds: list[BootResult]
    checks_failed: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        return self.headline.state

    @property
    def reason(self) -> str | None:
        r = self.headline
        return r.error or r.skip_reason or ("; ".join(self.checks_failed) or None)

    def label(self, axes: list[str]) -> str:
        """The cell by ``axes`` (those that vary across the run), whole: never cut, so two
        cells never read the same."""
        return " · ".join(f"{a}={self.axes.get(a, '-')}" for a in axes) or self.id


def _boot(data: Any, where: str) -> BootResult:
    fields = {k: v for k, v in data.items() if k in BootResult.model_fields}
    try:
        return BootResult.model_validate(fields)
    except Exception as exc:
        raise SchemaError(f"{where}: not a BootResult: {validation_summary(exc)}") from exc


def cell_axes(result: BootResult, params: dict[str, Any] | None = None) -> dict[str, str]:
    """The axes of the cell ``result`` is a round of: the five it has, then the run's
    matrix's own (engine arguments, ...), as its test id has them."""
    out = {a: str(getattr(result, a)) for a in AXES if getattr(result, a) is not None}
    out.update({str(k): str(v) for k, v in (params or {}).items() if k not in out})
    return out


def load_run(path: str | Path) -> tuple[dict[str, Any], list[Cell]]:
    """A result document (or one BootResult, or a list of them) as its cells."""
    read_results(path, all_rounds=True)  # every round valid, or one line saying what is not
    data = read_json(path)
    cells: list[Cell] = []
    if isinstance(data, list) or "benchmarks" not in data:
        boots = data if isinstance(data, list) else [data]
        for i, d in enumerate(boots):
            r = _boot(d, f"{path}[{i}]")
            cells.append(Cell(cell_id(cell_axes(r)) or r.model, cell_axes(r), r, [r]))
        return ({} if isinstance(data, list) else {"single_boot": True}), cells
    for i, bench in enumerate(data.get("benchmarks") or []):
        extra = bench["extra_info"]
        head = _boot(extra, f"{path}:{bench.get('name', i)}")
        rounds = [_boot(r, f"{path}:{bench.get('name', i)} round {j}")
                  for j, r in enumerate(extra.get("rounds") or [])] or [head]
        params = bench.get("params") if isinstance(bench.get("params"), dict) else {}
        cid = str(bench.get("param") or cell_id(params) or bench.get("name", i))
        cells.append(Cell(cid, cell_axes(head, params), head, rounds,
                          list(extra.get("checks_failed") or [])))
    for i, d in enumerate((data.get(DOCUMENT_KEY) or {}).get("unrecorded") or []):
        r = _boot(d, f"{path}:unrecorded[{i}]")
        cells.append(Cell(cell_id(cell_axes(r)), cell_axes(r), r, [r],
                          [str(c) for c in d.get("checks_failed") or []]))
    if not cells:
        raise SchemaError(f"{path}: no cell in it (no benchmark, nothing unrecorded)")
    return data, sorted(cells, key=lambda c: tuple(_value_rank(a, c.axes.get(a, ""))
                                                   for a in axis_names(cells)))


def _value_rank(axis: str, value: str) -> tuple[int, str]:
    """Where ``value`` of ``axis`` sorts: the baseline first (``AXIS_ORDER``), then by name."""
    order = AXIS_ORDER.get(axis, ())
    return (order.index(value) if value in order else 99, value)


def axis_names(cells: list[Cell]) -> list[str]:
    """Every axis some cell has: the five first, then the matrix's own by name."""
    names = list(AXES) + sorted({a for c in cells for a in c.axes} - set(AXES))
    return [a for a in names if any(a in c.axes for c in cells)]


def varying_axes(cells: list[Cell]) -> list[str]:
    """The axes whose value is not the same in every cell: what a cell's label names."""
    return [a for a in axis_names(cells) if len({c.axes.get(a) for c in cells}) > 1]


def measured_rounds(rounds: list[BootResult]) -> list[BootResult]:
    return [r for r in rounds if r.state == "measured"]


def phase_median(cell: Cell, phase: str) -> float | None:
    """A phase's (or ``residual``'s, ``total``'s) median over the cell's measured rounds:
    ``analysis.compare``'s own, so the run page and the comparison state the same median."""
    from analysis.compare import median_of_rounds

    return median_of_rounds(cell.rounds, phase)


def _pairs(cells: list[Cell], axis: str, base: str, other: str) -> list[tuple[Cell, Cell]]:
    """Measured cells that differ in ``axis`` alone: (base value, other value)."""
    def rest(c: Cell) -> tuple:
        return tuple((a, v) for a, v in sorted(c.axes.items()) if a != axis)

    bases = {rest(c): c for c in cells if c.axes.get(axis) == base and c.state == "measured"}
    return [(bases[rest(c)], c) for c in cells if c.axes.get(axis) == other
            and c.state == "measured" and rest(c) in bases]


def axis_effects(cells: list[Cell]) -> list[tuple[str, str, str, list[tuple[Cell, Cell]]]]:
    """(axis, base value, other value, matched cell pairs) for every axis with a pair."""
    out = []
    for axis in axis_names(cells):
        values = sorted({c.axes[axis] for c in cells if axis in c.axes},
                        key=lambda v: _value_rank(axis, v))
        for other in values[1:]:
            pairs = _pairs(cells, axis, values[0], other)
            if pairs:
                out.append((axis, values[0], other, pairs))
    return out


def storage_floor_s(cell: Cell) -> float | None:
    """What a plain sequential read of the cell's weight files took (the storage floor)."""
    w = cell.headline.evidence.weights or WeightsFacts()
    gbps, size = w.storage_floor_gbps, w.file_bytes
    return size / (gbps * 1e9) if gbps and size else None
