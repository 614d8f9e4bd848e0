"""Gate a new vLLM release on start-up time (``coldstart gate``): the same cells booted on
both releases, interleaved, and compare's verdict.

Each release has its environment (``benchmarks._envs``: uv, pip as fallback, cached by
spec); each release's probe targets are checked against its source; then every cell boots
``rounds`` times on each release **interleaved** (A B B A A B B A per cell, so the machine's
drift lands on both sides; see ``benchmarks.interleave``), one ``pytest benchmarks/`` round at a
time in that release's environment. :func:`run_gate` writes ``DIR/<release>.json`` for each
side (pytest-benchmark documents, as ``pytest benchmarks/ --benchmark-json`` writes them,
every round in ``extra_info.rounds``), ``DIR/compare.json`` and ``DIR/slots/`` (each round's
own document and pytest output), and returns compare's exit code: 0 pass, 1 regression, 3
inconclusive (no round measured on a side, a slowdown the rounds cannot confirm, checks
failed: ``analysis.verdict``), 2 a refused comparison; 130 when stopped (the sides of the
rounds that finished are written).

By default the gate is **sequential** (:func:`run_sequential`): ``WARMUPS`` warm-up boots per
release, interleaved (kept in ``slots/``, never measured: the first boots of a gate are its
slowest, in the committed real gates; see ``WARMUPS``), then per cell ``first_rounds`` interleaved rounds a side, a look, and
one more interleaved pair at a time while the cell is undecided, up to ``max_rounds`` a side
or ``max_minutes`` of boots. Each look judges the cell at the alpha it has left
(``analysis.bounds``: Pocock-type spending over the looks), so looking again and again keeps
the error rates. A confirmed regression stops the gate (the release's verdict is decided).
A round disturbed (its checks failed, or other processes took more than ``BUSY_CORES`` of
the machine while it booted: ``benchmarks.disturbance``) is booted again, within the budget,
and the documents say so (``coldstart.gate.rebooted``). ``rounds`` fixes the design instead:
that many rounds a side and one look.
"""

from __future__ import annotations

import fcntl
import statistics
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.changes import FAILING, INCONCLUSIVE
from analysis.verdict import EXIT_INCONCLUSIVE
from benchmarks._envs import Release
from benchmarks.disturbance import BUSY_CORES, OtherCpu
from benchmarks.interleave import (
    RanSlot,
    Slot,
    SlotRunner,
    clock_text,
    interleaved,
    merge_side,
    order_label,
    release_file,
    run_slots,
    slot_document,
    slot_state,
)
from benchmarks.matrix.cells import Cell, selection_digest
from document import GateBoot, GateDecision, GateDesign, GateStop, RunDocument, write_run
from document.errors import USER_ERRORS
from harness.registry import WrapTarget

# The sequential design's defaults: the first look after 3 rounds a side (the fewest with
# which a t-interval has 4 degrees of freedom), at most 8, and at most 2 reboots of a
# disturbed round.
FIRST_ROUNDS = 3
# Warm-up boots per release before the first measured round, interleaved as the rounds are.
# The committed real gates show why more than one (docs/results-cpu.md, "Warm-up"): after
# one warm-up, a side's first measured round loaded the model 17-277 % slower than the
# median of its rounds 3 and later in 7 of the 10 sides of five gates on two machines, and
# in both sides of the AMD gate of 2026-12-07 the second round too (62-64 %); three cover
# every committed side. A warm-up is never measured, so its count does not touch the error
# rates; each costs one boot a release.
WARMUPS = 3
MAX_ROUNDS = 8
MAX_REBOOTS = 2


