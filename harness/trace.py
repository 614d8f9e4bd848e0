"""A boot's timeline as a trace (``coldstart trace``).

Writes Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format, which
ui.perfetto.dev and chrome://tracing open): one track per process of the boot (front end,
EngineCore, Worker, model inspection, compile workers) holding its probed calls as nested
slices and vLLM's log lines and the probe's marks as instants, and one track above them, the
phase cut: the six phases and the residual exactly as the BootResult counts them (each
instant of the boot in at most one phase), the sub-phases nested inside their phase.

The phase cut is replayed from the BootResult's events with the harness's own code
(``harness.timeline``), so the slices add up to the recorded phases. Results made by the
log reader hold marks only, and compacted runs (``coldstart compact``) hold no events: the
first gives instants without slices, the second is refused with a line saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from document import read_boots
from document.boot_result import (
    PHASE_NAMES,
    BootResult,
    SchemaError,
)
from harness.timeline import (
    PhaseCut,
    Timeline,
    cut_phases,
    merge,
    subtract,
    timeline_from_events,
)

__all__ = ["Slice", "Track", "boot_tracks", "chrome_trace", "find_boot"]

# The pid of the phase-cut track: no process of a boot has pid 0.
PHASES_PID = 0
PHASES_TRACK = "boot phases (each instant counted once)"
# Calls recorded without their process (results written before they carried it); pid 1 is
# init, never a process of a boot.
UNKNOWN_PID = 1
# vLLM's own spans, a track apart: pid 2 is the kernel's thread daemon, never a boot's.
SPANS_PID = 2
SPANS_TRACK = "vLLM's OpenTelemetry spans (its own witness)"
RESIDUAL = "residual"
# Axes that name a cell, in the order benchmarks/ writes test ids.
# Process names multiprocessing gives every process it did not name itself.
_GENERIC_NAMES = frozenset({"MainProcess", "child", None})


@dataclass
class Slice:
    name: str
    start_s: float
    end_s: float
    category: str  # "phase", "subphase", "residual", "call"
    lane: int = 0  # slices on one lane nest; overlapping ones that do not are moved down
    depth: int = 0  # how many slices of its lane it sits inside
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Instant:
    name: str
    t_s: float
    category: str  # "log" or "mark"
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Track:
    """One row of the timeline: the phase cut, or one process with its calls and instants."""

    pid: int
    label: str
    first_s: float
    last_s: float | None = None
    slices: list[Slice] = field(default_factory=list)
    instants: list[Instant] = field(default_factory=list)

    @property
    def lanes(self) -> int:
        return 1 + max((s.lane for s in self.slices), default=0)


# ------------------------------------------------------------------------------ the tracks
def _assign_lanes(slices: list[Slice]) -> None:
    """Give each slice the first lane where it nests inside what is open there (or nothing is
    open): the trace-event format draws a lane's complete events as a stack, so slices that
    overlap without nesting (calls of two threads, sub-phases that cross) need lanes apart."""
    stacks: list[list[Slice]] = []
    order = {"phase": 0, "residual": 0, "subphase": 1, "call": 1, "span": 1}
    for s in sorted(slices, key=lambda s: (s.start_s, -s.end_s, order[s.category])):
        for lane, stack in enumerate(stacks):
            while stack and stack[-1].end_s <= s.start_s:
                stack.pop()
            if not stack or s.end_s <= stack[-1].end_s:
                s.lane, s.depth = lane, len(stack)
                stack.append(s)
                break
        else:
            stacks.append([s])
            s.lane = len(stacks) - 1


def _replay(result: BootResult, tl: Timeline) -> PhaseCut | None:
    if result.wall_s is None or not tl.intervals:
        return None
    compile_enabled = not result.evidence.engine_kwargs.get("enforce_eager", False)
    return cut_phases(tl, round(result.wall_s * 1e9), platform=result.platform,
                      compile_enabled=compile_enabled)


def _phase_track(cut: PhaseCut) -> Track:
    track = Track(PHASES_PID, PHASES_TRACK, -1.0)
    for name in PHASE_NAMES:
        for start, end in cut.owned.get(name, []):
            track.slices.append(Slice(name, start / 1e9, end / 1e9, "phase"))
    for name, ivs in cut.sub_owned.items():
        for start, end in ivs:
            if end > start:
                track.slices.append(Slice(name, start / 1e9, end / 1e9, "subphase"))
    claimed = merge([iv for ivs in cut.owned.values() for iv in ivs])
    for start, end in subtract([(0, round(cut.wall_s * 1e9))], claimed):
        track.slices.append(Slice(RESIDUAL, start / 1e9, end / 1e9, "residual"))
    _assign_lanes(track.slices)
    return track


def _process_label(pid: int, names: list[str], started_in: str | None, front_end: bool) -> str:
    named = [n for n in names if n not in _GENERIC_NAMES]
    label = named[-1] if named else "MainProcess"
    if front_end:
        label = f"front end ({label})"
    elif not named and started_in:
        # An unnamed helper (model inspection, a compile worker): the call that started it
        # says which; its own argv is often just "-m" or "-c".
        label = f"helper of {started_in}"
    return f"{label} [pid {pid}]"


def _innermost_call(calls: list[dict[str, Any]], t_ns: int, pid: int) -> str | None:
    around = [c for c in calls if c["pid"] != pid and c["start"] <= t_ns <= c["end"]]
    return max(around, key=lambda c: c["start"])["event"] if around else None


def boot_tracks(result: BootResult) -> list[Track]:
    """The timeline of one boot: the phase-cut track first, then one track per process in
    the order they started. Times in seconds from the boot's launch."""
    events = result.events
    tl = timeline_from_events(events)
    tracks: list[Track] = []
    cut = _replay(result, tl)
    if cut is not None:
        tracks.append(_phase_track(cut))
    names: dict[int, list[str]] = {}
    first: dict[int, float] = {}
    for ev in events:
        pid = ev.get("pid")
        if not isinstance(pid, int):
            continue
        if ev.get("process") is not None:
            names.setdefault(pid, []).append(str(ev["process"]))
        t = ev.get("t_s", ev.get("start_s"))
        if isinstance(t, (int, float)):
            first[pid] = min(first.get(pid, t), t)
    front_end = min(first, key=first.get) if first else None
    by_pid: dict[int, Track] = {}
    last: dict[int, float] = {}
    for ev in events:
        t = ev.get("end_s", ev.get("t_s"))
        if isinstance(ev.get("pid"), int) and isinstance(t, (int, float)):
            last[ev["pid"]] = max(last.get(ev["pid"], t), t)
    for pid in sorted(first, key=first.get):
        started_in = _innermost_call(tl.calls, round(first[pid] * 1e9), pid)
        by_pid[pid] = Track(pid, _process_label(pid, names.get(pid, []), started_in,
                                                pid == front_end), first[pid], last.get(pid))
    # Results from before calls carried their pid: their calls go on one track of their own.
    for call in tl.calls:
        pid = call["pid"] or UNKNOWN_PID
        track = by_pid.get(pid)
        if track is None:
            track = by_pid.setdefault(pid, Track(pid, "process not recorded", call["start"] / 1e9))
        args = {"target": call["target"]} | ({"unfinished": True} if call["unfinished"] else {})
        track.slices.append(Slice(call["event"], call["start"] / 1e9, call["end"] / 1e9, "call",
                                  args=args))
    for ev in events:
        pid, t = ev.get("pid"), ev.get("t_s")
        name = ev.get("event")
        if pid not in by_pid or not isinstance(t, (int, float)) or name == "process.first_event":
            continue
        if name == "log":
            msg = str(ev.get("msg") or "")
            by_pid[pid].instants.append(Instant(
                f"{ev.get('level') or 'LOG'} {msg[:80]}", t, "log",
                {"level": ev.get("level"), "logger": ev.get("logger"), "msg": msg}))
        elif "start_s" not in ev:
            by_pid[pid].instants.append(Instant(
                str(name), t, "mark",
                {k: ev[k] for k in ("target", "argv", "ppid", "error") if k in ev}))
    for track in by_pid.values():
        _assign_lanes(track.slices)
    spans = _span_track(result)
    return tracks + ([spans] if spans is not None else []) + list(by_pid.values())


