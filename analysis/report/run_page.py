"""The run page (``render_run``): where each cell's seconds went, each cell's median per
phase, what each axis changes, every round, the median round's timeline, the machine, the
versions and the command. The markup is ``templates/report_run.html.j2``; this module says
what goes in it, as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.dataset import info_identity
from analysis.knobs import knob_effects, knob_rows, machine_label
from analysis.report.page import command_facts, machine_rows, number_text, render_page
from analysis.report.plots import fig_effect, fig_page_cache, fig_phases, fig_rounds, fig_timeline
from analysis.report.run_cells import (
    RESIDUAL,
    axis_effects,
    axis_names,
    load_run,
    measured_rounds,
    phase_median,
    varying_axes,
)
from document import RunCell, read_cells
from document.boot_result import PHASE_NAMES
from document.evidence import WeightsFacts

__all__ = ["render_run"]

_STATES = ("measured", "failed", "skipped")


def _cell_table(cells: list[RunCell], axes: list[str]) -> dict[str, Any]:
    """The table of cells: ``headers`` and a row per cell (its id and label, state, rounds,
    each phase's value with its note, then the residual, the ready time, the compile cache
    seen, the weights' rate, its part of the storage floor and the reason)."""
    from analysis.table import SHORT

    headers = ["cell", "state", "rounds", *(SHORT[p] for p in PHASE_NAMES), RESIDUAL, "ready s",
               "compile cache seen", "weights GB/s", "of floor", "reason / checks failed"]
    rows = []
    for c in cells:
        r = c.headline
        w = r.evidence.weights or WeightsFacts()
        n_ok = len(measured_rounds(c.rounds))
        # A measured cell: the median over its measured rounds (the comparison's median);
        # a failed or skipped one: its own round, up to where it stopped.
        value = ((lambda m: phase_median(c, m)) if n_ok else
                 (lambda m: r.residual_s if m == RESIDUAL else
                  r.wall_s if m == "total" else r.phases.get(m)))
        rows.append({
            "id": c.id, "label": c.label(axes), "failing": c.outcome == "failed",
            "state": c.state if c.outcome == c.state else "failed (checks)",
            "rounds": f"{n_ok}/{len(c.rounds)} measured",
            "phases": [(number_text(value(p)), r.phase_notes.get(p)) for p in PHASE_NAMES],
            "rest": [number_text(value(RESIDUAL)), number_text(value("total"), "{:.1f}"),
                     r.compile_cache_observed, number_text(w.load_gbps),
                     number_text(w.fraction_of_floor, "{:.0%}"), c.reason or ""],
        })
    return {"headers": headers, "rows": rows}


def _witnesses(cells: list[RunCell]) -> list[dict[str, Any]]:
    """Per cell whose median round two witnesses time: its rows (harness.witness_agreement)."""
    from harness.witness_agreement import witness_rows

    out = []
    for c in cells:
        rows = witness_rows(c.headline)
        if rows:
            out.append({"id": c.id, "disagree": any(r["agrees"] is False for r in rows),
                        "rows": [[r["name"], number_text(r["probes_s"]),
                                  number_text(r["log_s"]), number_text(r["spans_s"]),
                                  "yes" if r["agrees"] else "NO"] for r in rows],
                        "classes": ["" if r["agrees"] else "failing" for r in rows]})
    return out


def _cache_layers(cells: list[RunCell]) -> list[dict[str, Any]]:
    """Per cell whose median round observed its compile-cache layers: a row per layer that
    applied (state, reused from the other place where relocated, why, the evidence)."""
    out = []
    for c in cells:
        seen = c.headline.evidence.compile_cache_layers
        if seen is None or not seen.layers:
            continue
        rows = [[name, o.state, "-" if o.reused is None else "yes" if o.reused else "NO",
                 "; ".join(x for x in [o.reason or "", *o.key_differs] if x) or "-",
                 "; ".join(o.evidence[:3] or [f"{k}={v}" for k, v in o.counts.items()])
                 or "-"]
                for name, o in seen.layers.items() if o.state != "not_applicable"]
        if not rows:
            continue
        moved = seen.relocation

        def place(at: str | None, cwd: str | None) -> str:
            return f"{at or 'an unrecorded path'}" + (f" (cwd {cwd})" if cwd else "")
        out.append({"id": c.id, "observed": c.headline.compile_cache_observed or "-",
                    "relocated": None if moved is None else
                    f"built at {place(moved.built_at, moved.built_cwd)}, seen at "
                    f"{place(moved.seen_at, moved.seen_cwd)}",
                    "rows": rows})
    return out


def _spans(cells: list[RunCell]) -> list[dict[str, Any]]:
    """Per cell whose median round carries vLLM's spans: the phases they witness, the names
    no mapping knows (kept, listed), and PR #49037's six-phase view."""
    out = []
    for c in cells:
        sp = c.headline.evidence.span_phases
        if sp is None:
            continue
        out.append({
            "id": c.id, "map_since": sp.map_since, "unmapped": sp.unmapped,
            "rows": [[p, number_text(v, "{:.3f}"), sp.notes.get(p, "")]
                     for p, v in sp.phases.items()],
            "pr49037": [[name, number_text(v.get("duration_s"), "{:.3f}"),
                         "missing" if v.get("missing") else ""]
                        for name, v in sp.pr49037.items()]})
    return out


def _verdict(doc: Any, cells: list[RunCell]) -> dict[str, str]:
    """The run's own verdict on the cells it holds, as ``coldstart check`` judges them
    (check also holds the run to every cell it selected)."""
    failed = [c.id for c in cells if c.outcome == "failed"]
    problems = [p for c in cells for p in c.measurement_problems()]
    skipped = [c.id for c in cells if c.outcome == "skipped"]
    if failed or problems:
        why = []
        if failed:
            why.append(f"{len(failed)} cell(s) failed or failed their checks: "
                       + ", ".join(failed[:3]) + (" ..." if len(failed) > 3 else ""))
        why += problems[:3]
        return {"verdict": "FAILED", "css": "failed", "why": "; ".join(why)}
    if skipped or not cells or not (doc and doc.machine_info):
        return {"verdict": "INCONCLUSIVE", "css": "skipped",
                "why": f"{len(skipped)} cell(s) skipped: no evidence either way" if skipped
                else "no cell in the run" if not cells
                else "the run records no machine facts (machine_info)"}
    return {"verdict": "pass", "css": "measured",
            "why": "every cell measured, with every phase that applies, and its checks passed"}


def _subphase_rows(c: RunCell) -> list[tuple[str, str, str, str]]:
    """The median round's phases, each followed by its sub-phases, then the residual (with
    its parts) and the wall time: (kind, name, seconds, note); kind is ``phase`` (in bold),
    ``sub`` (indented) or ``plain``."""
    r = c.headline
    rows = []
    for p in PHASE_NAMES:
        rows.append(("phase", p, number_text(r.phases.get(p), "{:.3f}"),
                     r.phase_notes.get(p, "")))
        for name, v in r.subphases.items():
            if name.split(".")[0] == p:
                rows.append(("sub", name.split(".", 1)[1], number_text(v, "{:.3f}"), ""))
    rows.append(("plain", RESIDUAL, number_text(r.residual_s, "{:.3f}"), ", ".join(
        f"{k} {v:.3f} s" for k, v in r.evidence.residual_parts_s.items())))
    rows.append(("phase", "wall", number_text(r.wall_s, "{:.3f}"), ""))
    return rows


def _effects(cells: list[RunCell], axes: list[str]) -> list[dict[str, Any]]:
    """Per axis and value, the plot of what it changes and its table of matched pairs (each
    metric's medians of rounds, base → other)."""
    metrics = [*PHASE_NAMES, RESIDUAL, "total"]
    out = []
    for axis, base, other, pairs in axis_effects(cells):
        rows = []
        for a, b in pairs:
            rows.append([a.label([x for x in axes if x != axis]) or a.id] + [
                "-" if phase_median(a, m) is None or phase_median(b, m) is None else
                f"{phase_median(a, m):.2f} → {phase_median(b, m):.2f}" for m in metrics])
        out.append({"axis": axis, "base": base, "other": other,
                    "plot": fig_effect(axis, base, other, pairs, axes),
                    "page_cache_plot": fig_page_cache(pairs, axes) if axis == "page_cache"
                    else None,
                    "headers": ["cell (other axes)", *metrics], "rows": rows})
    return out


def _knobs(doc: Any, cells: list[RunCell], order: list[str]) -> dict[str, Any]:
    """What each knob (an engine-argument or variable axis) saves, ranked (analysis.knobs),
    each value against the knob's first value in the run's own order (``order``: the cell
    ids as the document holds them), as ``coldstart fit`` states it."""
    cells = sorted(cells, key=lambda c: order.index(c.id) if c.id in order else len(order))
    platforms = sorted({c.headline.platform for c in cells if c.headline.platform})
    machine = machine_label(info_identity(doc.machine_info, platforms)) if doc else None
    # A cell that failed its checks measured something else than its cell: not evidence.
    judged = [c for c in cells if not c.checks_failed]
    rows = knob_rows(knob_effects([r for c in judged for r in c.rounds]))
    return {"machine": machine or "the machine of this run",
            "left_out": [c.id for c in cells if c.checks_failed],
            "headers": ["rank", "knob", "cells", "ready", "interval s", "verdict",
                        "margin s", "rounds",
                        "phases that moved"],
            "rows": [[str(r["rank"]), f"{r['knob']}={r['value']} (vs {r['reference']})",
                      r["cells"], f"{r['ready_change_s']:+.1f} s",
                      "-" if r["interval_s"] is None else
                      f"[{r['interval_s'][0]:+.1f}, {r['interval_s'][1]:+.1f}]", r["verdict"],
                      f"{r['margin_s']:.1f}", f"{r['rounds'][0]} vs {r['rounds'][1]}",
                      ", ".join(f"{m} {v['change_s']:+.1f} s" for m, v in
                                r["phases_s"].items() if v["verdict"] != "no change") or "-"]
                     for r in rows]}


def render_run(path: str | Path) -> str:
    """The run page's HTML."""
    doc, cells = load_run(path)
    axes = varying_axes(cells) or ["model"]
    common = [f"{a}={cells[0].axes[a]}" for a in axis_names(cells)
              if a not in axes and a in cells[0].axes]
    versions = sorted({c.headline.vllm_version for c in cells if c.headline.vllm_version})
    return render_page(
        "report_run.html.j2",
        title=f"vllm-coldstart: {Path(path).name}",
        versions=", ".join(versions) or "unknown",
        n_cells=len(cells),
        states=[(s, sum(c.outcome == s for c in cells)) for s in _STATES],
        failed_checks=sum(c.outcome != c.state for c in cells),
        common=" ".join(common),
        phases_plot=fig_phases(cells, axes),
        cell_table=_cell_table(cells, axes),
        subphases=[{"id": c.id, "state": c.state, "rows": _subphase_rows(c)} for c in cells],
        witnesses=_witnesses(cells),
        cache_layers=_cache_layers(cells),
        spans=_spans(cells),
        verdict=_verdict(doc, cells),
        effects=_effects(cells, axes),
        knobs=_knobs(doc, cells, [c.id for c in read_cells(path)[1]]),
        rounds_plot=fig_rounds(cells, axes),
        timelines=[{"id": c.id, "plot": fig_timeline(c.headline, c.id)
                    if c.headline.events else None,
                    "spans": c.headline.source == "spans"} for c in cells],
        machine=[list(row) for row in machine_rows(doc, cells)],
        run_command=command_facts(doc, cells),
    )
