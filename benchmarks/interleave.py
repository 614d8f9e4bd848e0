"""The same cells on several vLLM releases, interleaved round by round: what gate and history
share.

How a round runs: each round of each cell on each release is one ``pytest benchmarks/`` run of
that one cell with ``--rounds 1``, in that release's environment (``benchmarks._envs``) with
this checkout first on ``PYTHONPATH``. So a round is exactly the documented benchmark run:
the cell's checks, provenance (``machine_info``), storage floor, warm-cache priming, failure
records and signal handling are the suite's own, not a second implementation. The cost is a
pytest start-up per round (a few seconds against a boot of a minute or more). The rounds'
documents of one release are merged into one pytest-benchmark document of the same shape
(``extra_info.rounds`` holds every round, the headline is the median round, ``stats`` is
pytest-benchmark's own ``Stats`` over the rounds), which ``analysis.compare`` and
``analysis.fit`` read like any other run.

Why interleave: a machine drifts (another tenant, thermal state, the system's page cache).
Running all rounds of A, then all of B, puts the drift on one side only, and the gate sees it
as a change of B. Round r of a cell runs the releases forward when r is odd and backward when
it is even (A B B A A B B A for two), so a drift that is linear in time lands on both sides
equally.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._envs import REPO_ROOT, Release, checkout_env
from benchmarks.matrix.cells import Cell
from document import (
    AXIS_OPTIONS,
    RunDocument,
    RunMeta,
    UnrecordedCell,
    run_document,
)
from document.boot_result import SCHEMA_VERSION, BootResult, SchemaError
from document.secrets import environment_secrets, scrub_file
from harness.processes import raise_on_end_signals
from harness.registry import LOG_PROBE_PAIRS, WrapTarget

ORDER_NOTE = ("interleaved per cell: round r runs the releases forward when r is odd, "
              "backward when even (ABBA for two)")


@dataclass(frozen=True)
class Slot:
    """One boot of the run: round ``round`` (1-based) of ``cell`` on release ``side``."""

    index: int
    cell: Cell
    side: int
    round: int


def interleaved(cells: Sequence[Cell], n_sides: int, rounds: int) -> list[Slot]:
    """Per cell, ``rounds`` rounds on every side, alternating direction each round."""
    slots: list[Slot] = []
    for cell in cells:
        for r in range(rounds):
            sides = range(n_sides) if r % 2 == 0 else reversed(range(n_sides))
            for side in sides:
                slots.append(Slot(len(slots), cell, side, r + 1))
    return slots


def sequential(cells: Sequence[Cell], n_sides: int, rounds: int) -> list[Slot]:
    """All rounds of one side, then the next: the order drift lands on one side in."""
    slots: list[Slot] = []
    for side in range(n_sides):
        for cell in cells:
            for r in range(rounds):
                slots.append(Slot(len(slots), cell, side, r + 1))
    return slots


def order_label(slots: Sequence[Slot], names: str = "ABCDEFGHIJ") -> str:
    """``ABBAABBA`` for the slots of the first cell: what the progress and the docs show."""
    first = slots[0].cell if slots else None
    return "".join(names[s.side] for s in slots if s.cell == first)


# --------------------------------------------------------------------------- running
SlotRunner = Callable[[Slot, Path], dict[str, Any]]


class PytestSlot:
    """Runs one slot as ``pytest benchmarks/test_cold_start.py`` of its one cell, one round,
    in the slot's release environment. Returns the document it wrote; where pytest wrote
    none (the environment cannot import the suite, pytest was killed), a document holding
    one failed round that says why, so the run goes on and the gate counts it."""

    def __init__(self, releases: Sequence[Release], envs: Sequence[Path], matrix: str, *,
                 boot_timeout: float | None, extra_args: Sequence[str] = ()):
        self.releases, self.envs, self.matrix = list(releases), list(envs), matrix
        self.boot_timeout, self.extra_args = boot_timeout, list(extra_args)

    def command(self, slot: Slot, out_json: Path) -> list[str]:
        cmd = [str(self.envs[slot.side] / "bin" / "python"), "-m", "pytest",
               "benchmarks/test_cold_start.py", "-p", "no:cacheprovider", "-q",
               "--matrix", self.matrix, "--rounds", "1", "--benchmark-json", str(out_json),
               "--cells-log", f"{out_json}.cells.jsonl"]
        if self.boot_timeout is not None:  # else the matrix file's, else pytest's default
            cmd += ["--boot-timeout", f"{self.boot_timeout:g}"]
        for axis, option in AXIS_OPTIONS.items():
            cmd += [f"--{option}", getattr(slot.cell, axis)]
        return cmd + self.extra_args

    def __call__(self, slot: Slot, out_json: Path) -> dict[str, Any]:
        log = out_json.with_suffix(".log")
        with open(log, "w") as fh:
            # Its own session: a Ctrl-C on the terminal reaches the gate alone, which then
            # stops pytest as below, rather than both at once.
            proc = subprocess.Popen(self.command(slot, out_json), cwd=REPO_ROOT, stdout=fh,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=checkout_env(self.envs[slot.side]),
                                    start_new_session=True)
            try:
                returncode = proc.wait()
            except KeyboardInterrupt:
                stop_pytest(proc)
                raise
        scrub_file(log, environment_secrets())  # kept beside the slot's JSON, scrubbed too
        if out_json.is_file():
            try:
                return json.loads(out_json.read_text())
            except json.JSONDecodeError:
                pass
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-5:])
        return missing_document(slot, self.releases[slot.side],
                                f"pytest exited {returncode} without a result ({log}): "
                                f"{tail[-600:]}")


# How long a stopped slot's pytest has to end its boot (kill the boot's process group, which
# is not pytest's) after SIGINT, then after SIGTERM, before it is killed.
STOP_GRACE_S = (60.0, 15.0)


def stop_pytest(proc: subprocess.Popen, grace_s: tuple[float, float] = STOP_GRACE_S) -> None:
    """Stop a slot's pytest as Ctrl-C would: SIGINT, so that the harness kills its boot's
    process group (a session of its own, which a kill of pytest alone leaves running, vLLM's
    engine and worker with it), then SIGTERM, then SIGKILL of pytest's group."""
    import signal

    for sig, wait_s in ((signal.SIGINT, grace_s[0]), (signal.SIGTERM, grace_s[1])):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def missing_document(slot: Slot, release: Release, why: str) -> dict[str, Any]:
    failed = BootResult(state="failed", **slot.cell.params(), error=why,
                        vllm_version=release.version)
    return RunDocument(machine_info={}, benchmarks=[], coldstart=RunMeta(
        schema_version=SCHEMA_VERSION, unrecorded=[UnrecordedCell.of(failed)])).as_json()


