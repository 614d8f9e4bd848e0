"""Probe events of one boot -> phases that partition the boot's wall time.

The boot runs in several processes at once (front end, EngineCore, Worker), so intervals
can overlap. Every instant of ``[t0, ready]`` is given to at most one phase, by priority:
an instant inside a torch.compile call that itself sits inside the KV-cache profiling
window counts as torch.compile only, never twice. Instants no phase claims are the named
residual (its parts are named by the phase they follow). Hence, by construction,
``sum(phases) + residual == wall``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from document.boot_result import NOT_APPLICABLE_PREFIX, PHASE_NAMES

Interval = tuple[int, int]  # monotonic ns, start <= end

# Highest first: the phase that owns an instant claimed by several.
PRIORITY: tuple[str, ...] = (
    "cuda_graph_capture",
    "torch_compile",
    "model_loading",
    "tokenizer_init",
    "kv_cache_profiling",
    "framework_bootstrap",
)
assert set(PRIORITY) == set(PHASE_NAMES)


def merge(intervals: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def subtract(intervals: list[Interval], minus: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    minus = merge(minus)
    for start, end in merge(intervals):
        cur = start
        for m_start, m_end in minus:
            if m_end <= cur or m_start >= end:
                continue
            if m_start > cur:
                out.append((cur, m_start))
            cur = max(cur, m_end)
            if cur >= end:
                break
        if cur < end:
            out.append((cur, end))
    return out


def clip(intervals: list[Interval], lo: int, hi: int) -> list[Interval]:
    return [(max(s, lo), min(e, hi)) for s, e in intervals if e > lo and s < hi]


def total_s(intervals: list[Interval]) -> float:
    return sum(e - s for s, e in merge(intervals)) / 1e9


@dataclass
class Timeline:
    """The events of one boot, paired into intervals."""

    t0: int
    intervals: dict[str, list[Interval]] = field(default_factory=lambda: defaultdict(list))
    # (event, target) -> list of end records, for evidence (which loader ran, cache hit, ...)
    ends: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    marks: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    mark_targets: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    logs: list[dict[str, Any]] = field(default_factory=list)
    # Every record with its process, for the boot's trace: calls as start/end pairs
    # ({"event", "target", "pid", "start", "end", "unfinished"}) and the marks as recorded.
    calls: list[dict[str, Any]] = field(default_factory=list)
    mark_records: list[dict[str, Any]] = field(default_factory=list)
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)
    unfinished: list[str] = field(default_factory=list)
    # The same calls as {"pid", "event", "start"}: what a process was doing when it died.
    open_calls: list[dict[str, Any]] = field(default_factory=list)
    # Children reaped by a process of the boot: {"t", "pid" (the reaper), "child", "status"}.
    reaped: list[dict[str, Any]] = field(default_factory=list)
    probe_problems: list[str] = field(default_factory=list)

    @classmethod
    def from_file(cls, path: str | Path, t0: int | None = None, *,
                  end_unfinished_at: int | None = None,
                  process_ends: dict[int, int] | None = None) -> Timeline:
        """Read an events file; ``t0`` defaults to its ``boot.t0`` record."""
        lines = Path(path).read_text().splitlines() if Path(path).exists() else []
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:  # a process killed mid-write leaves half a line
                continue
        if t0 is None:
            t0 = next((r["t"] for r in records if r.get("e") == "boot.t0"), None)
            if t0 is None:
                raise ValueError(f"{path}: no boot.t0 record; pass t0")
        return cls.from_records(records, t0, end_unfinished_at=end_unfinished_at,
                                process_ends=process_ends)

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], t0: int, *,
                     end_unfinished_at: int | None = None,
                     process_ends: dict[int, int] | None = None) -> Timeline:
        """Pair the records; ``process_ends`` (pid -> instant) ends the calls a process left
        open where it died, instead of where the boot ended."""
        tl = cls(t0=t0)
        open_calls: dict[tuple[int, str, str], list[tuple[int, dict]]] = defaultdict(list)
        last_t = t0
        for rec in sorted(records, key=lambda r: r["t"]):
            t, event, kind, pid = rec["t"], rec["e"], rec["k"], rec.get("pid", 0)
            last_t = max(last_t, t)
            if event == "boot.t0":
                continue
            proc = tl.processes.setdefault(pid, {"pid": pid, "first_t": t})
            proc["name"] = rec.get("proc", proc.get("name"))
            if event == "process.start":
                proc.update(argv=rec.get("argv"), ppid=rec.get("ppid"))
            elif event == "process.reaped":
                tl.reaped.append({"t": t, "pid": pid, "child": rec.get("child"),
                                  "status": rec.get("status")})
            if kind == "log":
                tl.logs.append(rec)
            elif kind == "start":
                open_calls[(pid, event, rec["target"])].append((t, rec))
            elif kind == "end":
                stack = open_calls.get((pid, event, rec["target"]))
                if stack:
                    start, start_rec = stack.pop()
                    tl.intervals[event].append((start, t))
                    tl.calls.append({"event": event, "target": rec["target"], "pid": pid,
                                     "proc": rec.get("proc"), "start": start, "end": t,
                                     "unfinished": False})
                    rec = {**rec, "start_t": start, "io_start": start_rec.get("io")}
                tl.ends[event].append(rec)
            else:
                tl.mark_records.append(rec)
                tl.marks[event].append(t)
                tl.mark_targets[event].append(rec.get("target"))
                if event in ("probe.missing", "probe.error"):
                    tl.probe_problems.append(f"{event} {rec.get('target')} {rec.get('error', '')}".strip())
        # A call still open when the boot died ran until the last thing we saw (or, for a
        # boot that was killed, until the kill).
        for (pid, event, target), stack in open_calls.items():
            for start, start_rec in stack:
                end = max(start, (process_ends or {}).get(pid) or end_unfinished_at or last_t)
                tl.intervals[event].append((start, end))
                tl.calls.append({"event": event, "target": target, "pid": pid,
                                 "proc": start_rec.get("proc"), "start": start,
                                 "end": end, "unfinished": True})
                tl.unfinished.append(f"{event} ({target}, pid {pid})")
                tl.open_calls.append({"pid": pid, "event": event, "start": start})
        return tl

    def events_under(self, prefix: str) -> list[Interval]:
        return [iv for name, ivs in self.intervals.items()
                if name == prefix or name.startswith(prefix + ".") for iv in ivs]

    def marks_targets(self, name: str) -> list[str]:
        return list(self.mark_targets.get(name, []))

    def first_mark(self, name: str) -> int | None:
        return min(self.marks[name]) if self.marks.get(name) else None

    def first_start(self, event: str) -> int | None:
        ivs = self.intervals.get(event)
        return min(s for s, _ in ivs) if ivs else None


# Fields of a mark record kept in a BootResult's events besides its time and process.
_MARK_FIELDS = ("target", "argv", "ppid", "error", "value", "counters")


def timeline_events(tl: Timeline) -> list[dict[str, Any]]:
    """A timeline as a BootResult's ``events``, times in seconds from the boot's launch.

    Enough to replay the phase cut (``timeline_from_events``) and to draw every process:
    each process's first record, every probed call (``start_s``/``end_s``), every mark and
    every vLLM log record, each with the pid and process name that wrote it.
    """
    def sec(t: int) -> float:
        return (t - tl.t0) / 1e9

    out: list[dict[str, Any]] = [
        {"process": p.get("name"), "pid": pid, "event": "process.first_event",
         "t_s": sec(p["first_t"])} for pid, p in tl.processes.items()]
    for c in sorted(tl.calls, key=lambda c: (c["start"], -c["end"])):
        ev = {"event": c["event"], "target": c["target"], "pid": c["pid"],
              "process": c["proc"], "start_s": sec(c["start"]), "end_s": sec(c["end"])}
        if c["unfinished"]:
            ev["unfinished"] = True
        out.append(ev)
    for m in tl.mark_records:
        out.append({"event": m["e"], "pid": m.get("pid"), "process": m.get("proc"),
                    "t_s": sec(m["t"]), **{k: m[k] for k in _MARK_FIELDS if k in m}})
    for r in tl.logs:
        out.append({"event": "log", "pid": r.get("pid"), "process": r.get("proc"),
                    "t_s": sec(r["t"]), "level": r.get("lvl"), "logger": r.get("logger"),
                    "msg": r.get("msg")})
    return out


# The line vLLM's CPU runner logs as its warm-up starts (cpu_model_runner.warming_up_model):
# the log reader's CPU compile span starts there (harness.logs.compose.torch_compile_s).
CPU_WARM_UP_LINE = "Warming up model for the compilation"


def warm_up_before_compile_s(events: list[dict[str, Any]]) -> float | None:
    """Seconds from the CPU warm-up's log line to the first compile the probes time
    (``monitor_torch_compile``), both on the probes' clock; None where either is missing.

    The warm-up's own work before it compiles (the AOT cache key, the cache lookup): the
    log's span counts it as torch_compile, the probes in kv_cache_profiling."""
    warm_up = [e["t_s"] for e in events if e.get("event") == "log"
               and str(e.get("msg", "")).startswith(CPU_WARM_UP_LINE)]
    compiles = [e["start_s"] for e in events if e.get("event") == "torch_compile"]
    if not warm_up or not compiles:
        return None
    return min(compiles) - min(warm_up)