def _span_track(result: BootResult) -> Track | None:
    """vLLM's own OpenTelemetry spans (a boot with spans on), beside the probes' tracks:
    placed by the launch's Unix time, so within a millisecond of where they ran."""
    spans, launch = result.evidence.spans, result.evidence.spans_launch_unix_ns
    if not spans:
        return None
    if launch is None:  # read from an exported trace: no launch seen, the first span is 0
        launch = min(s.start_ns for s in spans)
    from document.span_phases import span_map_for

    mapping = span_map_for(result.vllm_version)[1]
    track = Track(SPANS_PID, SPANS_TRACK, (min(s.start_ns for s in spans) - launch) / 1e9)
    for s in spans:
        track.slices.append(Slice(s.name, (s.start_ns - launch) / 1e9,
                                  (s.end_ns - launch) / 1e9, "span",
                                  args={"phase": mapping.get(s.name, (None,))[0],
                                        "process": s.process.get("vllm.process_name")
                                        or s.process.get("vllm.process_kind") or "front end",
                                        "pid": s.process.get("vllm.process_id"),
                                        **{k: v for k, v in s.attributes.items()
                                           if k in ("code.function", "dynamo.time_seconds")}}))
    _assign_lanes(track.slices)
    return track


# ------------------------------------------------------------------------- the trace JSON
def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def chrome_trace(result: BootResult, *, title: str | None = None) -> dict[str, Any]:
    """The Chrome trace-event JSON object of one boot (``ts``/``dur`` in microseconds)."""
    out: list[dict[str, Any]] = []
    for index, track in enumerate(boot_tracks(result)):
        pid = track.pid
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                    "args": {"name": track.label}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                    "args": {"sort_index": index}})
        for lane in range(track.lanes):
            what = "phases" if pid == PHASES_PID else "calls"
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": lane,
                        "args": {"name": what if lane == 0 else f"{what} (overlapping, {lane})"}})
        for s in track.slices:
            start = _us(s.start_s)
            out.append({"ph": "X", "name": s.name, "cat": s.category, "ts": start,
                        "dur": round(_us(s.end_s) - start, 3), "pid": pid, "tid": s.lane,
                        "args": s.args})
        for i in track.instants:
            out.append({"ph": "i", "s": "t", "name": i.name, "cat": i.category,
                        "ts": _us(i.t_s), "pid": pid, "tid": 0, "args": i.args})
    meta = {"model": result.model, "vllm_version": result.vllm_version,
            "platform": result.platform, "state": result.state, "wall_s": result.wall_s,
            "phases_s": result.phases, "residual_s": result.residual_s}
    if title:
        meta["title"] = title
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": meta}


