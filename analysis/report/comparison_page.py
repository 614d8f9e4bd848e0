"""The comparison page (``render_comparison``): per cell and phase, base vs new with their
rounds, the change and ``analysis.compare``'s verdict (its code decides, with the same
options; the page only shows), the changes that fail the gate first, where each phase's
change went, then both runs' machines and commands. The markup is
``templates/report_comparison.html.j2``; this module says what goes in it, as text.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from analysis.report.page import command_facts, machine_rows, number_text, render_page
from analysis.report.plots import fig_compare, fig_intervals
from document import RunCell, cell_axes
from document.boot_result import BootResult

__all__ = ["render_comparison"]

# The order of the verdicts on the page, the gravest first.
_STATUS_ORDER = ("failed in new", "failures grew", "regression", "checks failed",
                 "only in base", "not measured in new", "not measured", "skips grew",
                 "metric lost", "possible regression", "not bounded", "only in new",
                 "improvement", "within noise", "fixed in new", "no change")
_RANK = {s: i for i, s in enumerate(_STATUS_ORDER)}


def _status_class(status: str, failing: bool) -> str:
    from analysis.changes import INCONCLUSIVE

    if failing:
        return "failing"
    if "possible" in status or status in INCONCLUSIVE:
        return "possible"
    if status in ("improvement", "fixed in new"):
        return "improvement"
    return ""


def _short_names(changes: list[Any]) -> tuple[dict[str, str], str]:
    """Each cell named by the fields of its id that differ between cells (the full id is on
    hover), and the fields every cell shares, as one line."""
    from analysis.metrics import CELL_FIELDS

    field_start = re.compile("-(?=(?:" + "|".join(CELL_FIELDS) + ")=)")
    parts = {c.cell: field_start.split(c.cell) for c in changes}
    common = set.intersection(*(set(v) for v in parts.values())) if parts else set()
    short = {k: "-".join(x for x in v if x not in common) or k for k, v in parts.items()}
    shared = " ".join(x for x in next(iter(parts.values())) if x in common) if common else ""
    return short, shared


def _change_rows(changes: list[Any], failing_ids: set[int], short: dict[str, str],
                 shared_note: str | None) -> list[dict[str, Any]]:
    """The table's rows, the changes that fail the gate first, then by verdict and size."""
    ranked = sorted(changes, key=lambda c: (id(c) not in failing_ids, _RANK.get(c.status, 99),
                                            -abs(c.change_rel or 0)))
    rows = []
    for c in ranked:
        fails = id(c) in failing_ids
        rows.append({"cell": c.cell, "short": short[c.cell],
                     "css_class": _status_class(c.status, fails), "texts": [
                         c.metric, number_text(c.base_median_s), number_text(c.new_median_s),
                         "-" if c.change_s is None else f"{c.change_s:+.2f} s",
                         "-" if c.change_rel is None or not math.isfinite(c.change_rel)
                         else f"{100 * c.change_rel:+.1f} %", _interval(c),
                         number_text(c.margin_s), f"{c.n_base}/{c.n_new}",
                         number_text(c.p_value, "{:.3f}"),
                         c.status + (" (fails the gate)" if fails else ""),
                         "" if shared_note else c.note]})
    return rows


def _interval(c: Any) -> str:
    from analysis.compare import interval_text

    return interval_text(c)


def _detail_tables(details: list[Any], short: dict[str, str]) -> list[dict[str, Any]]:
    """Per cell, its sub-phases' changes, each phase's part in no sub-phase and the
    residual's: rows of (name, in no sub-phase, base median, new median, change)."""
    from analysis.metrics import NO_SUBPHASE

    out = []
    for cell in dict.fromkeys(d.cell for d in details):
        rows = []
        for d in (d for d in details if d.cell == cell):
            rows.append((d.part if d.phase is None else f"{d.phase}: {d.part}",
                         d.part == NO_SUBPHASE, number_text(d.base_median_s, "{:.3f}"),
                         number_text(d.new_median_s, "{:.3f}"), f"{d.change_s:+.3f}"))
        out.append({"cell": cell, "short": short.get(cell, cell), "rows": rows})
    return out


def _round_plots(base: list[BootResult], new: list[BootResult],
                 changes: list[Any]) -> list[tuple[str, Any]]:
    """(cell, plot of its base and new rounds) for each cell measured on both sides, the
    gravest verdict first."""
    from analysis.metrics import cell_of_boot

    by_cell: dict[str, tuple[list[BootResult], list[BootResult]]] = {}
    for side, boots in ((0, base), (1, new)):
        for b in boots:
            if b.state == "measured":
                by_cell.setdefault(cell_of_boot(b), ([], []))[side].append(b)
    out = []
    for cell in sorted(by_cell, key=lambda k: min(
            (_RANK.get(c.status, 99) for c in changes if c.cell == k), default=99)):
        b_rounds, n_rounds = by_cell[cell]
        if b_rounds and n_rounds:
            statuses = {c.metric: c.status for c in changes if c.cell == cell}
            out.append((cell, fig_compare(cell, b_rounds, n_rounds, statuses)))
    return out