def timeline_from_events(events: list[dict[str, Any]]) -> Timeline:
    """Replay a BootResult's ``events`` (``timeline_events``) as a Timeline with t0 = 0.

    Events of results written before calls carried their process (no ``pid``) replay under
    pid 0; ``process.first_event`` entries are not records and are skipped.
    """
    def ns(seconds: float) -> int:
        return round(seconds * 1e9)

    records: list[dict[str, Any]] = []
    unfinished: set[tuple[str, int, int]] = set()
    for ev in events:
        pid, proc = ev.get("pid") or 0, ev.get("process")
        name = ev.get("event")
        if name == "process.first_event" or not isinstance(name, str):
            continue
        if "start_s" in ev and "end_s" in ev:
            base = {"e": name, "target": ev.get("target", "?"), "pid": pid, "proc": proc}
            records.append({**base, "t": ns(ev["start_s"]), "k": "start"})
            records.append({**base, "t": ns(ev["end_s"]), "k": "end"})
            if ev.get("unfinished"):
                unfinished.add((name, pid, ns(ev["start_s"])))
        elif name == "log" and "t_s" in ev:
            records.append({"t": ns(ev["t_s"]), "e": "log", "k": "log", "pid": pid, "proc": proc,
                            "lvl": ev.get("level"), "logger": ev.get("logger"),
                            "msg": ev.get("msg")})
        elif "t_s" in ev:
            records.append({"t": ns(ev["t_s"]), "e": name, "k": "mark", "pid": pid, "proc": proc,
                            **{k: ev[k] for k in _MARK_FIELDS if k in ev}})
    tl = Timeline.from_records(records, 0)
    # A call the boot died inside was closed at the boot's end; say so again.
    for call in tl.calls:
        if (call["event"], call["pid"], call["start"]) in unfinished:
            call["unfinished"] = True
            tl.unfinished.append(f"{call['event']} ({call['target']}, pid {call['pid']})")
    return tl


