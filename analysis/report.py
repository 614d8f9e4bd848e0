"""python -m analysis.report: a run, or two runs compared, as one self-contained HTML page.

    python -m analysis.report RUN.json [-o report.html]
    python -m analysis.report BASE.json NEW.json [-o compare.html] [compare's options]

The run page: where each cell's seconds went (the median round, the boot of median wall time,
cut into the six phases and the residual, cells grouped by their axes, failed and skipped
cells with their reason), each cell's median per phase (``analysis.compare.median_of_rounds``:
the median the comparison states too), what each axis changes (compile cache, page cache
beside the storage floor, loader, ...), every round of every cell, the median round's timeline
(the same tracks as ``python -m harness.trace``), the machine, the versions and the command
that made the run. A cell is labelled by every axis that varies across the run, never cut.

The comparison page: per cell and phase, base vs new with their rounds, the change and the
verdict of ``analysis.compare`` (its code decides, with the same options; the page only
shows), the changes that fail the gate first, then where each phase's change went (its
sub-phases, its part in no sub-phase, the residual). Two runs with no cell in common are
refused, as ``analysis.compare`` refuses them.

The page needs no network: plots are matplotlib SVG inlined as ``data:`` images, the style
is inline, there is no script, and a Content-Security-Policy forbids loading anything else.
Every string read from a result file is HTML-escaped.

The fit's markdown report (``analysis.fit --out-dir``) lives in ``analysis.fit_report``;
its two functions are re-exported here for callers of the former ``analysis.report``.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis._cli import ArgumentParser, InputError, run_cli
from analysis.fit_report import print_terminal, write_markdown
from harness.schema import (
    DOCUMENT_KEY,
    PHASE_NAMES,
    BootResult,
    SchemaError,
    cell_id,
    read_json,
    read_results,
    validation_summary,
)

__all__ = ["Cell", "load_run", "main", "print_terminal", "render_comparison", "render_run",
           "write_markdown"]

AXES = ("model", "loader", "compile_cache", "page_cache", "entrypoint")
RESIDUAL = "residual"
# One colour per phase, the same on every plot and in the timelines (matplotlib's tab10).
PHASE_COLORS = {
    "framework_bootstrap": "#1f77b4", "tokenizer_init": "#ff7f0e", "model_loading": "#2ca02c",
    "torch_compile": "#d62728", "kv_cache_profiling": "#9467bd",
    "cuda_graph_capture": "#8c564b", RESIDUAL: "#bbbbbb",
}
# The order in which an axis's values are compared: the first is the baseline.
AXIS_ORDER = {"compile_cache": ("cold", "warm", "off"), "page_cache": ("warm", "evicted"),
              "loader": ("safetensors", "runai_streamer", "tensorizer"),
              "entrypoint": ("offline", "serve")}
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
       "form-action 'none'")


def esc(value: Any) -> str:
    """Any value from a result file as HTML text (never markup)."""
    return html.escape("-" if value is None else str(value), quote=True)


def _num(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None or not math.isfinite(value) else fmt.format(value)


# ---------------------------------------------------------------------------- the run
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


def _axes(result: BootResult, params: dict[str, Any] | None = None) -> dict[str, str]:
    out = {a: str(getattr(result, a)) for a in AXES if getattr(result, a) is not None}
    # Axes the run's matrix has beyond the five (engine arguments, ...), as its test id has.
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
            cells.append(Cell(cell_id(_axes(r)) or r.model, _axes(r), r, [r]))
        return ({} if isinstance(data, list) else {"single_boot": True}), cells
    for i, bench in enumerate(data.get("benchmarks") or []):
        extra = bench["extra_info"]
        head = _boot(extra, f"{path}:{bench.get('name', i)}")
        rounds = [_boot(r, f"{path}:{bench.get('name', i)} round {j}")
                  for j, r in enumerate(extra.get("rounds") or [])] or [head]
        params = bench.get("params") if isinstance(bench.get("params"), dict) else {}
        cid = str(bench.get("param") or cell_id(params) or bench.get("name", i))
        cells.append(Cell(cid, _axes(head, params), head, rounds,
                          list(extra.get("checks_failed") or [])))
    for i, d in enumerate((data.get(DOCUMENT_KEY) or {}).get("unrecorded") or []):
        r = _boot(d, f"{path}:unrecorded[{i}]")
        cells.append(Cell(cell_id(_axes(r)), _axes(r), r, [r],
                          [str(c) for c in d.get("checks_failed") or []]))
    if not cells:
        raise SchemaError(f"{path}: no cell in it (no benchmark, nothing unrecorded)")

    def key(c: Cell) -> tuple:
        return tuple((AXIS_ORDER.get(a, ()).index(c.axes[a])
                      if c.axes.get(a) in AXIS_ORDER.get(a, ()) else 99, c.axes.get(a, ""))
                     for a in _axis_names(cells))
    return data, sorted(cells, key=key)


def _axis_names(cells: list[Cell]) -> list[str]:
    names = list(AXES) + sorted({a for c in cells for a in c.axes} - set(AXES))
    return [a for a in names if any(a in c.axes for c in cells)]


def _varying(cells: list[Cell]) -> list[str]:
    return [a for a in _axis_names(cells) if len({c.axes.get(a) for c in cells}) > 1]


def _measured(rounds: list[BootResult]) -> list[BootResult]:
    return [r for r in rounds if r.state == "measured"]


def _phase_median(cell: Cell, phase: str) -> float | None:
    """A phase's (or ``residual``'s, ``total``'s) median over the cell's measured rounds:
    ``analysis.compare``'s own, so the run page and the comparison state the same median."""
    from analysis.compare import median_of_rounds

    return median_of_rounds(cell.rounds, phase)


