"""Gate a new vLLM release on start-up time (``coldstart gate``): the same cells booted on
both releases, interleaved, and compare's verdict.

Each release has its environment (``benchmarks._envs``: uv, pip as fallback, cached by
spec); each release's probe targets are checked against its source; then every cell boots
``rounds`` times on each release **interleaved** (A B B A A B B A per cell, so the machine's
drift lands on both sides; see ``benchmarks._rounds``), one ``pytest benchmarks/`` round at a
time in that release's environment. :func:`run_gate` writes ``DIR/<release>.json`` for each
side (pytest-benchmark documents, as ``pytest benchmarks/ --benchmark-json`` writes them,
every round in ``extra_info.rounds``), ``DIR/compare.json`` and ``DIR/slots/`` (each round's
own document and pytest output), and returns compare's exit code: 0 pass, 1 regression, 3
inconclusive (no round measured on a side, a slowdown the rounds cannot confirm, checks
failed: ``analysis.verdict``), 2 a refused comparison; 130 when stopped (the sides of the
rounds that finished are written).

The rounds default to the fewest with which the decision rule can find a regression
(:func:`default_rounds`, ``analysis.changes.fewest_rounds``): Holm's correction over every
cell x metric the gate tests, so one CPU cell (m = 5 or 6) takes 5 rounds a side, the smoke
matrix on CPU (m = 32: ``default_rounds(select("smoke"), "cpu", 0.05)``) 7.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.changes import fewest_rounds
from analysis.verdict import EXIT_INCONCLUSIVE
from benchmarks._envs import Release
from benchmarks._rounds import (
    SlotRunner,
    interleaved,
    merge_side,
    order_label,
    release_file,
    run_slots,
)
from benchmarks.matrix.plan import Cell, selection_digest
from coldstart.errors import USER_ERRORS
from harness.document import write_run
from harness.registry import WrapTarget
from harness.schema import PHASE_NAMES


@dataclass(frozen=True)
class GatePlan:
    """What a gate boots and how it judges: the matrix (its name or file, recorded in the
    documents and handed to each round's pytest), the cells of it selected, the rounds a
    side, and ``analysis.compare.compare_runs``'s keywords (one left out keeps compare's
    default)."""

    matrix: str
    cells: Sequence[Cell]
    rounds: int
    compare: dict[str, Any] = field(default_factory=dict)
    # coldstart.matrix_cells of both sides: the cells selected, and the matrix's
    selection: dict[str, Any] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        # Taken now, from the matrix as it is when its cells are chosen, not when the sides
        # are written after the boots: a cell added to the file meanwhile is then noticed.
        object.__setattr__(self, "selection", selection_digest(self.matrix, list(self.cells)))


def tested_metrics(cell: Cell, platform: str) -> int:
    """How many metrics of ``cell`` a comparison tests: every phase that applies on the
    platform (CUDA-graph capture only on GPUs, torch.compile only where the cell compiles)
    and the total."""
    skipped = {"cuda_graph_capture"} if platform == "cpu" else set()
    if cell.compile_cache == "off":
        skipped.add("torch_compile")
    return len([p for p in PHASE_NAMES if p not in skipped]) + 1


def default_rounds(cells: Sequence[Cell], platform: str, alpha: float) -> tuple[int, int]:
    """(rounds a side, the family they are enough for): the fewest rounds with which a
    regression can be significant among all of the gate's tests."""
    family = sum(tested_metrics(c, platform) for c in cells)
    return fewest_rounds(family, alpha), family


def run_gate(plan: GatePlan, releases: Sequence[Release], run_slot: SlotRunner,
             out_dir: Path, *, missing: Sequence[Sequence[WrapTarget]] = ((), ()),
             progress: Callable[[str], None], slots=None) -> int:
    """Run the slots, write one document per side and the comparison; compare's exit code.

    ``slots`` defaults to the interleaved order; the tests hand in others.
    """
    from analysis.compare import compare_runs

    cells = plan.cells
    slots = slots if slots is not None else interleaved(cells, len(releases), plan.rounds)
    progress(f"{len(cells)} cell(s) x {plan.rounds} round(s) x {len(releases)} releases = "
             f"{len(slots)} boots, order per cell {order_label(slots)} "
             f"(A = {releases[0]}, B = {releases[1]})")
    ran, stopped = run_slots(slots, releases, run_slot, out_dir / "slots", plan.rounds,
                             progress=progress)
    paths = []
    empty = []
    for side, release in enumerate(releases):
        doc = merge_side([r for r in ran if r[0].side == side], release, matrix=plan.matrix,
                         rounds=plan.rounds, missing_targets=missing[side],
                         selection=plan.selection,
                         extra_meta={"gate": {"base": str(releases[0]), "new": str(releases[1]),
                                              "side": ("base", "new")[side],
                                              "order": order_label(slots)}})
        path = out_dir / release_file(release)
        write_run(doc, path)
        paths.append(path)
        progress(f"wrote {path}")
        if not doc.benchmarks and not doc.coldstart.unrecorded:
            empty.append(f"{release}: no boot recorded")
    if stopped:
        return 130
    if empty:
        # No boot on a side is missing evidence, not a bad input: the gate cannot judge.
        progress(f"verdict: INCONCLUSIVE (exit {EXIT_INCONCLUSIVE}): {'; '.join(empty)}; "
                 f"see {out_dir / 'slots'}")
        return EXIT_INCONCLUSIVE
    try:
        code = compare_runs(paths[0], paths[1], json_path=out_dir / "compare.json",
                            **plan.compare)
    except USER_ERRORS as exc:  # a comparison compare refuses: the gate fails with exit 2
        progress(f"compare refused the comparison: {' '.join(str(exc).split())}")
        code = 2
    progress(f"wrote {out_dir / 'compare.json'}; "
             + {0: "pass", 1: "REGRESSION (exit 1)",
                EXIT_INCONCLUSIVE: f"INCONCLUSIVE (exit {EXIT_INCONCLUSIVE})"}.get(
                 code, f"exit {code}"))
    return code


@contextmanager
def boot_lock(path: Path | None, progress: Callable[[str], None]):
    """Hold ``path`` locked (flock) while booting; nothing without a path."""
    if path is None:
        yield
        return
    with open(path, "a") as fh:
        progress(f"waiting for the boot lock {path}")
        fcntl.flock(fh, fcntl.LOCK_EX)
        progress("boot lock taken")
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
