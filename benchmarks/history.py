"""Start-up time of the same cells over vLLM releases, per phase (``coldstart history``).

The study's Figure 1. Every release gets its environment (``benchmarks._envs``)
and the same cells, interleaved across the releases round by round (round 1 oldest to
newest, round 2 newest to oldest, ...; ``benchmarks.interleave``), so the machine's drift is
spread over all of them. Writes ``DIR/<release>.json`` per release (the documents the gate
writes), ``DIR/history.json`` (every step between neighbouring releases, as
``analysis.compare`` judges it) and ``DIR/history.png``: one panel per phase and the total,
the median of each release with its rounds as dots, every step marked with compare's
verdict (a filled triangle: regression / improvement, the interval of the change past the
margin; an open one: a possible regression, its estimate past the margin and its interval
not; an open circle: a total not bounded). ``write_history`` prints the steps compare
confirms.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from benchmarks._envs import Release
from benchmarks.interleave import (
    SlotRunner,
    interleaved,
    merge_side,
    order_label,
    release_file,
    run_slots,
)
from benchmarks.matrix.cells import Cell, selection_digest
from document import RunDocument, read_cells, write_run
from document.boot_result import PHASE_NAMES, BootResult, SchemaError
from document.errors import UserError

TOTAL = "total"
# compare's statuses as the plot marks them: (marker, filled, colour)
MARKS: dict[str, tuple[str, bool, str]] = {
    "regression": ("^", True, "tab:red"),
    "improvement": ("v", True, "tab:green"),
    "possible regression": ("^", False, "tab:red"),
    "not bounded": ("o", False, "tab:orange"),
}


class HistoryError(UserError):
    """Bad input: one line, exit code 2."""


@dataclass(frozen=True)
class HistoryPlan:
    """What a history boots and where it writes: the matrix (its name or file, recorded in
    the documents), the cells of it selected, the rounds per release, the folder of the
    documents, the plot (default ``out_dir/history.png``) and its title, and a file to flock
    while booting."""

    matrix: str
    cells: Sequence[Cell]
    rounds: int
    out_dir: Path
    png: Path | None = None
    title: str = ""
    lock: Path | None = None
    # coldstart.matrix_cells of every release's document: the cells selected, the matrix's
    selection: dict[str, Any] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        # Taken now, from the matrix as it is when its cells are chosen, not when the sides
        # are written after the boots: a cell added to the file meanwhile is then noticed.
        object.__setattr__(self, "selection", selection_digest(self.matrix, list(self.cells)))


@dataclass
class Step:
    base: str
    new: str
    changes: list[Any]  # analysis.compare.CellChange

    def significant(self) -> list[Any]:
        return [c for c in self.changes if c.status in ("regression", "improvement")]


def release_label(path: Path, doc: RunDocument | None, boots: list[BootResult]) -> str:
    if doc is not None and doc.coldstart.release:
        return doc.coldstart.release.split("==")[-1]
    versions = sorted({b.vllm_version for b in boots if b.vllm_version})
    return versions[0] if len(versions) == 1 else path.stem


def load_runs(paths: list[Path]) -> list[tuple[str, list[BootResult]]]:
    """(release, every round) per document, oldest release first."""
    runs = []
    for path in paths:
        doc, cells = read_cells(path)
        boots = doc.results(all_rounds=True) if doc is not None else [c.headline for c in cells]
        runs.append((release_label(path, doc, boots), boots))
    try:
        runs.sort(key=lambda run: Version(run[0]))
    except Exception:  # a label that is no version (a file stem): keep the order given
        pass
    return runs


def steps_of(runs: list[tuple[str, list[BootResult]]], *, threshold: float = 0.10,
             floor_s: float = 0.05, alpha: float = 0.05) -> list[Step]:
    """compare's verdict on every step between neighbouring releases."""
    from analysis.changes import compare_results

    return [Step(a, b, compare_results(ra, rb, threshold=threshold, floor_s=floor_s,
                                       alpha=alpha))
            for (a, ra), (b, rb) in zip(runs, runs[1:])]


def _cell_key(b: BootResult) -> str:
    from analysis.metrics import cell_of_boot

    return cell_of_boot(b)


def _short_labels(cells: list[str]) -> dict[str, str]:
    """Each cell named by the parts where the cells differ (``compile_cache=off``)."""
    parts = {c: c.split("-") for c in cells}
    # compare's cell names join key=value pairs with "-"; values hold "-" too: split on keys
    fields = {}
    for c in cells:
        out, key = {}, None
        for chunk in parts[c]:
            if "=" in chunk:
                key, value = chunk.split("=", 1)
                out[key] = value
            elif key is not None:
                out[key] += f"-{chunk}"
        fields[c] = out
    differ = [k for k in (fields[cells[0]] if cells else {})
              if len({f.get(k) for f in fields.values()}) > 1]
    return {c: ", ".join(f"{k}={fields[c][k]}" for k in differ) or c for c in cells}