# --------------------------------------------------------------------------- plotting
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Text drawn as paths: the page needs no font, and no string becomes SVG markup.
    plt.rcParams.update({"svg.fonttype": "path", "font.size": 8})
    return plt


def _img(fig, alt: str) -> str:
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return f'<img class="plot" alt="{esc(alt)}" src="data:image/svg+xml;base64,{data}">'


def _short(text: str, n: int = 70) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _wrap(label: str, width: int = 48) -> str:
    """A cell's label on as many lines as it needs, broken between its axes: a plot's tick
    label is never cut (two cells that differ in the last axis would read the same)."""
    lines: list[str] = []
    for part in label.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def fig_phases(cells: list[Cell], axes: list[str]) -> str:
    """A stacked bar per cell: the median round's phases and residual."""
    plt = _plt()
    parts = [*PHASE_NAMES, RESIDUAL]
    lines = max([c.label(axes).count(" · ") // 2 + 1 for c in cells] + [1])
    fig, ax = plt.subplots(figsize=(10, (0.3 + 0.15 * lines) * len(cells) + 1.4))
    labels = [_wrap(c.label(axes)) for c in cells]
    right = max([c.headline.wall_s or c.headline.phase_sum_s() for c in cells] + [1.0])
    for y, c in enumerate(cells):
        r = c.headline
        left = 0.0
        for p in parts:
            v = r.residual_s if p == RESIDUAL else r.phases.get(p)
            if not v:
                continue
            ax.barh(y, v, left=left, color=PHASE_COLORS[p], edgecolor="white", linewidth=0.5,
                    hatch=None if c.state == "measured" else "//")
            left += v
        if c.state != "measured":
            ax.text(left + right * 0.01, y, _short(f"{c.state.upper()}: {c.reason or ''}", 60),
                    va="center", fontsize=7, color="#a00")
        elif r.wall_s:
            ax.text(left + right * 0.01, y, f"{r.wall_s:.1f} s", va="center", fontsize=7)
    handles = [plt.Rectangle((0, 0), 1, 1, color=PHASE_COLORS[p]) for p in parts]
    ax.legend(handles, parts, ncol=4, fontsize=7, loc="upper center",
              bbox_to_anchor=(0.5, -0.12 if len(cells) > 3 else -0.3))
    ax.set_yticks(range(len(cells)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, right * 1.25)
    ax.set_xlabel("seconds from launch to ready (median round)")
    ax.grid(axis="x", alpha=0.3)
    return _img(fig, "phases of each cell, stacked")


def fig_rounds(cells: list[Cell], axes: list[str]) -> str:
    """Every round of every cell as a point, per phase and in total; the median a bar."""
    plt = _plt()
    metrics = ["total"] + [p for p in PHASE_NAMES
                           if any(r.phases.get(p) is not None for c in cells for r in c.rounds)]
    fig, axs = plt.subplots(1, len(metrics), figsize=(min(2.1 * len(metrics) + 3, 16),
                                                      0.4 * len(cells) + 1.2),
                            sharey=True, squeeze=False)
    for ax, metric in zip(axs[0], metrics):
        for y, c in enumerate(cells):
            rounds = _measured(c.rounds)
            values = [r.wall_s if metric == "total" else r.phases.get(metric) for r in rounds]
            values = [v for v in values if v is not None]
            if not values:
                continue
            ax.scatter(values, [y] * len(values), s=14, alpha=0.7,
                       color=PHASE_COLORS.get(metric, "black"), zorder=3)
            ax.plot([_phase_median(c, metric)] * 2, [y - 0.3, y + 0.3], color="black", lw=1.5)
        ax.set_title(metric, fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel("s")
    axs[0][0].set_yticks(range(len(cells)), [_wrap(c.label(axes)) for c in cells])
    axs[0][0].invert_yaxis()
    return _img(fig, "rounds of each cell")


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
    for axis in _axis_names(cells):
        values = sorted({c.axes[axis] for c in cells if axis in c.axes},
                        key=lambda v: (AXIS_ORDER.get(axis, ()).index(v)
                                       if v in AXIS_ORDER.get(axis, ()) else 99, v))
        for other in values[1:]:
            pairs = _pairs(cells, axis, values[0], other)
            if pairs:
                out.append((axis, values[0], other, pairs))
    return out


def fig_effect(axis: str, base: str, other: str, pairs: list[tuple[Cell, Cell]],
               axes: list[str]) -> str:
    """Per phase, the change from ``base`` to ``other`` in each matched pair (median rounds)."""
    plt = _plt()
    metrics = [p for p in (*PHASE_NAMES, RESIDUAL, "total")
               if any(_phase_median(a, p) is not None and _phase_median(b, p) is not None
                      for a, b in pairs)]
    others = [a for a in axes if a != axis]
    fig, ax = plt.subplots(figsize=(8, 3))
    for x, m in enumerate(metrics):
        changes = [_phase_median(b, m) - _phase_median(a, m) for a, b in pairs
                   if _phase_median(a, m) is not None and _phase_median(b, m) is not None]
        ax.bar(x, statistics.median(changes), color=PHASE_COLORS.get(m, "#555"), alpha=0.6)
        ax.scatter([x] * len(changes), changes, color="black", s=12, zorder=3)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(range(len(metrics)), metrics, rotation=20, ha="right")
    ax.set_ylabel(f"{other} − {base} [s]")
    ax.set_title(_short(f"{axis}: {other} − {base}, medians of rounds; bar: median over "
                        f"{len(pairs)} pair(s) that differ in {axis} alone"
                        + (f" (points: each {', '.join(others)})" if others else ""), 110),
                 fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _img(fig, f"effect of {axis}")


def _floor_s(cell: Cell) -> float | None:
    w = cell.headline.evidence.get("weights") or {}
    gbps, size = w.get("storage_floor_gbps"), w.get("file_bytes")
    return size / (gbps * 1e9) if gbps and size else None


def fig_page_cache(pairs: list[tuple[Cell, Cell]], axes: list[str]) -> str:
    """Model loading with the page cache warm and evicted, and what a plain sequential read
    of the same files took in each state (the storage floor)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(pairs) + 1.5))
    labels = []
    for y, (warm, evicted) in enumerate(pairs):
        for dy, c, tint in ((-0.2, warm, 0.45), (0.2, evicted, 1.0)):
            v = _phase_median(c, "model_loading")
            if v is not None:
                ax.barh(y + dy, v, height=0.38, color=PHASE_COLORS["model_loading"], alpha=tint)
            floor = _floor_s(c)
            if floor is not None:
                ax.plot([floor] * 2, [y + dy - 0.19, y + dy + 0.19], color="black", lw=2)
        labels.append(_wrap(warm.label([a for a in axes if a != "page_cache"])))
    ax.set_yticks(range(len(pairs)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("model_loading [s]: light = page cache warm, dark = evicted; "
                  "black tick = sequential read of the same files (storage floor)")
    ax.grid(axis="x", alpha=0.3)
    return _img(fig, "page cache effect on model loading")


def fig_timeline(result: BootResult, title: str) -> str | None:
    """The median round's tracks (``harness.trace.boot_tracks``) as horizontal bars."""
    from harness.trace import boot_tracks

    tracks = boot_tracks(result)
    if not tracks:
        return None
    plt = _plt()
    rows: list[tuple[str, Any, int]] = []
    for t in tracks:
        for lane in range(t.lanes):
            rows.append((t.label if lane == 0 else "", t, lane))
    fig, ax = plt.subplots(figsize=(11, 0.28 * len(rows) + 1.3))
    for y, (_, track, lane) in enumerate(rows):
        if lane == 0 and track.last_s is not None:  # the process's life, first to last record
            ax.plot([track.first_s, track.last_s], [y, y], color="#cccccc", lw=1, zorder=0)
        for s in track.slices:
            if s.lane != lane:
                continue
            phase = s.name.split(".")[0]
            color = PHASE_COLORS.get(phase, "#999999")
            # A slice inside another is drawn thinner, from the same baseline, so both show.
            height = 0.76 * 0.7 ** s.depth
            ax.broken_barh([(s.start_s, max(s.end_s - s.start_s, 1e-4))], (y + 0.38 - height,
                                                                           height),
                           facecolors=color, alpha=0.95 if s.depth == 0 else 0.75,
                           edgecolor="white", linewidth=0.3, zorder=2 + s.depth)
        if lane == 0:
            logs = [i.t_s for i in track.instants if i.category == "log"]
            if logs:
                ax.vlines(logs, y - 0.45, y - 0.3, color="black", lw=0.5)
    ax.set_yticks(range(len(rows)), [_short(r[0], 60) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("seconds from launch (black ticks: vLLM log lines)")
    ax.set_title(_short(title, 120), fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=PHASE_COLORS[p]) for p in (*PHASE_NAMES,
                                                                           RESIDUAL)]
    ax.legend(handles, [*PHASE_NAMES, RESIDUAL], ncol=7, fontsize=6, loc="upper center",
              bbox_to_anchor=(0.5, -0.5 / max(len(rows), 1) - 0.12))
    return _img(fig, f"timeline of {title}")


# ------------------------------------------------------------------------------- HTML
STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em auto;
max-width:1250px;color:#222;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
h3{font-size:1em}
table{border-collapse:collapse;font-size:.8em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.measured{color:#060}.failed{color:#b00;font-weight:bold}.skipped{color:#a60}
.regression,.failing{background:#fdd}.improvement{background:#dfd}
.possible{background:#ffe9c6}
.verdict{padding:.6em 1em;font-size:1.1em;border-radius:4px}
.pass{background:#dfd}.fail{background:#fdd}
img.plot{max-width:100%;display:block;margin:.5em 0}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9em}
details{margin:.3em 0}summary{cursor:pointer}
.note{color:#666;font-size:.85em}
"""


def _page(title: str, body: list[str]) -> str:
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>",
        *body,
        f'<p class="note">Written by python -m analysis.report at '
        f'{esc(time.strftime("%Y-%m-%d %H:%M:%S %z"))}.</p>',
        "</body></html>", ""])


def _table(headers: list[str], rows: list[list[str]], *, raw: bool = False,
           classes: list[str] | None = None) -> str:
    """A table; cells are escaped unless ``raw`` (then the caller escaped them)."""
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f' class="{esc(classes[i])}"' if classes and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(
            f"<td>{c if raw else esc(c)}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _flatten(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(d, dict):
        return [kv for k, v in d.items() for kv in _flatten(v, f"{prefix}{k}.")]
    if isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        return [kv for i, v in enumerate(d) for kv in _flatten(v, f"{prefix}{i}.")]
    return [(prefix.rstrip("."), d)]


def _machine_rows(doc: dict[str, Any], cells: list[Cell]) -> list[tuple[str, Any]]:
    info = doc.get("machine_info") or {}
    rows = list(_flatten(info.get("coldstart") or {}))
    rows += [(k, info[k]) for k in ("node", "processor", "machine", "python_version", "system",
                                    "release") if k in info]
    if not rows:  # a single BootResult: its own versions
        versions = {k: v for c in cells for k, v in c.headline.versions.items()}
        rows = [*versions.items(), ("platform", cells[0].headline.platform)]
    commit = doc.get("commit_info") or {}
    rows += [(f"commit.{k}", commit[k]) for k in ("id", "branch", "dirty", "time") if k in commit]
    return rows


def _command_html(doc: dict[str, Any], cells: list[Cell]) -> str:
    meta = doc.get(DOCUMENT_KEY) or {}
    if meta.get("command"):
        what = f"<pre class=mono>{esc(meta['command'])}</pre>"
    elif meta.get("matrix"):
        rounds = f" --rounds {meta['rounds']}" if meta.get("rounds") else ""
        what = (f"<pre class=mono>pytest benchmarks/ --matrix {esc(meta['matrix'])}{esc(rounds)}"
                " --benchmark-json …</pre><p class=note>Reconstructed from the run's matrix "
                "and rounds: this run did not record its command line (narrowing options, if "
                "any, are not known).</p>")
    elif doc.get("single_boot"):
        c = cells[0].headline
        what = (f"<pre class=mono>python -m harness --model {esc(c.model)} --loader "
                f"{esc(c.loader)} --compile-cache {esc(c.compile_cache)} --page-cache "
                f"{esc(c.page_cache)} --entrypoint {esc(c.entrypoint)}</pre><p class=note>"
                "Reconstructed from the boot's configuration.</p>")
    else:
        what = "<p class=note>Not recorded.</p>"
    entry = sorted({str(c.headline.evidence.get("entrypoint_command")) for c in cells
                    if c.headline.evidence.get("entrypoint_command")})
    kwargs = sorted({repr(c.headline.evidence.get("engine_kwargs")) for c in cells
                     if c.headline.evidence.get("engine_kwargs")})
    if entry:
        what += f"<p>vLLM entry point: <code>{esc(', '.join(entry))}</code></p>"
    if kwargs:
        what += "<p>engine arguments: " + "; ".join(f"<code>{esc(k)}</code>" for k in kwargs) \
            + "</p>"
    return what


def _machine_section(doc: dict[str, Any], cells: list[Cell]) -> list[str]:
    return ["<h2>Machine, versions and command</h2>",
            _table(["what", "value"], [list(r) for r in _machine_rows(doc, cells)]),
            "<h3>The command that made the run</h3>", _command_html(doc, cells)]


def _cell_rows(cells: list[Cell], axes: list[str]
               ) -> tuple[list[str], list[list[str]], list[str]]:
    from analysis.table import SHORT

    headers = ["cell", "state", "rounds", *(SHORT[p] for p in PHASE_NAMES), RESIDUAL, "ready s",
               "compile cache seen",
               "weights GB/s", "of floor", "reason / checks failed"]
    rows, classes = [], []
    for c in cells:
        r = c.headline
        w = r.evidence.get("weights") or {}
        n_ok = len(_measured(c.rounds))
        # A measured cell: the median over its measured rounds (the comparison's median);
        # a failed or skipped one: its own round, up to where it stopped.
        value = ((lambda m: _phase_median(c, m)) if n_ok else
                 (lambda m: r.residual_s if m == RESIDUAL else
                  r.wall_s if m == "total" else r.phases.get(m)))
        phase_cells = []
        for p in PHASE_NAMES:
            v = value(p)
            note = r.phase_notes.get(p)
            phase_cells.append(f'<span title="{esc(note)}">{esc(_num(v))}</span>' if note
                               else esc(_num(v)))
        rows.append([f'<span class=mono title="{esc(c.id)}">{esc(c.label(axes))}</span>',
                     f'<span class="{esc(c.state)}">{esc(c.state)}</span>',
                     esc(f"{n_ok}/{len(c.rounds)} measured"), *phase_cells,
                     esc(_num(value(RESIDUAL))), esc(_num(value("total"), "{:.1f}")),
                     esc(r.compile_cache_observed), esc(_num(w.get("load_gbps"))),
                     esc(_num(w.get("fraction_of_floor"), "{:.0%}")), esc(c.reason or "")])
        classes.append("failing" if c.state == "failed" else "")
    return headers, rows, classes


def _subphase_table(c: Cell) -> str:
    r = c.headline
    rows = []
    for p in PHASE_NAMES:
        rows.append([f"<b>{esc(p)}</b>", esc(_num(r.phases.get(p), "{:.3f}")),
                     esc(r.phase_notes.get(p, ""))])
        for name, v in r.subphases.items():
            if name.split(".")[0] == p:
                rows.append([f"&nbsp;&nbsp;{esc(name.split('.', 1)[1])}",
                             esc(_num(v, "{:.3f}")), ""])
    rows.append([esc(RESIDUAL), esc(_num(r.residual_s, "{:.3f}")), esc(", ".join(
        f"{k} {v:.3f} s" for k, v in (r.evidence.get("residual_parts_s") or {}).items()))])
    rows.append(["<b>wall</b>", esc(_num(r.wall_s, "{:.3f}")), ""])
    return _table(["phase / sub-phase", "s (median round)", "note"], rows, raw=True)


def render_run(path: str | Path) -> str:
    """The run page's HTML."""
    doc, cells = load_run(path)
    axes = _varying(cells) or ["model"]
    common = [f"{a}={cells[0].axes[a]}" for a in _axis_names(cells)
              if a not in axes and a in cells[0].axes]
    states = {s: sum(c.state == s for c in cells) for s in ("measured", "failed", "skipped")}
    versions = sorted({c.headline.vllm_version for c in cells if c.headline.vllm_version})
    title = f"vllm-coldstart: {Path(path).name}"
    body = [f"<h1>{esc(title)}</h1>",
            f"<p>vLLM {esc(', '.join(versions) or 'unknown')} · {len(cells)} cells: "
            + ", ".join(f'<span class="{s}">{n} {s}</span>' for s, n in states.items())
            + (f" · every cell: <code>{esc(' '.join(common))}</code>" if common else "")
            + "</p>",
            "<h2>Where the seconds went</h2>",
            "<p class=note>The median round of each cell (the boot of median wall time), cut "
            "into the six phases and the residual (every instant of the boot in at most one phase; phases + residual = "
            "the wall time). Hatched: a failed boot's phases up to where it died.</p>",
            fig_phases(cells, axes)]
    headers, rows, classes = _cell_rows(cells, axes)
    body += ["<p class=note>Seconds: each phase's median over the cell's measured rounds (the "
             "median the comparison page and analysis.compare state; the bars above are the "
             "median round, one real boot whose phases and residual add up to its wall time, "
             "so with several rounds a bar and its median can differ). Hover a cell for its "
             "full id, a phase's value for its note (not applicable, unfinished).</p>",
             _table(headers, rows, raw=True, classes=classes)]
    body.append("<h3>Sub-phases of each cell</h3>")
    for c in cells:
        body.append(f"<details><summary class=mono>{esc(c.id)} ({esc(c.state)})</summary>"
                    f"{_subphase_table(c)}</details>")
    effects = axis_effects(cells)
    body.append("<h2>What each axis changes</h2>")
    if not effects:
        body.append("<p class=note>No two measured cells differ in one axis alone.</p>")
    for axis, base, other, pairs in effects:
        body.append(f"<h3>{esc(axis)}: {esc(other)} vs {esc(base)}</h3>")
        body.append(fig_effect(axis, base, other, pairs, axes))
        if axis == "page_cache":
            body.append(fig_page_cache(pairs, axes))
        metrics = [*PHASE_NAMES, RESIDUAL, "total"]
        rows = []
        for a, b in pairs:
            rows.append([a.label([x for x in axes if x != axis]) or a.id] + [
                "-" if _phase_median(a, m) is None or _phase_median(b, m) is None else
                f"{_phase_median(a, m):.2f} → {_phase_median(b, m):.2f}" for m in metrics])
        body.append(_table(["cell (other axes)", *metrics], rows))
    body += ["<h2>Rounds</h2><p class=note>Every measured round (points) and the median "
             "(bar), in total and per phase.</p>", fig_rounds(cells, axes)]
    body.append("<h2>Timeline of the median round</h2><p class=note>The same tracks as "
                "<code>python -m harness.trace RUN.json --cell ID</code> writes for "
                "ui.perfetto.dev: the phase cut, then each process with its probed calls "
                "(overlapping calls on extra rows) and vLLM's log lines.</p>")
    for i, c in enumerate(cells):
        inner = None
        if c.headline.events:
            inner = fig_timeline(c.headline, c.id)
        if inner is None:
            inner = ("<p class=note>No events in this result (a compacted run: "
                     "benchmarks.compact drops them), so no timeline.</p>")
        open_ = ' open id="first-timeline"' if i == 0 else ""
        body.append(f"<details{open_}><summary class=mono>{esc(c.id)}</summary>{inner}"
                    "</details>")
    body += _machine_section(doc, cells)
    return _page(title, body)


# ------------------------------------------------------------------------- comparison
_STATUS_ORDER = ("failed in new", "failures grew", "regression", "only in base",
                 "not measured in new", "skips grew", "metric lost", "possible regression",
                 "improvement", "possible improvement", "fixed in new", "only in new",
                 "no change")


def _status_class(status: str, failing: bool) -> str:
    if failing:
        return "failing"
    if "possible" in status:
        return "possible"
    if status in ("improvement", "fixed in new"):
        return "improvement"
    return ""


def fig_compare(cell: str, base: list[BootResult], new: list[BootResult],
                statuses: dict[str, str]) -> str:
    """Base and new rounds side by side, one panel per metric with its own scale; the
    bar is the median of the rounds (``analysis.compare.median_of_rounds``)."""
    from analysis import compare
    from analysis.compare import TOTAL, _metric_values

    plt = _plt()
    wall = all(b.wall_s is not None for b in base + new)
    metrics = [m for m in (*PHASE_NAMES, TOTAL)
               if _metric_values(base, m, wall) and _metric_values(new, m, wall)]
    fig, axs = plt.subplots(1, max(len(metrics), 1), figsize=(min(1.9 * len(metrics) + 1, 15),
                                                                2.4), squeeze=False)
    for ax, m in zip(axs[0], metrics):
        for x, boots, color in ((0, base, "#1f77b4"), (1, new, "#ff7f0e")):
            values = _metric_values(boots, m, wall)
            ax.scatter([x] * len(values), values, color=color, s=16, zorder=3)
            ax.plot([x - 0.25, x + 0.25], [compare.median_of_rounds(boots, m)] * 2,
                    color="black")
        status = statuses.get(m, "")
        ax.set_title(f"{m}\n{status}", fontsize=7,
                     color="#b00" if "regression" in status else
                     "#060" if "improvement" in status else "black")
        ax.set_xticks([0, 1], ["base", "new"])
        ax.set_xlim(-0.6, 1.6)
        ax.grid(axis="y", alpha=0.3)
    axs[0][0].set_ylabel("s")
    fig.tight_layout()
    return f"<h3 class=mono>{esc(cell)}</h3>" + _img(fig, f"base vs new rounds of {cell}")


def _details_html(details: list[Any], went: dict[tuple[str, str], str],
                  short: dict[str, str]) -> list[str]:
    """Where each phase's change went: a line per changed phase, then per cell its sub-phases,
    each phase's part in no sub-phase and the residual (base, new, change)."""
    from analysis.compare import NO_SUBPHASE

    out = ["<h2>Where the changes went: sub-phases and residual</h2>",
           "<p class=note>Per cell, each sub-phase's change, each phase's part in no sub-phase "
           "(per round the phase less its sub-phases, where they do not overlap) and the "
           "residual's, medians of rounds as above; not gated. A phase whose verdict is a "
           "change is summed up first.</p>"]
    if went:
        out.append("<ul>" + "".join(
            f'<li><span class=mono title="{esc(cell)}">{esc(short.get(cell, cell))}</span>: '
            f"{esc(line)}</li>" for (cell, _), line in went.items()) + "</ul>")
    for cell in dict.fromkeys(d.cell for d in details):
        rows = []
        for d in (d for d in details if d.cell == cell):
            name = d.part if d.phase is None else f"{d.phase}: {d.part}"
            rows.append([f"<i>{esc(name)}</i>" if d.part == NO_SUBPHASE else esc(name),
                         esc(_num(d.base_median_s, "{:.3f}")),
                         esc(_num(d.new_median_s, "{:.3f}")), esc(f"{d.change_s:+.3f}")])
        out.append(f'<details><summary class=mono title="{esc(cell)}">'
                   f"{esc(short.get(cell, cell))}</summary>"
                   + _table(["sub-phase / part", "base median s", "new median s", "change s"],
                            rows, raw=True) + "</details>")
    return out


def render_comparison(base_path: str | Path, new_path: str | Path, *, threshold: float = 0.10,
                      floor_s: float = 0.05, alpha: float = 0.05, strict: bool = False,
                      allow_missing: bool = False, force: bool = False,
                      warn: Any = None) -> tuple[str, int]:
    """The comparison page's HTML and the exit code ``analysis.compare`` would give.

    The runs are read and checked by ``analysis.compare.prepare`` (SchemaError: an empty run,
    differing metadata without ``force``, no cell in common); ``warn`` (a callable) gets its
    warning line where some cells are on one side only, which the page states too.
    """
    from analysis import compare

    run = compare.prepare(str(base_path), str(new_path), force=force)
    base_doc, base, new_doc, new = run.base_doc, run.base, run.new_doc, run.new
    meta_base, meta_new, disagree = run.meta_base, run.meta_new, run.disagree
    if run.overlap_warning and warn is not None:
        warn(run.overlap_warning)
    changes = compare.compare_results(base, new, threshold=threshold, floor_s=floor_s,
                                      alpha=alpha)
    details = compare.detail_changes(base, new)
    went = compare.where_changes_went(changes, details)
    failing = compare.failing_changes(changes, strict=strict, allow_missing=allow_missing)
    failing_ids = {id(c) for c in failing}
    code = 1 if failing else 0
    v_base, v_new = compare._versions(base_doc, base), compare._versions(new_doc, new)
    title = f"vllm-coldstart: {Path(base_path).name} vs {Path(new_path).name}"
    options = (f"--threshold {threshold} --noise-floor-s {floor_s} --alpha {alpha}"
               + (" --strict" if strict else "") + (" --allow-missing" if allow_missing else "")
               + (" --force" if force else ""))
    verdict = (f"The gate fails: {len(failing)} change(s) fail it (analysis.compare exits 1)"
               if failing else "The gate passes: no change fails it (analysis.compare exits 0)")
    body = [f"<h1>{esc(title)}</h1>",
            f"<p>vLLM <b>{esc(v_base)}</b> (base, <code>{esc(base_path)}</code>) → "
            f"<b>{esc(v_new)}</b> (new, <code>{esc(new_path)}</code>)</p>",
            f'<p class="verdict {"fail" if failing else "pass"}">{esc(verdict)}</p>',
            f"<p class=note>Decided by analysis.compare with <code>{esc(options)}</code>: "
            "a regression is slower by more than the threshold and the noise floor (the larger "
            "of --noise-floor-s and either side's interquartile range) and significant "
            "(two-sided Mann-Whitney, p &lt; alpha).</p>"]
    if disagree:
        body.append("<p class=failed>Compared despite differing metadata (--force): "
                    + esc("; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in disagree.items()))
                    + "</p>")
    if run.unchecked:
        body.append(f"<p class=note>Metadata not recorded on a side, unchecked: "
                    f"{esc(', '.join(run.unchecked))}</p>")
    if run.overlap_warning:
        body.append(f"<p class=possible>Not the same cells: {esc(run.overlap_warning)}.</p>")
    untestable = sum(c.base_median_s is not None and (c.min_attainable_p is None
                                                      or c.min_attainable_p >= alpha)
                     for c in changes)
    if untestable and not strict:
        body.append(f"<p class=possible>{untestable} comparisons have too few rounds to reach "
                    f"p &lt; {esc(alpha)}: a slowdown there can only fail the gate with "
                    "--strict.</p>")
    order = {s: i for i, s in enumerate(_STATUS_ORDER)}
    ranked = sorted(changes, key=lambda c: (id(c) not in failing_ids, order.get(c.status, 99),
                                            -abs(c.change_rel or 0)))
    # Cell ids share most of their fields: name a cell by those that differ (full id on
    # hover), and say a note every row shares once, above the table.
    field_start = re.compile("-(?=(?:" + "|".join(compare.CELL_FIELDS) + ")=)")
    parts = {c.cell: field_start.split(c.cell) for c in changes}
    common_parts = set.intersection(*(set(v) for v in parts.values())) if parts else set()
    short = {k: "-".join(x for x in v if x not in common_parts) or k for k, v in parts.items()}
    notes = {c.note for c in changes}
    shared_note = notes.pop() if len(notes) == 1 else None
    preface = []
    if common_parts:
        preface.append("<p class=note>Every cell: <code>" + esc(" ".join(
            x for x in next(iter(parts.values())) if x in common_parts)) + "</code></p>")
    if shared_note:
        preface.append(f"<p class=note>Every row: {esc(shared_note)}</p>")
    rows, classes = [], []
    for c in ranked:
        rows.append([f'<span class=mono title="{esc(c.cell)}">{esc(short[c.cell])}</span>',
                     *(esc(x) for x in (c.metric, _num(c.base_median_s), _num(c.new_median_s),
                     "-" if c.change_s is None else f"{c.change_s:+.2f} s",
                     "-" if c.change_rel is None or not math.isfinite(c.change_rel)
                     else f"{100 * c.change_rel:+.1f} %", _num(c.noise_floor_s),
                     f"{c.n_base}/{c.n_new}", _num(c.p_value, "{:.3f}"),
                     c.status + (" (fails the gate)" if id(c) in failing_ids else ""),
                     "" if shared_note else c.note))])
        classes.append(_status_class(c.status, id(c) in failing_ids))
    body += ["<h2>Every cell and phase, the changes that fail the gate first</h2>", *preface,
             "<p class=note>Medians over each side's measured rounds, per metric (the run "
             "page's medians); the test compares every round.</p>",
             _table(["cell", "metric", "base median s", "new median s", "change", "relative",
                     "noise floor s", "rounds base/new", "p", "verdict", "note"], rows,
                    classes=classes, raw=True)]
    body += _details_html(details, went, short)
    body.append("<h2>Rounds, base vs new</h2>")
    by_cell: dict[str, tuple[list[BootResult], list[BootResult]]] = {}
    for side, boots in ((0, base), (1, new)):
        for b in boots:
            if b.state == "measured":
                by_cell.setdefault(compare._cell(b), ([], []))[side].append(b)
    for cell in sorted(by_cell, key=lambda k: min(
            (order.get(c.status, 99) for c in changes if c.cell == k), default=99)):
        b_rounds, n_rounds = by_cell[cell]
        if b_rounds and n_rounds:
            statuses = {c.metric: c.status for c in changes if c.cell == cell}
            body.append(fig_compare(cell, b_rounds, n_rounds, statuses))
    sides = []
    for doc, boots in ((base_doc, base), (new_doc, new)):
        cells = [Cell(compare._cell(b), _axes(b), b, [b]) for b in boots]
        sides.append((doc, cells, dict(_machine_rows(doc, cells))))
    keys = list(dict.fromkeys([*sides[0][2], *sides[1][2]]))
    rows = [[k, sides[0][2].get(k, "-"), sides[1][2].get(k, "-")] for k in keys]
    body += ["<h2>Machine, versions and command</h2>",
             _table(["what", "base", "new"], rows, classes=[
                 "possible" if r[1] != r[2] else "" for r in rows]),
             "<p class=note>Rows that differ are marked.</p>",
             "<h3>The command that made base</h3>", _command_html(sides[0][0], sides[0][1]),
             "<h3>The command that made new</h3>", _command_html(sides[1][0], sides[1][1])]
    return _page(title, body), code


# ------------------------------------------------------------------------------ the CLI
def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog="python -m analysis.report",
                        description="A run (one JSON) or a comparison (two) as one "
                                    "self-contained HTML page.")
    ap.add_argument("json", nargs="+", help="RUN.json, or BASE.json NEW.json")
    ap.add_argument("-o", "--out", help="the HTML file (default report.html, compare.html)")
    group = ap.add_argument_group("comparison (the same as analysis.compare's)")
    group.add_argument("--threshold", type=float, default=0.10)
    group.add_argument("--noise-floor-s", type=float, default=0.05)
    group.add_argument("--alpha", type=float, default=0.05)
    group.add_argument("--strict", action="store_true")
    group.add_argument("--allow-missing", action="store_true")
    group.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    if len(args.json) > 2:
        raise InputError("give one run (RUN.json) or two to compare (BASE.json NEW.json)")
    if not (math.isfinite(args.threshold) and math.isfinite(args.noise_floor_s)) \
            or args.threshold < 0 or args.noise_floor_s < 0 or not 0 < args.alpha < 1:
        raise InputError("--threshold and --noise-floor-s must be finite and >= 0, --alpha "
                         "in (0, 1)")
    if len(args.json) == 1:
        out = Path(args.out or "report.html")
        print(f"analysis.report: drawing {args.json[0]}", file=sys.stderr)
        text = render_run(args.json[0])
        summary = ""
    else:
        out = Path(args.out or "compare.html")
        print(f"analysis.report: comparing {args.json[0]} and {args.json[1]}", file=sys.stderr)
        text, code = render_comparison(
            args.json[0], args.json[1], threshold=args.threshold, floor_s=args.noise_floor_s,
            alpha=args.alpha, strict=args.strict, allow_missing=args.allow_missing,
            force=args.force,
            warn=lambda line: print(f"analysis.report: warning: {line}", file=sys.stderr))
        summary = f"; the gate {'fails' if code else 'passes'}"
    out.write_text(text, encoding="utf-8")
    print(f"{out} ({out.stat().st_size / 1e3:.0f} kB){summary}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("analysis.report", main))