@dataclass(frozen=True)
class GatePlan:
    """What a gate boots and how it judges: the matrix (its name or file, recorded in the
    documents and handed to each round's pytest), the cells of it selected, the design
    (``rounds`` a side fixed, or None: sequential, ``first_rounds`` then pairs up to
    ``max_rounds`` or ``max_minutes``), and ``analysis.compare.compare_runs``'s keywords (one
    left out keeps compare's default)."""

    matrix: str
    cells: Sequence[Cell]
    rounds: int | None = None
    compare: dict[str, Any] = field(default_factory=dict)
    first_rounds: int = FIRST_ROUNDS
    max_rounds: int = MAX_ROUNDS
    max_minutes: float | None = None
    warmups: int = WARMUPS
    # coldstart.matrix_cells of both sides: the cells selected, and the matrix's
    selection: dict[str, Any] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        # Taken now, from the matrix as it is when its cells are chosen, not when the sides
        # are written after the boots: a cell added to the file meanwhile is then noticed.
        object.__setattr__(self, "selection", selection_digest(self.matrix, list(self.cells)))

    def design(self, looks: dict[str, list[int]]) -> GateDesign:
        """The design both sides record (``coldstart.gate.design``), which compare reads to
        judge each cell at the gate's last look."""
        if self.rounds is not None:
            return GateDesign(kind="fixed", rounds=self.rounds)
        return GateDesign(kind="sequential", first_rounds=self.first_rounds,
                          max_rounds=self.max_rounds, max_minutes=self.max_minutes,
                          cells=len(self.cells), spending="Pocock-type (Lan-DeMets), "
                          "Bonferroni over looks", looks={k: list(v) for k, v in looks.items()})


def side_files(releases: Sequence[Release]) -> list[str]:
    """Each side's file name: the release's, or ``base-``/``new-`` before it where both sides
    are one release (a gate of a release against itself)."""
    names = [release_file(r) for r in releases]
    if len(set(names)) < len(names):
        names = [f"{side}-{name}" for side, name in zip(("base", "new"), names)]
    return names


def _write_sides(plan: GatePlan, releases: Sequence[Release], ran: Sequence[RanSlot],
                 out_dir: Path, missing: Sequence[Sequence[WrapTarget]], order: str,
                 record: dict[str, Any]) -> tuple[list[Path], list[str]]:
    paths, empty = [], []
    for side, (release, name) in enumerate(zip(releases, side_files(releases))):
        gate_meta = {"base": str(releases[0]), "new": str(releases[1]),
                     "side": ("base", "new")[side], "order": order, **record}
        doc = merge_side([r for r in ran if r[0].side == side], release, matrix=plan.matrix,
                         rounds=plan.rounds or max([r[0].round for r in ran], default=0),
                         missing_targets=missing[side], selection=plan.selection,
                         extra_meta={"gate": gate_meta})
        path = out_dir / name
        write_run(doc, path)
        paths.append(path)
        if not doc.benchmarks and not doc.coldstart.unrecorded:
            empty.append(f"{release}: no boot recorded")
    return paths, empty


def _final(plan: GatePlan, paths: list[Path], out_dir: Path, progress: Callable[[str], None],
           not_booted: Sequence[str] = ()) -> int:
    from analysis.compare import compare_runs

    try:
        code = compare_runs(paths[0], paths[1], json_path=out_dir / "compare.json",
                            **plan.compare)
    except USER_ERRORS as exc:  # a comparison compare refuses: the gate fails with exit 2
        progress(f"compare refused the comparison: {' '.join(str(exc).split())}")
        return 2
    if not_booted and code in (0, EXIT_INCONCLUSIVE):
        # Cells the budget left unbooted were never compared: no pass on their behalf, and
        # an inconclusive verdict names them beside its other reasons.
        code = _inconclusive_for(out_dir / "compare.json", not_booted, plan)
    progress(f"wrote {out_dir / 'compare.json'}; "
             + {0: "pass", 1: "REGRESSION (exit 1)",
                EXIT_INCONCLUSIVE: f"INCONCLUSIVE (exit {EXIT_INCONCLUSIVE})"}.get(
                 code, f"exit {code}"))
    return code


