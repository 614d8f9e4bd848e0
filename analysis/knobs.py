"""What each knob of a run saves or costs, per phase, with compare's three-verdict statistics.

A knob is an axis a matrix file varies beyond the five every cell has: an engine argument
(``max_model_len``) or an environment variable (``VLLM_USE_AOT_COMPILE``), as its cells'
``BootResult.axes`` hold it. For each knob and each of its values against the first value
the run has of it (the reference), the cells that differ in that knob alone are paired
(``compile_cache=warm page_cache=warm`` with ``VLLM_USE_AOT_COMPILE`` 1 and 0), and each pair
is held to the rule ``analysis.compare`` gates on (``analysis.changes.compare_results``: the
interval of the change at the levels ``analysis.bounds`` states, against the margin, the
larger of the threshold x the reference's median and the noise floor): improvement /
regression where the interval is beyond the margin, no change where it is bounded inside it,
possible regression or not bounded where the rounds cannot tell. The effects are ranked by what they save in time to ready, on the run's own
machine: another machine's seconds differ. Imports no vLLM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analysis.changes import INCONCLUSIVE, CellChange, compare_results
from analysis.metrics import TOTAL, cell_of_boot
from document import cell_axes
from document.boot_result import PHASE_NAMES, BootResult

__all__ = ["KnobEffect", "knob_effects", "knob_lines", "knob_rows", "machine_label"]

# The verdicts that say the rounds decided: a change confirmed beyond the margin, or one
# bounded inside it.
DECIDED = frozenset({"improvement", "regression", "no change"})


@dataclass
class KnobEffect:
    """One knob value against the reference value, in one pairing of cells."""

    knob: str
    value: Any
    reference: Any
    context: str  # the cells' other axes, as their id names them
    total: CellChange  # time to ready (launch to ready, the rounds' wall_s)
    phases: dict[str, CellChange] = field(default_factory=dict)
    other: list[CellChange] = field(default_factory=list)  # failures, skips, checks

    @property
    def saves_s(self) -> float:
        """Seconds of time to ready this value saves (negative: costs)."""
        return -(self.total.change_s or 0.0)

    @property
    def verdict(self) -> str:
        return self.total.status

    def line(self, machine: str | None = None) -> str:
        """``VLLM_USE_AOT_COMPILE=0 (vs 1), compile_cache=warm page_cache=warm: ready
        -36.1 s [-38.0, -34.2] (torch_compile -37.0 s): improvement against a margin of 6.2 s,
        5 vs 5 rounds; on this machine``."""
        t = self.total
        moved = sorted((c for c in self.phases.values() if c.change_s is not None
                        and c.status != "no change"), key=lambda c: -abs(c.change_s or 0))
        parts = ", ".join(f"{c.metric} {c.change_s:+.1f} s" for c in moved[:3])
        interval = ("" if t.interval_lo_s is None or t.interval_hi_s is None else
                    f" [{t.interval_lo_s:+.1f}, {t.interval_hi_s:+.1f}]")
        where = f"on {machine}" if machine else "on this run's machine"
        note = f" ({t.note})" if t.note and t.status not in DECIDED else ""
        return (f"{self.knob}={self.value} (vs {self.reference}), {self.context}: ready "
                f"{t.change_s:+.1f} s{interval}" + (f" ({parts})" if parts else "")
                + f": {t.status} against a margin of {t.margin_s:.1f} s, "
                f"{t.n_base} vs {t.n_new} rounds{note}; {where}")


def _knobs(boots: list[BootResult]) -> dict[str, list[Any]]:
    """Each axis beyond the five, with its values in the order the run has them."""
    values: dict[str, list[Any]] = {}
    for b in boots:
        for k, v in b.axes.items():
            if v not in values.setdefault(k, []):
                values[k].append(v)
    return {k: v for k, v in values.items() if len(v) > 1}


def _labels(boots: list[BootResult]) -> dict[str, str]:
    """Each cell id and its axes that vary in the run (``compile_cache=warm``), or its
    model where none does."""
    axes = {b_id: cell_axes(b) for b in boots if (b_id := cell_of_boot(b))}
    varying = [k for k in dict.fromkeys(k for a in axes.values() for k in a)
               if len({str(a.get(k)) for a in axes.values()}) > 1]
    return {i: " ".join(f"{k}={a.get(k)}" for k in varying) or f"model={a.get('model')}"
            for i, a in axes.items()}


def _without(b: BootResult, knob: str) -> BootResult:
    return b.model_copy(update={"axes": {k: v for k, v in b.axes.items() if k != knob}})


def knob_effects(boots: list[BootResult], *, threshold: float = 0.10, floor_s: float = 0.05,
                 alpha: float = 0.05) -> list[KnobEffect]:
    """Every knob value's effect in every pairing of cells, ranked: decided savings first,
    largest first, then the rest by what they save. ``boots`` are every round of the run
    (``read_results(..., all_rounds=True)``)."""
    out: list[KnobEffect] = []
    for knob, values in _knobs(boots).items():
        reference = values[0]
        base = [_without(b, knob) for b in boots if b.axes.get(knob) == reference]
        for value in values[1:]:
            new = [_without(b, knob) for b in boots if b.axes.get(knob) == value]
            shared = {cell_of_boot(b) for b in base} & {cell_of_boot(b) for b in new}
            if not shared:
                continue
            labels = _labels(base + new)
            changes = compare_results([b for b in base if cell_of_boot(b) in shared],
                                      [b for b in new if cell_of_boot(b) in shared],
                                      threshold=threshold, floor_s=floor_s, alpha=alpha)
            for cell in sorted(shared):
                mine = [c for c in changes if c.cell == cell]
                total = next((c for c in mine if c.metric == TOTAL), None)
                if total is None or total.change_s is None:
                    continue
                out.append(KnobEffect(
                    knob, value, reference, labels.get(cell, cell), total,
                    phases={c.metric: c for c in mine if c.metric in PHASE_NAMES},
                    other=[c for c in mine if c.metric not in (*PHASE_NAMES, TOTAL)]))
    return sorted(out, key=lambda e: (e.verdict not in DECIDED or e.verdict == "no change",
                                      -e.saves_s))


def knob_lines(effects: list[KnobEffect], machine: str | None = None) -> list[str]:
    """One ranked line per effect (``KnobEffect.line``)."""
    return [f"{i}. {e.line(machine)}" for i, e in enumerate(effects, 1)]


def knob_rows(effects: list[KnobEffect]) -> list[dict[str, Any]]:
    """The effects as plain records (the report's table, ``coldstart fit``'s JSON)."""
    rows = []
    for rank, e in enumerate(effects, 1):
        t = e.total
        rows.append({
            "rank": rank, "knob": e.knob, "value": e.value, "reference": e.reference,
            "cells": e.context, "ready_change_s": t.change_s, "saves_s": e.saves_s,
            "verdict": t.status, "decided": t.status in DECIDED,
            "inconclusive": t.status in INCONCLUSIVE or t.status.startswith("possible"),
            "interval_s": (None if t.interval_lo_s is None else
                           [t.interval_lo_s, t.interval_hi_s]),
            "margin_s": t.margin_s, "alpha_lo": t.alpha_lo, "alpha_hi": t.alpha_hi,
            "p_value": t.p_value, "p_adjusted": t.p_adjusted, "family": t.family,
            "rounds": [t.n_base, t.n_new], "note": t.note,
            "phases_s": {m: {"change_s": c.change_s, "verdict": c.status}
                         for m, c in e.phases.items() if c.change_s is not None}})
    return rows


def machine_label(identity: dict[str, Any] | None) -> str | None:
    """The machine a run's seconds hold on, in words (``AMD EPYC 7B13, 2 CPUs, cpu``), from a
    machine identity (``analysis.dataset.info_identity``); None where it says nothing."""
    if not identity:
        return None
    count = identity.get("cpu_count")
    parts = [identity.get("cpu"), f"{count} CPUs" if count else None, identity.get("gpu"),
             identity.get("platform")]
    return ", ".join(str(p) for p in parts if p) or None