def plot_history(runs: list[tuple[str, list[BootResult]]], steps: list[Step], png: Path, *,
                 title: str = "") -> Path:
    """One panel per phase (and the total) that any release measured; x = release."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from analysis.metrics import metric_values

    labels = [label for label, _ in runs]
    cells = sorted({_cell_key(b) for _, boots in runs for b in boots})
    names = _short_labels(cells)
    metrics = [m for m in (TOTAL, *PHASE_NAMES)
               if any(metric_values([b for b in boots if b.state == "measured"], m, True)
                      for _, boots in runs)]
    cols = min(3, len(metrics)) or 1
    rows = -(-len(metrics) // cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.1 * rows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    verdicts = {(s.new, c.cell, c.metric): c for s in steps for c in s.changes}
    for ax, metric in zip(axes.flat, metrics):
        for i, cell in enumerate(cells):
            colour = colours[i % len(colours)]
            xs, medians = [], []
            for x, (label, boots) in enumerate(runs):
                mine = [b for b in boots if _cell_key(b) == cell and b.state == "measured"]
                values = metric_values(mine, metric, all(b.wall_s is not None for b in mine))
                if not values:
                    continue
                ax.scatter([x] * len(values), values, s=9, color=colour, alpha=0.35, lw=0)
                xs.append(x)
                medians.append(statistics.median(values))
                verdict = verdicts.get((label, cell, metric))
                if verdict is not None and verdict.status in MARKS:
                    marker, filled, mark_colour = MARKS[verdict.status]
                    ax.scatter([x], [medians[-1]], marker=marker, s=70, zorder=5,
                               facecolors=mark_colour if filled else "none",
                               edgecolors=mark_colour, linewidths=1.4)
            ax.plot(xs, medians, "-o", color=colour, ms=3, lw=1.2,
                    label=names[cell] if metric == metrics[0] else None)
        ax.set_title(metric, fontsize=9)
        ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=30)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_ylabel("s", fontsize=7)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    handles, legend_labels = axes.flat[0].get_legend_handles_labels()
    handles += [Line2D([], [], marker=m, ls="", markerfacecolor=c if f else "none",
                       markeredgecolor=c, ms=7) for m, f, c in MARKS.values()]
    legend_labels += [f"step: {s}" for s in MARKS]
    fig.legend(handles, legend_labels, loc="lower center", ncol=min(4, len(handles)),
               fontsize=7, frameon=False)
    fig.suptitle(title or "start-up time over releases (median, rounds as dots)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08 + 0.02 * (len(handles) > 4), 1, 0.96))
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=80)
    plt.close(fig)
    return png


def describe(steps: list[Step]) -> list[str]:
    """One line per change compare does not call "no change", confirmed ones first, each
    with its interval where it has one."""
    lines = []
    for step in steps:
        for c in sorted(step.changes, key=lambda c: (c.status not in ("regression",
                                                                      "improvement"), c.cell)):
            if c.status == "no change":
                continue
            change = "" if c.change_s is None else \
                f" {c.change_s:+.2f} s ({100 * c.change_rel:+.0f} %)" + \
                ("" if c.interval_lo_s is None else
                 f" [{c.interval_lo_s:+.2f}, {c.interval_hi_s:+.2f}] against +-{c.margin_s:.2f}")
            lines.append(f"{step.base} -> {step.new}  {c.cell}  {c.metric}{change}: {c.status}")
    return lines


def write_history(paths: list[Path], out_dir: Path, png: Path | None, *, title: str = "",
                  progress=print) -> list[Step]:
    runs = load_runs(paths)
    if len(runs) < 2:
        raise HistoryError("a history needs the documents of at least two releases")
    steps = steps_of(runs)
    png = plot_history(runs, steps, png or out_dir / "history.png", title=title)
    (out_dir / "history.json").write_text(json.dumps({
        "releases": [label for label, _ in runs],
        "documents": [str(p) for p in paths],
        "plot": str(png),
        "steps": [{"base": s.base, "new": s.new, "changes": [asdict(c) for c in s.changes]}
                  for s in steps]}, indent=2) + "\n")
    progress(f"wrote {png} and {out_dir / 'history.json'}")
    significant = [line for line in describe(steps) if line.endswith(("regression",
                                                                      "improvement"))
                   and "possible" not in line]
    print("steps compare confirms beyond their margin:" if significant else
          "no step compare confirms beyond its margin (its interval, at the family's level, "
          "entirely past it)")
    for line in significant:
        print(f"  {line}")
    others = [line for line in describe(steps) if line not in significant]
    if others:
        print("other steps compare did not call \"no change\":")
        for line in others:
            print(f"  {line}")
    return steps


def run_history(plan: HistoryPlan, releases: list[Release], runner: SlotRunner, missing,
                progress) -> int:
    """Boot ``plan``'s cells on every release, interleaved; one document per release and
    the history of them (``write_history``). 0 done, 130 stopped (what ran is written)."""
    from benchmarks.gate import boot_lock

    slots = interleaved(plan.cells, len(releases), plan.rounds)
    progress(f"{len(plan.cells)} cell(s) x {plan.rounds} round(s) x {len(releases)} releases = "
             f"{len(slots)} boots, order per cell {order_label(slots)} "
             f"({', '.join(f'{chr(65 + i)} = {r.version}' for i, r in enumerate(releases))})")
    with boot_lock(plan.lock, progress):
        ran, stopped = run_slots(slots, releases, runner, plan.out_dir / "slots", plan.rounds,
                                 progress=progress)
    paths = []
    for side, release in enumerate(releases):
        mine = [r for r in ran if r[0].side == side]
        if not mine:
            continue
        doc = merge_side(mine, release, matrix=plan.matrix, rounds=plan.rounds,
                         missing_targets=missing[side] if missing else (),
                         selection=plan.selection)
        path = plan.out_dir / release_file(release)
        write_run(doc, path)
        paths.append(path)
    if len(paths) >= 2:
        try:
            write_history(paths, plan.out_dir, plan.png, title=plan.title, progress=progress)
        except SchemaError as exc:  # a release none of whose rounds ran
            progress(f"no plot: {exc}")
    return 130 if stopped else 0


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks.history"))