def clock_text(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


def estimate_left(slots: Sequence[Slot], done_s: dict[int, float], next_index: int) -> float | None:
    """Seconds the slots from ``next_index`` on will take: each as long as the mean of the
    finished slots of its cell, or of all finished slots where its cell has none yet."""
    if not done_s:
        return None
    overall = statistics.fmean(done_s.values())
    by_cell: dict[Cell, list[float]] = {}
    for s in slots:
        if s.index in done_s:
            by_cell.setdefault(s.cell, []).append(done_s[s.index])
    return sum(statistics.fmean(by_cell[s.cell]) if s.cell in by_cell else overall
               for s in slots[next_index:])


def slot_document(doc: dict[str, Any], slot: Slot) -> RunDocument:
    """A slot's document typed; one that is no result document reads as the slot's one
    failed round saying so (the run goes on and the gate counts it)."""
    try:
        return run_document(doc, f"slot {slot.index + 1}")
    except SchemaError as exc:
        failed = BootResult(state="failed", **slot.cell.params(), error=str(exc))
        return RunDocument(benchmarks=[], coldstart=RunMeta(unrecorded=[
            UnrecordedCell.model_validate(failed.model_dump())]))


def slot_state(doc: RunDocument, cell: Cell) -> str:
    for c in doc.cells():
        if c.recorded and c.id == cell.id:
            r, failed = c.headline, c.checks_failed
            return (f"{r.state}, wall {r.wall_s:.1f} s" if r.wall_s is not None
                    else str(r.state)) + (f", {len(failed)} check(s) failed" if failed else "")
    unrec = doc.coldstart.unrecorded
    if unrec:
        r = unrec[-1]
        return f"{r.state}: {(r.reason or '')[:160]}"
    return "no result"


RanSlot = tuple[Slot, RunDocument, dict[str, Any]]


def run_slots(slots: Sequence[Slot], releases: Sequence[Release], run_slot: SlotRunner,
              slot_dir: Path, rounds: int, *, progress: Callable[[str], None],
              clock: Callable[[], float] = time.monotonic) -> tuple[list[RanSlot], bool]:
    """Run every slot in order. Returns ``[(slot, typed document, record)]`` for the slots
    that ran and whether the run was stopped (Ctrl-C, SIGTERM): the caller still writes what
    ran. A slot's JSON is typed here, once (``slot_document``)."""
    slot_dir.mkdir(parents=True, exist_ok=True)
    out: list[RanSlot] = []
    done_s: dict[int, float] = {}
    for slot in slots:
        left = estimate_left(slots, done_s, slot.index)
        progress(f"[{slot.index + 1}/{len(slots)}] {releases[slot.side]}  {slot.cell.id}  "
                 f"round {slot.round}/{rounds}  "
                 + ("time left unknown (first boot)" if left is None
                    else f"~{clock_text(left)} left by estimate"))
        name = f"{slot.index + 1:03d}-{releases[slot.side].package}-{releases[slot.side].version}"
        started_at = time.strftime("%Y-%m-%dT%H:%M:%S")
        t0 = clock()
        try:
            doc = slot_document(run_slot(slot, slot_dir / f"{name}.json"), slot)
        except KeyboardInterrupt:
            progress(f"stopped during slot {slot.index + 1}; writing the {len(out)} slots "
                     "that finished")
            return out, True
        done_s[slot.index] = clock() - t0
        progress(f"      {releases[slot.side]} round {slot.round}: "
                 f"{slot_state(doc, slot.cell)}"
                 f" ({done_s[slot.index]:.0f} s with pytest)")
        out.append((slot, doc, {"slot": slot.index + 1, "cell": slot.cell.id,
                                "round": slot.round, "file": f"{name}.json",
                                "started_at": started_at,
                                "duration_s": round(done_s[slot.index], 2)}))
    return out, False


# --------------------------------------------------------------------------- merging
def apply_log_fallback(boot: BootResult, missing: Sequence[WrapTarget]) -> BootResult:
    """A boot of a release that lacks probe targets: the phases and subphases those targets
    time are taken from vLLM's own log lines where the log reader has them (the durations
    ``LOG_PROBE_PAIRS`` pairs with a probe), and say so; where the log has none either, the
    value stays None with a note naming the missing target. Never a zero."""
    if not missing or boot.state != "measured":
        return boot
    by_event = {event: key for key, event in LOG_PROBE_PAIRS.items()}
    b = boot.model_copy(deep=True)
    not_probed, from_log = [], {}
    for t in missing:
        not_probed.append(f"{t.module}:{t.attr} ({t.event})")
        if t.event.startswith("mark."):
            continue
        phase, _, sub = t.event.partition(".")
        values = b.subphases if sub else b.phases
        if values.get(t.event if sub else phase) is not None:
            continue  # another target of the same event still timed it
        key = by_event.get(t.event)
        value = b.log_durations.get(key) if key else None
        what = f"vLLM {b.vllm_version} lacks probe target {t.module}:{t.attr}"
        if value is not None:
            values[t.event if sub else phase] = value
            from_log[t.event] = key
            note = f"not probed ({what}); timed by the log reader ('{key}')"
        else:
            note = f"not probed ({what}); not in log"
        if not sub:
            b.phase_notes[phase] = note
        else:
            b.evidence.subphase_notes = {**b.evidence.subphase_notes, t.event: note}
    b.evidence.not_probed = not_probed
    if from_log:
        b.evidence.from_log = from_log
    return b


def merge_side(ran: Sequence[RanSlot], release: Release, *,
               matrix: str, rounds: int, missing_targets: Sequence[WrapTarget] = (),
               extra_meta: dict[str, Any] | None = None,
               selection: dict[str, Any] | None = None) -> RunDocument:
    """One pytest-benchmark document for one release from the documents of its slots.

    A cell's ``stats`` are its measured rounds' ``wall_s`` (``CellInfo.stats``),
    never the slots' own stats: a slot document written before those agreed timed the whole
    boot call, seconds more. ``selection``: the digest of the cells the run was asked for
    (every ``Cell`` of the plan, booted or not) and of its matrix, taken when they were
    chosen (``benchmarks.matrix.cells.selection_digest``), recorded as
    ``coldstart.matrix_cells`` so that ``coldstart check`` holds the document to them rather
    than to the whole matrix, while the matrix still has the cells it had.
    """
    first = next((d for _, d, _ in ran if d.machine_info), RunDocument(benchmarks=[]))
    per_cell: dict[str, dict[str, Any]] = {}
    for slot, doc, _record in ran:
        acc = per_cell.setdefault(slot.cell.id, {"cell": slot.cell, "rounds": [],
                                                 "checks": [], "entry": None, "floor": None})
        cells = [c for c in doc.cells() if c.id == slot.cell.id]
        recorded = next((c for c in cells if c.recorded), None)
        for c in [recorded] if recorded is not None else cells:
            if c.entry is not None:
                acc["entry"] = acc["entry"] or c.entry
                acc["floor"] = acc["floor"] or c.entry.extra_info.storage_floor
            acc["rounds"] += c.rounds
            acc["checks"] += [f"round {slot.round}: {check}" for check in c.checks_failed]
    entries, unrecorded = [], []
    for acc in per_cell.values():
        rounds_ = [apply_log_fallback(r, missing_targets) for r in acc["rounds"]]
        if not rounds_:
            continue
        # A round that died before vLLM named its platform ran on the machine of the
        # others: without it, compare would take it for another cell.
        platforms = {r.platform for r in rounds_ if r.platform}
        if len(platforms) == 1:
            rounds_ = [r if r.platform else r.model_copy(update={"platform": next(iter(platforms))})
                       for r in rounds_]
        entry = acc["entry"].with_rounds(rounds_, checks_failed=acc["checks"],
                                         storage_floor=acc["floor"]) \
            if acc["entry"] is not None else None
        if entry is None:
            unrecorded += [UnrecordedCell.of(r, acc["checks"]) for r in rounds_]
            continue
        entries.append(entry)
    meta = RunMeta(schema_version=SCHEMA_VERSION, matrix=matrix, rounds=rounds,
                   matrix_cells=selection or None,
                   written_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), host=platform.node(),
                   pid=os.getpid(), unrecorded=unrecorded, release=release.spec,
                   probe_targets_missing=[f"{t.module}:{t.attr} ({t.event})"
                                          for t in missing_targets],
                   interleaved={"order": ORDER_NOTE, "slots": [rec for _, _, rec in ran]},
                   **(extra_meta or {}))
    return RunDocument(machine_info=first.machine_info, commit_info=first.commit_info,
                       benchmarks=entries, datetime=first.datetime, version=first.version,
                       coldstart=meta).named()