def render_comparison(base_path: str | Path, new_path: str | Path, *, threshold: float = 0.10,
                      floor_s: float = 0.05, alpha: float = 0.05, strict: bool = False,
                      allow_missing: bool = False, force: bool = False,
                      accept_inconclusive: bool = False, warn: Any = None) -> tuple[str, int]:
    """The comparison page's HTML and the exit code ``analysis.compare`` would give.

    The runs are read, compared and judged by ``analysis.compare.decide`` (SchemaError: an
    empty run, no cell in common); ``warn`` (a callable) gets its warning line where some
    cells are on one side only, which the page states too. The verdict heads the page.
    """
    from analysis import compare
    from analysis.changes import failing_changes
    from analysis.verdict import capped, verdict_lines

    decided = compare.decide(base_path, new_path, threshold=threshold, noise_floor_s=floor_s,
                             alpha=alpha, strict=strict, allow_missing=allow_missing,
                             accept_inconclusive=accept_inconclusive,
                             accept_machine_difference=force)
    run, changes, details, verdict = (decided.prepared, decided.changes, decided.details,
                                      decided.verdict)
    if run.overlap_warning and warn is not None:
        warn(run.overlap_warning)
    failing = failing_changes(changes, strict=strict)
    options = (f"--threshold {threshold} --noise-floor-s {floor_s} --alpha {alpha}"
               + (" --strict" if strict else "") + (" --allow-missing" if allow_missing else "")
               + (" --accept-machine-difference" if force else "")
               + (" --accept-inconclusive" if accept_inconclusive else ""))
    short, shared_fields = _short_names(changes)
    notes = {c.note for c in changes}
    shared_note = notes.pop() if len(notes) == 1 else None
    # Both runs' machines, versions and commits, row by row, the rows that differ marked.
    sides = []
    for doc, boots in ((run.base_doc, run.base), (run.new_doc, run.new)):
        cells = [RunCell(compare.cell_of_boot(b), cell_axes(b), b, [b]) for b in boots]
        sides.append((command_facts(doc, cells), dict(machine_rows(doc, cells))))
    keys = list(dict.fromkeys([*sides[0][1], *sides[1][1]]))
    machine = [[k, sides[0][1].get(k, "-"), sides[1][1].get(k, "-")] for k in keys]
    # What the verdict checked of the machines, side by side (analysis.dataset's identity).
    identity = [[k, "-" if run.meta_base.get(k) is None else str(run.meta_base[k]),
                 "-" if run.meta_new.get(k) is None else str(run.meta_new[k])]
                for k in run.meta_base]
    page = render_page(
        "report_comparison.html.j2",
        title=f"vllm-coldstart: {Path(base_path).name} vs {Path(new_path).name}",
        base_path=str(base_path), new_path=str(new_path),
        v_base=compare.vllm_versions(run.base_doc, run.base),
        v_new=compare.vllm_versions(run.new_doc, run.new),
        verdict_class={"pass": "pass", "regression": "fail"}.get(verdict.verdict,
                                                                 "inconclusive"),
        verdict=verdict_lines(verdict)[0],
        reasons=capped(verdict.reasons), accepted=capped(verdict.accepted),
        decide_with=verdict.decide_with, decide_note=verdict.decide_note or "",
        rule=verdict.rule, options=options,
        disagree="; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in run.disagree.items()),
        accepted_difference=force,
        identity=identity,
        identity_classes=["possible" if r[0] in run.disagree else "" for r in identity],
        unchecked=", ".join(run.unchecked),
        overlap_warning=run.overlap_warning or "",
        shared_fields=shared_fields, shared_note=shared_note or "",
        change_rows=_change_rows(changes, {id(c) for c in failing}, short, shared_note),
        went=[{"cell": cell, "short": short.get(cell, cell), "line": line}
              for (cell, _), line in compare.where_changes_went(changes, details).items()],
        detail_tables=_detail_tables(details, short),
        round_plots=_round_plots(run.base, run.new, changes),
        intervals_plot=fig_intervals(changes, short),
        machine=machine, machine_classes=["possible" if r[1] != r[2] else "" for r in machine],
        base_command=sides[0][0], new_command=sides[1][0],
        witnesses=[(side, cell, "; ".join(lines)) for side, cells in
                   compare.witness_disagreements(run).items() for cell, lines in cells.items()],
    )
    return page, verdict.exit_code
