"""A run as the report's cells: each cell's axes, its headline (median) round and every round,
in the order the pages show them, and the pairs of cells that differ in one axis alone.

A result document (pytest-benchmark's, with its ``unrecorded`` cells), one BootResult or a
list of them all read as cells; ``analysis.report.run_page`` draws them, and the comparison page
states its runs' machines with them.
"""

from __future__ import annotations

from pathlib import Path

from document import CELL_AXES as AXES
from document import RunCell, RunDocument, read_cells
from document.boot_result import BootResult, SchemaError
from document.evidence import WeightsFacts

__all__ = ["AXIS_ORDER", "RESIDUAL", "axis_effects", "axis_names", "load_run", "measured_rounds",
           "phase_median", "storage_floor_s", "varying_axes"]

RESIDUAL = "residual"
# The order in which an axis's values are compared: the first is the baseline.
AXIS_ORDER = {"compile_cache": ("cold", "warm", "off"), "page_cache": ("warm", "evicted"),
              "loader": ("safetensors", "runai_streamer", "tensorizer"),
              "entrypoint": ("offline", "serve")}


def load_run(path: str | Path) -> tuple[RunDocument | None, list[RunCell]]:
    """A result document (None for one BootResult or a list of them) and its cells, in the
    order the pages show them."""
    doc, cells = read_cells(path)
    if not cells:
        raise SchemaError(f"{path}: no cell in it (no benchmark, nothing unrecorded)")
    return doc, sorted(cells, key=lambda c: tuple(_value_rank(a, c.axes.get(a, ""))
                                                  for a in axis_names(cells)))


def _value_rank(axis: str, value: str) -> tuple[int, str]:
    """Where ``value`` of ``axis`` sorts: the baseline first (``AXIS_ORDER``), then by name."""
    order = AXIS_ORDER.get(axis, ())
    return (order.index(value) if value in order else 99, value)


def axis_names(cells: list[RunCell]) -> list[str]:
    """Every axis some cell has: the five first, then the matrix's own by name."""
    names = list(AXES) + sorted({a for c in cells for a in c.axes} - set(AXES))
    return [a for a in names if any(a in c.axes for c in cells)]


def varying_axes(cells: list[RunCell]) -> list[str]:
    """The axes whose value is not the same in every cell: what a cell's label names."""
    return [a for a in axis_names(cells) if len({c.axes.get(a) for c in cells}) > 1]


def measured_rounds(rounds: list[BootResult]) -> list[BootResult]:
    return [r for r in rounds if r.state == "measured"]


def phase_median(cell: RunCell, phase: str) -> float | None:
    """A phase's (or ``residual``'s, ``total``'s) median over the cell's measured rounds:
    ``analysis.compare``'s own, so the run page and the comparison state the same median."""
    from analysis.metrics import median_of_rounds

    return median_of_rounds(cell.rounds, phase)


def _pairs(cells: list[RunCell], axis: str, base: str, other: str) -> list[tuple[RunCell, RunCell]]:
    """Measured cells that differ in ``axis`` alone: (base value, other value)."""
    def rest(c: RunCell) -> tuple:
        return tuple((a, v) for a, v in sorted(c.axes.items()) if a != axis)

    bases = {rest(c): c for c in cells if c.axes.get(axis) == base and c.state == "measured"}
    return [(bases[rest(c)], c) for c in cells if c.axes.get(axis) == other
            and c.state == "measured" and rest(c) in bases]


def axis_effects(cells: list[RunCell]) -> list[tuple[str, str, str, list[tuple[RunCell, RunCell]]]]:
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


def storage_floor_s(cell: RunCell) -> float | None:
    """What a plain sequential read of the cell's weight files took (the storage floor)."""
    w = cell.headline.evidence.weights or WeightsFacts()
    gbps, size = w.storage_floor_gbps, w.file_bytes
    return size / (gbps * 1e9) if gbps and size else None