def _inconclusive_for(path: Path, not_booted: Sequence[str], plan: GatePlan) -> int:
    import json

    doc = json.loads(path.read_text())
    accept = bool(plan.compare.get("accept_inconclusive"))
    why = [f"{cell}: not booted within the budget (--max-minutes {plan.max_minutes:g})"
           for cell in not_booted]
    verdict = doc["verdict"]
    was_pass = verdict.get("verdict") == "pass"
    verdict.update(verdict="inconclusive", exit_code=0 if accept else EXIT_INCONCLUSIVE)
    if accept:
        verdict["accepted"] = [*verdict.get("accepted", []), *why]
    else:
        verdict["reasons"] = why if was_pass else [*verdict.get("reasons", []), *why]
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"verdict: INCONCLUSIVE (exit {verdict['exit_code']})\n"
          + "\n".join(f"  why: {w}" for w in why))
    return int(verdict["exit_code"])


def run_gate(plan: GatePlan, releases: Sequence[Release], run_slot: SlotRunner,
             out_dir: Path, *, missing: Sequence[Sequence[WrapTarget]] = ((), ()),
             progress: Callable[[str], None], slots=None,
             clock: Callable[[], float] = time.monotonic,
             other_cpu: Callable[[], Any] | None = None) -> int:
    """Run the gate's boots, write one document per side and the comparison; compare's exit
    code. A fixed design (``plan.rounds``) runs ``slots`` (default: interleaved) and looks
    once; else :func:`run_sequential`."""
    if plan.rounds is None and slots is None:
        return run_sequential(plan, releases, run_slot, out_dir, missing=missing,
                              progress=progress, clock=clock, other_cpu=other_cpu)
    cells = plan.cells
    rounds = plan.rounds or 1
    slots = slots if slots is not None else interleaved(cells, len(releases), rounds)
    progress(f"{len(cells)} cell(s) x {rounds} round(s) x {len(releases)} releases = "
             f"{len(slots)} boots, order per cell {order_label(slots)} "
             f"(A = {releases[0]}, B = {releases[1]}); one look at the end (fixed design)")
    ran, stopped = run_slots(slots, releases, run_slot, out_dir / "slots", rounds,
                             progress=progress)
    paths, empty = _write_sides(plan, releases, ran, out_dir, missing, order_label(slots),
                                {"design": plan.design({})})
    for path in paths:
        progress(f"wrote {path}")
    if stopped:
        return 130
    if empty:
        # No boot on a side is missing evidence, not a bad input: the gate cannot judge.
        progress(f"verdict: INCONCLUSIVE (exit {EXIT_INCONCLUSIVE}): {'; '.join(empty)}; "
                 f"see {out_dir / 'slots'}")
        return EXIT_INCONCLUSIVE
    return _final(plan, paths, out_dir, progress)


class _Budget:
    """The boots' minutes: the budget left, and whether a next pair fits by estimate."""

    def __init__(self, max_minutes: float | None, clock: Callable[[], float]):
        self.max_s = None if max_minutes is None else 60 * max_minutes
        self.clock, self.t0 = clock, clock()
        self.durations: dict[str, list[float]] = {}

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def left(self) -> float | None:
        return None if self.max_s is None else self.max_s - self.elapsed()

    def fits(self, cell: Cell, boots: int) -> bool:
        left = self.left()
        if left is None:
            return True
        seen = self.durations.get(cell.id) or [d for v in self.durations.values() for d in v]
        need = boots * (statistics.fmean(seen) if seen else 0.0)
        return left > 0 and need <= left

    def said(self) -> str:
        left = self.left()
        return (f"{clock_text(self.elapsed())} of boots so far"
                + ("" if left is None else f", {clock_text(max(left, 0))} left of "
                   f"{clock_text(self.max_s or 0)}"))


def _look_line(cell: Cell, k: int, n_cells: int, n: int, verdict: str, changes, boots: int,
               budget: _Budget) -> str:
    total = next((c for c in changes if c.metric == "total"), None)
    what = ""
    if total is not None and total.interval_hi_s is not None and total.base_median_s:
        b = total.base_median_s
        what = (f"; total {100 * (total.estimate_s or 0) / b:+.1f} % "
                f"[{100 * total.interval_lo_s / b:+.1f}, {100 * total.interval_hi_s / b:+.1f}] "
                f"vs margin {100 * total.margin_s / b:.1f} %")
    open_ = [f"{c.metric} {c.status}" for c in changes if c.status in INCONCLUSIVE
             or c.status in FAILING]
    state = {"pass": "decided: pass", "regression": "decided: REGRESSION"}.get(
        verdict, "undecided")
    return (f"cell {k}/{n_cells} {cell.id}: {state} after {n} round(s) a side{what}"
            + (f"; {', '.join(open_[:4])}" if open_ and verdict != "pass" else "")
            + f"; {boots} boots so far, {budget.said()}")