def release_file(release: Release) -> str:
    return f"{release.package}-{release.version}.json"


def vllm_root(env: Path) -> Path | None:
    roots = sorted(env.glob("lib/python3*/site-packages/vllm"))
    return roots[0] if roots else None


def missing_probes(releases, envs, progress: Callable[[str], None]) -> list:
    """Per release, the probe targets its installed source lacks (said in a progress line:
    those phases are timed by the log reader where vLLM prints them)."""
    from harness.registry import missing_probe_targets

    missing = []
    for release, env in zip(releases, envs):
        root = vllm_root(env)
        gone = missing_probe_targets(root, release.version) if root else []
        if gone:
            progress(f"{release}: probe targets missing in its source, timed by the log reader "
                     f"where vLLM prints them: {', '.join(f'{t.module}:{t.attr}' for t in gone)}")
        missing.append(gone)
    return missing


def say(prog: str) -> Callable[[str], None]:
    def progress(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {prog}: {msg}", file=sys.stderr, flush=True)
    return progress


def stop_on_sigterm() -> None:
    """SIGTERM and SIGHUP stop the run as Ctrl-C does (``KeyboardInterrupt``), so the rounds
    that finished are written; a signal the caller ignores stays ignored."""
    raise_on_end_signals(KeyboardInterrupt)