# ----------------------------------------------------------------------------- the input
def find_boot(path: str | Path, cell: str | None = None) -> tuple[str, BootResult]:
    """The boot a trace is made of: a BootResult file, or a cell of a result document (its
    median round). Returns a title and the result; SchemaError names what is wrong."""
    doc, found, single = read_boots(path)
    if doc is None:
        if not single:
            raise SchemaError(f"{path}: neither a BootResult nor a result document")
        if cell:
            raise SchemaError(f"{path}: a single BootResult, not a run: --cell does not apply")
        result = found[0].headline
        return f"{result.model} ({path})", result
    cells: dict[str, BootResult] = {}
    for c in found:
        cells.setdefault(c.id, c.headline)
    if cell is None:
        if len(cells) != 1:
            raise SchemaError(f"{path}: {len(cells)} cells: name one with --cell "
                              f"({', '.join(sorted(cells)) or 'none'})")
        cell = next(iter(cells))
    chosen = cells.get(cell)
    if chosen is None:  # the test name, test_cold_start[ID], names a cell too
        chosen = next((v for k, v in cells.items() if cell.endswith(f"[{k}]")), None)
    if chosen is None:
        raise SchemaError(f"{path}: no cell {cell!r}; cells: {', '.join(sorted(cells))}")
    return cell, chosen


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("harness.trace"))