@dataclass
class PhaseCut:
    phases: dict[str, float | None]
    phase_notes: dict[str, str]
    subphases: dict[str, float | None]
    wall_s: float
    residual_s: float
    residual_parts_s: dict[str, float]
    owned: dict[str, list[Interval]]
    # The instants each sub-phase owns (within its phase's), what the trace draws.
    sub_owned: dict[str, list[Interval]] = field(default_factory=dict)


def cut_phases(tl: Timeline, end: int, *, platform: str | None, compile_enabled: bool) -> PhaseCut:
    """Partition ``[tl.t0, end]`` into the six phases and a residual."""
    t0 = tl.t0
    raw: dict[str, list[Interval]] = {
        "cuda_graph_capture": tl.events_under("cuda_graph_capture"),
        "torch_compile": tl.events_under("torch_compile"),
        "model_loading": tl.events_under("model_loading"),
        "tokenizer_init": tl.events_under("tokenizer_init"),
        "kv_cache_profiling": tl.events_under("kv_cache_profiling"),
    }
    loading_start = tl.first_start("model_loading")
    raw["framework_bootstrap"] = [(t0, loading_start if loading_start is not None else end)]

    owned: dict[str, list[Interval]] = {}
    claimed: list[Interval] = []
    for name in PRIORITY:
        mine = subtract(clip(raw[name], t0, end), claimed)
        owned[name] = mine
        claimed = merge(claimed + mine)

    phases: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    for name in PHASE_NAMES:
        # A phase with probe events is reported, whatever the configuration says: every
        # claimed instant must land in a reported phase, or the partition of the wall breaks.
        if raw[name]:
            phases[name] = total_s(owned[name])
        elif name == "cuda_graph_capture" and platform != "cuda":
            phases[name] = None
            notes[name] = f"{NOT_APPLICABLE_PREFIX}: no CUDA graphs on platform {platform!r}"
        elif name == "torch_compile" and not compile_enabled:
            phases[name] = None
            notes[name] = f"{NOT_APPLICABLE_PREFIX}: compilation disabled (enforce_eager)"
        else:
            phases[name] = None
            notes[name] = "no probe event: the boot did not reach this phase or the probe missed it"
    wall_s = (end - t0) / 1e9
    residual_ivs = subtract([(t0, end)], claimed)
    parts: dict[str, float] = defaultdict(float)
    for start, stop in residual_ivs:
        before = max((n for n in PHASE_NAMES if any(e <= start for _, e in owned[n])),
                     key=lambda n: max(e for _, e in owned[n] if e <= start), default="start")
        parts[f"after_{before}"] += (stop - start) / 1e9
    residual_s = total_s(residual_ivs)

    sub: dict[str, float | None] = {}
    sub_owned: dict[str, list[Interval]] = {}

    def own_sub(name: str, ivs: list[Interval]) -> None:
        phase = name.split(".")[0]
        # A sub-phase counts only the instants its phase owns: never more than its phase.
        if not ivs:
            sub[name] = None
            return
        sub_owned[name] = merge(_intersect(clip(ivs, t0, end), owned[phase]))
        sub[name] = total_s(sub_owned[name])

    # framework bootstrap: named stretches of the bootstrap window
    front_start = _first_process_start(tl)
    llm_init = tl.first_start("mark.llm_init")
    make_client = tl.first_start("mark.engine_client")
    core_init = tl.first_start("mark.engine_core_init")
    executor = tl.first_start("mark.executor_init")
    worker_init = tl.first_start("mark.worker_init")
    own_sub("framework_bootstrap.interpreter_start", [(t0, front_start)] if front_start else [])
    own_sub("framework_bootstrap.imports",
            [(front_start, llm_init)] if front_start and llm_init else [])
    for name in ("framework_bootstrap.engine_config", "framework_bootstrap.model_inspection"):
        own_sub(name, tl.intervals.get(name, []))
    # The renderer wraps the tokenizer; what it spends beyond the tokenizer load is bootstrap.
    own_sub("framework_bootstrap.renderer_init", tl.intervals.get("mark.renderer", []))
    own_sub("framework_bootstrap.engine_core_start",
            [(make_client, core_init)] if make_client and core_init else [])
    own_sub("framework_bootstrap.worker_start",
            [(executor, worker_init)] if executor and worker_init else [])
    own_sub("framework_bootstrap.device_init", tl.intervals.get("framework_bootstrap.device_init", []))
    for name in ("model_loading.model_init", "model_loading.load_weights",
                 "model_loading.process_weights",
                 "kv_cache_profiling.memory_profiling", "kv_cache_profiling.kv_cache_allocation",
                 "torch_compile.compiled_graph_load"):
        own_sub(name, tl.intervals.get(name, []))
    inductor = subtract(tl.intervals.get("torch_compile.inductor_compile", []),
                        tl.intervals.get("torch_compile.compiled_graph_load", []))
    own_sub("torch_compile.inductor_compile", inductor)
    if owned["torch_compile"]:
        rest = subtract(owned["torch_compile"],
                        inductor + tl.intervals.get("torch_compile.compiled_graph_load", []))
        sub["torch_compile.dynamo_transform"] = total_s(rest)
        sub_owned["torch_compile.dynamo_transform"] = merge(rest)
    return PhaseCut(phases, notes, sub, wall_s, residual_s, dict(parts), owned, sub_owned)


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out = []
    for s1, e1 in merge(a):
        for s2, e2 in merge(b):
            s, e = max(s1, s2), min(e1, e2)
            if s < e:
                out.append((s, e))
    return out


def _first_process_start(tl: Timeline) -> int | None:
    return tl.first_mark("process.start")
