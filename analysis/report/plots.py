"""The report's plots: matplotlib figures as SVG ``data:`` images, one colour per phase.

Each ``fig_*`` returns a ``Plot`` (its alt text and its ``data:`` URL) that the templates put
in an ``<img>``: text is drawn as paths, so no string from a result file becomes SVG markup
and the page needs no font.
"""

from __future__ import annotations

import base64
import io
import statistics
from dataclasses import dataclass
from typing import Any

from analysis.report.run_cells import RESIDUAL, measured_rounds, phase_median, storage_floor_s
from document import RunCell
from document.boot_result import PHASE_NAMES, BootResult

__all__ = ["PHASE_COLORS", "Plot", "fig_compare", "fig_effect", "fig_page_cache", "fig_phases",
           "fig_rounds", "fig_timeline"]

# One colour per phase, the same on every plot and in the timelines (matplotlib's tab10).
PHASE_COLORS = {
    "framework_bootstrap": "#1f77b4", "tokenizer_init": "#ff7f0e", "model_loading": "#2ca02c",
    "torch_compile": "#d62728", "kv_cache_profiling": "#9467bd",
    "cuda_graph_capture": "#8c564b", RESIDUAL: "#bbbbbb",
}


@dataclass(frozen=True)
class Plot:
    """A drawn figure: what it shows in words (the image's alt text) and its ``data:`` URL."""

    alt: str
    src: str


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Text drawn as paths: the page needs no font, and no string becomes SVG markup.
    plt.rcParams.update({"svg.fonttype": "path", "font.size": 8})
    return plt