def run_sequential(plan: GatePlan, releases: Sequence[Release], run_slot: SlotRunner,
                   out_dir: Path, *, missing: Sequence[Sequence[WrapTarget]] = ((), ()),
                   progress: Callable[[str], None],
                   clock: Callable[[], float] = time.monotonic,
                   other_cpu: Callable[[], Any] | None = None) -> int:
    """The sequential gate (the module docstring): warm-up, first rounds, a look, a pair
    more while undecided. Writes both sides after every look, so a crash loses nothing
    that was judged."""
    from analysis.compare import decide
    from analysis.verdict import judge

    cells, n_cells = list(plan.cells), len(plan.cells)
    slot_dir = out_dir / "slots"
    slot_dir.mkdir(parents=True, exist_ok=True)
    progress(f"{n_cells} cell(s), sequential: {plan.warmups} warm-up boot(s) a release (not "
             f"measured), {plan.first_rounds} interleaved round(s) a side, "
             f"then one interleaved pair at a time to undecided cells, up to "
             f"{plan.max_rounds} a side" + (f" or {plan.max_minutes:g} minutes of boots"
                                           if plan.max_minutes is not None else "")
             + f" (A = {releases[0]}, B = {releases[1]})")
    budget = _Budget(plan.max_minutes, clock)
    meter = other_cpu or OtherCpu
    ran: list[RanSlot] = []
    looks: dict[str, list[int]] = {}
    record: dict[str, Any] = {"warmup": [], "rebooted": [], "decided": {}}
    counter = {"boots": 0}
    judged_by = {k: plan.compare[k] for k in ("strict", "allow_missing") if k in plan.compare}

    def boot(cell: Cell, side: int, round_: int, label: str) -> tuple[RunDocument,
                                                                      dict[str, Any]]:
        counter["boots"] += 1
        k = counter["boots"]
        release = releases[side]
        progress(f"[boot {k}] {release}  {cell.id}  {label}; {budget.said()}")
        name = f"{k:03d}-{('base', 'new')[side]}-{release.package}-{release.version}"
        slot = Slot(k - 1, cell, side, round_)
        started_at, t0 = time.strftime("%Y-%m-%dT%H:%M:%S"), clock()
        with meter() as load:
            doc = slot_document(run_slot(slot, slot_dir / f"{name}.json"), slot)
        took = clock() - t0
        budget.durations.setdefault(cell.id, []).append(took)
        rec = {"slot": k, "cell": cell.id, "round": round_, "file": f"{name}.json",
               "started_at": started_at, "duration_s": round(took, 2),
               "other_cpu_cores": load.cores}
        progress(f"      {release} {label}: {slot_state(doc, cell)} ({took:.0f} s with "
                 f"pytest; other processes {load.cores:.2f} cores)")
        return doc, rec

    def measured_round(cell: Cell, side: int, round_: int) -> bool:
        """One round, booted again while disturbed and the budget allows; False once
        stopped by the budget before any boot of it."""
        reboots = 0
        while True:
            doc, rec = boot(cell, side, round_, f"round {round_} (max {plan.max_rounds})")
            why = disturbed(doc, cell, rec["other_cpu_cores"])
            if why is None or reboots >= MAX_REBOOTS or not budget.fits(cell, 1):
                if why is not None:
                    rec["disturbed"] = f"{why}; kept: {MAX_REBOOTS} reboot(s) spent or no " \
                        "budget left"
                ran.append((Slot(rec["slot"] - 1, cell, side, round_), doc, rec))
                return True
            reboots += 1
            record["rebooted"].append(GateBoot(**rec, why=why))
            progress(f"      disturbed ({why}): booting round {round_} again")

    def look(cell: Cell, n: int) -> tuple[str, list]:
        looks.setdefault(cell.id, []).append(n)
        paths, _ = _write_sides(plan, releases, ran, out_dir, missing, "ABBA",
                                {**record, "design": plan.design(looks),
                                 "boots": counter["boots"],
                                 "minutes": round(budget.elapsed() / 60, 2)})
        decided = decide(paths[0], paths[1], **{
            k: v for k, v in plan.compare.items()
            if k in ("threshold", "noise_floor_s", "alpha")})
        mine = [c for c in decided.changes if c.cell == cell.id]
        return judge(mine, **judged_by).verdict, mine

    stopped, regression, not_booted = False, False, []
    try:
        for w in range(plan.warmups if cells else 0):
            for side in (range(len(releases)) if w % 2 == 0 else reversed(range(len(releases)))):
                doc, rec = boot(cells[0], side, 0, f"warm-up {w + 1}/{plan.warmups} (not measured)")
                record["warmup"].append(GateBoot(**rec))
        for k, cell in enumerate(cells, 1):
            if regression or not budget.fits(cell, 2 * plan.first_rounds):
                not_booted.append(cell.id)
                continue
            n = 0
            while True:
                for r in range(n + 1, max(n + 1, plan.first_rounds if n == 0 else n + 1) + 1):
                    for side in (range(2) if r % 2 == 1 else reversed(range(2))):
                        measured_round(cell, side, r)
                    n = r
                verdict, mine = look(cell, n)
                progress(_look_line(cell, k, n_cells, n, verdict, mine, counter["boots"],
                                    budget))
                if verdict in ("pass", "regression"):
                    record["decided"][cell.id] = GateDecision(verdict=verdict, rounds=n)
                    regression = verdict == "regression"
                    break
                if n >= plan.max_rounds or not budget.fits(cell, 2):
                    record["decided"][cell.id] = GateDecision(
                        verdict="undecided", rounds=n,
                        why=f"{plan.max_rounds} rounds a side reached"
                        if n >= plan.max_rounds else "the time budget is spent")
                    break
            if regression:
                progress("a regression is confirmed: the release's verdict is decided, the "
                         "cells after it are not booted")
    except KeyboardInterrupt as exc:
        progress(f"stopped after {counter['boots']} boot(s); writing what finished")
        stopped = True
        # what the stop left out, so that the sides say it, not only this run's console
        record["stopped"] = GateStop(after_boots=counter["boots"], why=str(exc) or "Ctrl-C",
                                     undecided=[c.id for c in cells
                                                if c.id not in record["decided"]])
    record.update(boots=counter["boots"], minutes=round(budget.elapsed() / 60, 2),
                  not_booted=not_booted)
    paths, empty = _write_sides(plan, releases, ran, out_dir, missing, "ABBA",
                                {**record, "design": plan.design(looks)})
    for path in paths:
        progress(f"wrote {path}")
    progress(f"{counter['boots']} boots ({len(record['warmup'])} warm-up, "
             f"{len(record['rebooted'])} booted again) in {budget.elapsed() / 60:.1f} minutes")
    if stopped:
        return 130
    if empty:
        progress(f"verdict: INCONCLUSIVE (exit {EXIT_INCONCLUSIVE}): {'; '.join(empty)}; "
                 f"see {slot_dir}")
        return EXIT_INCONCLUSIVE
    return _final(plan, paths, out_dir, progress,
                  not_booted=[] if regression else not_booted)


def disturbed(doc: RunDocument, cell: Cell, other_cores: float) -> str | None:
    """Why a round is no evidence of its cell, or None: its checks failed, or other
    processes took more than ``BUSY_CORES`` of the machine while it booted. A boot that
    failed is evidence (a flaky start-up), never booted again."""
    for c in doc.cells():
        if c.id == cell.id and c.checks_failed:
            return "checks failed: " + "; ".join(c.checks_failed)[:200]
    if other_cores > BUSY_CORES:
        return f"other processes used {other_cores:.2f} cores while it booted"
    return None


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


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks.gate"))