def _svg(fig, alt: str) -> Plot:
    plt = _plt()
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    return Plot(alt, "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode())


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


def fig_phases(cells: list[RunCell], axes: list[str]) -> Plot:
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
    return _svg(fig, "phases of each cell, stacked")


def fig_rounds(cells: list[RunCell], axes: list[str]) -> Plot:
    """Every round of every cell as a point, per phase and in total; the median a bar."""
    plt = _plt()
    metrics = ["total"] + [p for p in PHASE_NAMES
                           if any(r.phases.get(p) is not None for c in cells for r in c.rounds)]
    fig, axs = plt.subplots(1, len(metrics), figsize=(min(2.1 * len(metrics) + 3, 16),
                                                      0.4 * len(cells) + 1.2),
                            sharey=True, squeeze=False)
    for ax, metric in zip(axs[0], metrics):
        for y, c in enumerate(cells):
            rounds = measured_rounds(c.rounds)
            values = [r.wall_s if metric == "total" else r.phases.get(metric) for r in rounds]
            values = [v for v in values if v is not None]
            if not values:
                continue
            ax.scatter(values, [y] * len(values), s=14, alpha=0.7,
                       color=PHASE_COLORS.get(metric, "black"), zorder=3)
            ax.plot([phase_median(c, metric)] * 2, [y - 0.3, y + 0.3], color="black", lw=1.5)
        ax.set_title(metric, fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel("s")
    axs[0][0].set_yticks(range(len(cells)), [_wrap(c.label(axes)) for c in cells])
    axs[0][0].invert_yaxis()
    return _svg(fig, "rounds of each cell")


def fig_effect(axis: str, base: str, other: str, pairs: list[tuple[RunCell, RunCell]],
               axes: list[str]) -> Plot:
    """Per phase, the change from ``base`` to ``other`` in each matched pair (median rounds)."""
    plt = _plt()
    metrics = [p for p in (*PHASE_NAMES, RESIDUAL, "total")
               if any(phase_median(a, p) is not None and phase_median(b, p) is not None
                      for a, b in pairs)]
    others = [a for a in axes if a != axis]
    fig, ax = plt.subplots(figsize=(8, 3))
    for x, m in enumerate(metrics):
        changes = [phase_median(b, m) - phase_median(a, m) for a, b in pairs
                   if phase_median(a, m) is not None and phase_median(b, m) is not None]
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
    return _svg(fig, f"effect of {axis}")


def fig_page_cache(pairs: list[tuple[RunCell, RunCell]], axes: list[str]) -> Plot:
    """Model loading with the page cache warm and evicted, and what a plain sequential read
    of the same files took in each state (the storage floor)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(pairs) + 1.5))
    labels = []
    for y, (warm, evicted) in enumerate(pairs):
        for dy, c, tint in ((-0.2, warm, 0.45), (0.2, evicted, 1.0)):
            v = phase_median(c, "model_loading")
            if v is not None:
                ax.barh(y + dy, v, height=0.38, color=PHASE_COLORS["model_loading"], alpha=tint)
            floor = storage_floor_s(c)
            if floor is not None:
                ax.plot([floor] * 2, [y + dy - 0.19, y + dy + 0.19], color="black", lw=2)
        labels.append(_wrap(warm.label([a for a in axes if a != "page_cache"])))
    ax.set_yticks(range(len(pairs)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("model_loading [s]: light = page cache warm, dark = evicted; "
                  "black tick = sequential read of the same files (storage floor)")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig, "page cache effect on model loading")


def fig_timeline(result: BootResult, title: str) -> Plot | None:
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
            # a span is drawn in the colour of the phase it witnesses (document.span_phases)
            phase = s.args.get("phase") or s.name.split(".")[0]
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
    return _svg(fig, f"timeline of {title}")


def fig_compare(cell: str, base: list[BootResult], new: list[BootResult],
                statuses: dict[str, str]) -> Plot:
    """Base and new rounds side by side, one panel per metric with its own scale; the
    bar is the median of the rounds (``analysis.compare.median_of_rounds``)."""
    # compare's own per-round values and median, so the points are what its test compared.
    from analysis.metrics import TOTAL, median_of_rounds, metric_values

    plt = _plt()
    wall = all(b.wall_s is not None for b in base + new)
    metrics = [m for m in (*PHASE_NAMES, TOTAL)
               if metric_values(base, m, wall) and metric_values(new, m, wall)]
    fig, axs = plt.subplots(1, max(len(metrics), 1), figsize=(min(1.9 * len(metrics) + 1, 15),
                                                                2.4), squeeze=False)
    for ax, m in zip(axs[0], metrics):
        for x, boots, color in ((0, base, "#1f77b4"), (1, new, "#ff7f0e")):
            values = metric_values(boots, m, wall)
            ax.scatter([x] * len(values), values, color=color, s=16, zorder=3)
            ax.plot([x - 0.25, x + 0.25], [median_of_rounds(boots, m)] * 2,
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
    return _svg(fig, f"base vs new rounds of {cell}")


def fig_intervals(changes: list[Any], short: dict[str, str]) -> Plot | None:
    """One mark per cell and metric with an interval: its estimate and interval in units of
    its margin, so that every row's margin is the same line (at +1, -1 dotted): a pass
    needs every total's bar to end left of +1, a regression is a bar wholly right of it."""
    rows = [c for c in changes if c.interval_lo_s is not None and c.margin_s > 0]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.0))
    colors = {"regression": "#b00", "possible regression": "#d80", "not bounded": "#d80",
              "improvement": "#060"}
    labels = []
    for y, c in enumerate(reversed(rows)):
        lo, hi = c.interval_lo_s / c.margin_s, c.interval_hi_s / c.margin_s
        clip = 6.0
        color = colors.get(c.status, "#1f77b4")
        ax.plot([max(lo, -clip), min(hi, clip)], [y, y], color=color,
                linewidth=3 if c.gated else 1.5, solid_capstyle="butt")
        ax.plot([max(min((c.estimate_s or 0) / c.margin_s, clip), -clip)], [y], "o",
                color=color, markersize=4)
        labels.append(f"{short.get(c.cell, c.cell)[:40]} {c.metric}: {c.status}")
    ax.axvline(1.0, color="black", linewidth=1)
    ax.axvline(-1.0, color="black", linewidth=0.8, linestyle=":")
    ax.axvline(0.0, color="grey", linewidth=0.5)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("change / margin (the margin: +1; thick: the total, which gates a pass)")
    ax.set_xlim(-6.2, 6.2)
    fig.tight_layout()
    return _svg(fig, "each cell and metric's interval of the change, in units of its margin")
