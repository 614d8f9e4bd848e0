"""Read a vLLM start-up log into the phase schema: the suite's second source after the probes.

A log line is a fallback, not the source of truth (STYLE.md, lesson 11): it holds what vLLM
chose to print, at the level it was run with, with the timestamps it was given (whole seconds
by default). This module reads what is there and nothing more: a phase the log cannot support
is ``None`` with the note ``schema.NOT_IN_LOG``, never an estimate.

Two steps, both public:

``scan_lines``
    matches every line against ``harness.registry.LOG_PATTERNS`` (the one place that knows
    how each vLLM release words its lines) and returns a ``LogScan``: durations vLLM reported,
    timestamps of instants, facts, the lines that looked like start-up timing but matched no
    pattern, and whether the log stops before start-up finished.
``read_log``
    turns a log into a ``schema.BootResult`` (``source="log"``).

How a phase is composed from log lines (vLLM 0.10.1.1 .. 0.32, GPU and CPU):

================== =========================================================================
phase              from the log
================== =========================================================================
framework_bootstrap first log line -> "Starting to load model", less tokenizer_init where the
                   log has it (the tokenizer loads inside that window). Interpreter start
                   before vLLM's first log line is not visible.
tokenizer_init     "NEW: Init Tokenizer took" (the study's patched vLLM only)
model_loading      "Model loading took ... and X seconds" (GPU runner); subphases
                   "Initializing model took" and "Loading weights took". The CPU runner
                   prints no total, so there model_loading is not in the log.
torch_compile      0.10/0.11: "torch.compile takes X s in total" (Dynamo + Inductor, cache
                   loading excluded) + "Directly load the compiled graph(s) ... took";
                   0.12+: the sum of "torch.compile took X s in total" (each compile or cache
                   load, loading included). On CPU (no such lines) the span from "Warming up
                   model for the compilation" to the AOT line that ends the compile ("saved
                   AOT compiled function", "Directly load AOT compilation"), from timestamps.
kv_cache_profiling "init engine (profile, create kv cache, warmup model) took" less
                   torch_compile and cuda_graph_capture (both happen inside it).
                   Subphase memory_profiling: "Memory profiling takes" (DEBUG) less
                   torch_compile; kv_cache_allocation: the rest (allocation and the
                   warm-up outside graph capture).
cuda_graph_capture "Graph capturing finished in X secs"; not applicable on CPU or eager.
================== =========================================================================

The V0 engine (LLMEngine, vLLM 0.3 .. 0.7; ``_compose_v0``) prints less, mostly without
durations, so its phases are spans between line timestamps (whole seconds): model_loading
"Starting to load model" (0.6+) -> "Loading model weights took X GB" (0.4.1+);
kv_cache_profiling the weights line -> "Capturing the model for CUDA graphs" (or "# GPU
blocks: N, # CPU blocks: M", the end of memory profiling, where nothing is captured), or 0.7's
"init engine ... took" less capture; cuda_graph_capture "Graph capturing finished in N secs".
0.3 prints neither a load start nor a weights line: only graph capture is in its log.

The reference study composes some of its columns differently; ``harness.study`` holds that
mapping and reproduces the study's published numbers from the same scan.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness import registry, schema

__all__ = ["LogScan", "scan_lines", "split_boots", "read_log", "read_boots", "model_from_filename"]

# vLLM colours its process prefix and levels when writing to a terminal.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# "<prefix>LEVEL MM-DD HH:MM:SS[.mmm] [file.py:123] message" ("file.py:123] message" up to
# 0.7, the V0 engine's logger); the prefix holds
# VLLM_LOGGING_PREFIX and "(EngineCore_DP0 pid=42)"-style process tags.
_HEADER = re.compile(
    r"^(?P<prefix>.*?)\b(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?P<ts>(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)\s+"
    r"(?:\[(?P<where>[^\]]*)\]|(?P<where_v0>[\w.\-]+:\d+)\])\s?(?P<msg>.*)$"
)
_BOOT_START = re.compile(registry.BOOT_START_REGEX)
# The first lines a vLLM process logs, and the processes that are a boot's front end: where
# the next boot begins.
_PROCESS_FIRST = re.compile(registry.PROCESS_FIRST_LINES_REGEX)
_FRONT_END = ("MainProcess", "APIServer")
_PROCESS = re.compile(r"\((?P<name>[^()]*?)\s+(?:rank=\d+\s+)?pid=(?P<pid>\d+)\)")
# A line that reads like start-up timing (a timing word and a number); if no pattern takes
# it, the scan reports it.
_LOOKS_TIMED = re.compile(r"\b(?:took|takes|seconds|secs|elapsed)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d")
_STUDY_FILENAME = re.compile(r"^output_model_(?P<name>[^_]+)")
# vLLM's timestamps carry no year. The stand-in year is a common one (a leap year would put
# a 29 Feb between 28 Feb and 1 Mar and add a day to a boot crossing them), unless the log
# itself names a 29 Feb; a boot crossing New Year moves to the next stand-in year.
_COMMON_YEAR, _LEAP_YEAR = 2001, 2000

# The instant each phase's evidence ends at, in boot order: a failed boot completed the
# phases before the last one it reached.
_END_EVIDENCE: dict[str, tuple[str, ...]] = {
    "framework_bootstrap": ("model_loading_start",),
    "tokenizer_init": ("tokenizer_init_s",),
    "model_loading": ("model_loading_s", "load_weights_s", "v0_weights_loaded"),
    "torch_compile": ("torch_compile_total_s", "compile_time_s", "compiled_graph_load_s",
                      "inductor_compile_s", "aot_loaded", "aot_saved"),
    "kv_cache_profiling": ("memory_profiling_s", "kv_cache_sized", "v0_blocks"),
    "cuda_graph_capture": ("graph_capture_s",),
}


@dataclass
class LogScan:
    """What one start-up log says, before it is cut into phases.

    Attributes
    ----------
    durations : vLLM's own reported durations in seconds, by ``LogPattern.key``
        (``load_weights_s``, ``inductor_compile_s``, ...). Where a line repeats (one per compile
        range, per model) this is the total its pattern asks for: the sum, or the last value of
        a running total. Every value is kept in ``occurrences``.
    occurrences : every value of every duration line, in log order.
    marks : seconds since the log's first timestamped line at which each instant-line (and each
        duration line) was logged, every occurrence in log order.
    events : the same instants with their process, ``{"process", "pid", "event", "t_s"}``.
    facts : ``vllm_version``, ``platform`` (cpu / cuda), ``model_path``, ``architecture``,
        ``weights_gib``,
        ``cuda_graph_sizes``, ``compile_cache`` (hit / miss / load_failure / disabled /
        not_applicable / unknown), ``timestamp_resolution_s``, ``log_span_s``, ``error``, ...
    unread : lines that read like start-up timing (took / takes / seconds ...) but matched no
        pattern, so a reworded line shows up instead of silently vanishing.
    truncated : the log stops before start-up finished (no "init engine ... took" line and no
        ready line): the boot died or the log was cut.
    """

    durations: dict[str, float] = field(default_factory=dict)
    occurrences: dict[str, list[float]] = field(default_factory=dict)
    marks: dict[str, list[float]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    truncated: bool = False
    lines_read: int = 0

    def first(self, mark: str) -> float | None:
        times = self.marks.get(mark)
        return times[0] if times else None

    def last(self, mark: str) -> float | None:
        times = self.marks.get(mark)
        return times[-1] if times else None


@dataclass
class _Line:
    text: str  # what the patterns are searched in
    raw: str
    t: datetime | None  # parsed in the stand-in year where the line names none
    level: str | None
    process: str | None
    pid: int | None
    subsecond: bool = False
    stamp: str | None = None  # the timestamp as written, "MM-DD HH:MM:SS[.fff]" or with a year

    @property
    def has_year(self) -> bool:
        return self.stamp is not None and len(self.stamp) > 4 and self.stamp[4] == "-"


def _parse_timestamp(text: str, year: int = _LEAP_YEAR) -> datetime | None:
    text = text.replace(",", ".").replace("T", " ")
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
        try:
            stamp = text if text[4] == "-" else f"{year}-{text}"
            return datetime.strptime(stamp, fmt)
        except (ValueError, IndexError):
            continue
    return None


def _place_in_time(parsed: list[_Line]) -> list[float | None]:
    """Seconds since the first timestamped line, for every line (None: no timestamp).

    A yearless timestamp is placed in the stand-in year (or the one after or before it) that
    puts it nearest the latest instant seen so far: a boot crossing New Year continues in the
    next year, and a line a second out of order (processes flush independently) stays beside
    its neighbours instead of jumping a year.
    """
    base = _LEAP_YEAR if any(line.stamp and line.stamp[:5] == "02-29" for line in parsed
                             if not line.has_year) else _COMMON_YEAR
    origin: datetime | None = None
    year = base
    latest: float | None = None
    out: list[float | None] = []
    for line in parsed:
        if line.t is None or line.stamp is None:
            out.append(None)
            continue
        if line.has_year:
            t = line.t
        else:
            candidates = [(y, _parse_timestamp(line.stamp, y)) for y in (year - 1, year, year + 1)]
            placed = [(y, c) for y, c in candidates if c is not None]
            if not placed:
                out.append(None)
                continue
            if origin is None or latest is None:
                year, t = next((y, c) for y, c in placed if y == year)
            else:
                anchor = origin.timestamp() + latest
                year, t = min(placed, key=lambda yc: abs(yc[1].timestamp() - anchor))
        if origin is None:
            origin = t
        t_s = (t - origin).total_seconds()
        out.append(t_s)
        latest = t_s if latest is None else max(latest, t_s)
    return out


def _split(raw: str) -> _Line:
    clean = _ANSI.sub("", raw).rstrip("\r\n")
    header = _HEADER.match(clean)
    if header is None:
        return _Line(clean.strip(), clean, None, None, None, None)
    proc = _PROCESS.search(header["prefix"])
    return _Line(
        header["msg"].strip(), clean, _parse_timestamp(header["ts"]), header["level"],
        proc["name"] if proc else None, int(proc["pid"]) if proc else None,
        subsecond=any(c in header["ts"][-7:] for c in ".,"), stamp=header["ts"],
    )


def _detect_version(lines: list[_Line]) -> str | None:
    for pattern in registry.LOG_PATTERNS:
        if pattern.key != "vllm_version":
            continue
        for line in lines:
            found = pattern.compiled.search(line.text)
            if found:
                return found["value"]
    return None


def _fact_value(key: str, found: re.Match[str]) -> Any:
    value = found.groupdict().get("value")
    if value is None:
        return True
    if key == "cuda_graph_sizes":
        return sorted(int(v) for v in re.findall(r"\d+", value))
    if key in ("weights_gib", "kv_cache_gib"):
        return float(value)
    if key in ("cfg_max_model_len", "cfg_tensor_parallel_size", "cfg_pipeline_parallel_size"):
        return int(value)
    if key == "cfg_enable_prefix_caching":
        return value == "True"
    if key == "cfg_quantization" and value == "None":
        return None
    if key == "kv_cache_tokens":
        return int(value.replace(",", ""))
    if key == "enforce_eager":
        return value == "True"
    return value.strip()


def _compile_disabled(facts: dict[str, Any]) -> bool:
    return facts.get("compilation_level") == "0" or facts.get("compilation_mode") in ("NONE", "0")


def _compile_cache(facts: dict[str, Any]) -> str:
    # The most specific observation wins: a disabled cache compiles (a miss) by design, and a
    # load failure is followed by a compile.
    if _compile_disabled(facts):
        return "not_applicable"
    for observed in ("disabled", "load_failure", "miss", "hit"):
        if f"compile_cache_{observed}" in facts:
            return observed
    return "unknown"


def engine_config(facts: dict[str, Any]) -> dict[str, Any]:
    """The engine configuration vLLM resolved and reported in its log: max_model_len, dtype,
    quantization, TP / PP size, prefix caching, KV-cache dtype, capture sizes (their number
    is a feature of the study's graph-capture model), KV-cache tokens and GiB."""
    out = {k.removeprefix("cfg_"): v for k, v in facts.items() if k.startswith("cfg_")}
    for key in ("enforce_eager", "kv_cache_tokens", "kv_cache_gib"):
        if key in facts:
            out[key] = facts[key]
    if "cuda_graph_sizes" in facts:
        out["cudagraph_capture_sizes"] = facts["cuda_graph_sizes"]
        out["num_capture_sizes"] = len(facts["cuda_graph_sizes"])
    return out


def scan_lines(lines: Iterable[str], version: str | None = None) -> LogScan:
    """Match every line of a start-up log against the registry's log patterns.

    Parameters
    ----------
    lines : the log, one line per item (a file object works); ANSI colours, process prefixes
        and the optional ``[tag] `` of compile lines are handled.
    version : the vLLM version that wrote the log. ``None`` reads it from the log's
        "Initializing a V1 LLM engine (vX)" line; where the log has none, every pattern of
        every version is tried.

    Returns
    -------
    LogScan
        Never raises on malformed input: lines it cannot place are skipped, and the ones that
        looked like timing are listed in ``unread``.
    """
    parsed = [_split(str(raw)) for raw in lines]
    if version is None:
        version = _detect_version(parsed)
    patterns = registry.log_patterns_for(version)
    scan = LogScan(lines_read=len(parsed))
    if version is not None:
        scan.facts["vllm_version"] = version

    times = _place_in_time(parsed)
    stamped = [t for t in times if t is not None]
    errors: list[str] = []
    # Per process (pid), the values of each duration line: tensor-parallel ranks each print
    # their own "Model loading took" (up to 0.11), and the boot waits for the slowest, so a
    # duration is summed within a process and the largest process total is the boot's.
    per_process: dict[str, dict[Any, list[float]]] = {}

    for line, t_s in zip(parsed, times):
        if line.level in ("ERROR", "CRITICAL"):
            errors.append(line.text)
        matched = False
        for pattern in patterns:
            found = pattern.compiled.search(line.text)
            if found is None:
                continue
            matched = True
            if pattern.kind == "duration":
                try:
                    seconds = float(found["s"])
                except (IndexError, ValueError):
                    continue
                if not math.isfinite(seconds):
                    continue
                scan.occurrences.setdefault(pattern.key, []).append(seconds)
                mine = per_process.setdefault(pattern.key, {}).setdefault(
                    line.pid if line.pid is not None else line.process, [])
                mine.append(seconds)
                scan.durations[pattern.key] = max(
                    values[-1] if pattern.repeats == "last" else sum(values)
                    for values in per_process[pattern.key].values())
                if t_s is not None:
                    scan.marks.setdefault(pattern.key, []).append(t_s)
            elif pattern.kind == "mark":
                if t_s is not None:
                    scan.marks.setdefault(pattern.key, []).append(t_s)
                    scan.events.append({"process": line.process or "main", "pid": line.pid,
                                        "event": pattern.key, "t_s": t_s})
                if pattern.key == "engine_failed":
                    errors.append(line.text)
            else:
                # Earlier lines win: the version and model are stated first by the front end.
                scan.facts.setdefault(pattern.key, _fact_value(pattern.key, found))
        if not matched and _LOOKS_TIMED.search(line.text) and _NUMBER.search(line.text):
            scan.unread.append(line.raw)

    if stamped:
        scan.facts["timestamp_resolution_s"] = (
            0.001 if any(line.subsecond for line in parsed) else 1.0)
        scan.facts["log_span_s"] = round(stamped[-1], 6)
    ranks = {k: len(v) for k, v in per_process.items() if len(v) > 1}
    if ranks:
        scan.facts["durations_from_processes"] = ranks
    scan.facts["compile_cache"] = _compile_cache(scan.facts)
    if errors:
        scan.facts["error"] = errors[0]
    finished = "init_engine_s" in scan.durations or any(
        k in scan.marks for k in ("engine_ready", "api_server_ready")) or _v0_finished(scan)
    scan.truncated = not finished
    return scan


# ------------------------------------------------------------------------------ phases
def _marked_before(scan: LogScan, key: str, end: float) -> bool:
    times = scan.marks.get(key)
    return bool(times) and times[0] <= end


def _framework_bootstrap(scan: LogScan, notes: dict[str, str]) -> float | None:
    end = scan.first("model_loading_start")
    if end is None or end < 0:
        # A start before the log's first line: the lines are out of order, no span to read.
        return None
    resolution = scan.facts.get("timestamp_resolution_s", 1.0)
    tokenizer = scan.durations.get("tokenizer_init_s")
    if tokenizer is not None and _marked_before(scan, "tokenizer_init_s", end):
        notes["framework_bootstrap"] = (
            f"log timestamps (resolution {resolution:g} s): first log line -> 'Starting to load "
            "model', less tokenizer_init; the interpreter start before vLLM's first line is "
            "not in the log")
        return max(0.0, end - tokenizer)
    notes["framework_bootstrap"] = (
        f"log timestamps (resolution {resolution:g} s): first log line -> 'Starting to load "
        "model'; includes the tokenizer load (not timed in this log); the interpreter start "
        "before vLLM's first line is not in the log")
    return end


def _torch_compile(scan: LogScan, notes: dict[str, str]) -> float | None:
    d = scan.durations
    if "torch_compile_total_s" in d:
        notes["torch_compile"] = "sum of vLLM's 'torch.compile took X s in total' lines"
        return d["torch_compile_total_s"]
    if "compile_time_s" in d:
        # Up to 0.11 this total is Dynamo + Inductor and leaves the cache load out; somewhere
        # after, the same words time the whole compile, load included. The larger of the total
        # and its parts is right under either meaning.
        parts = sum(d.get(k, 0.0) for k in
                    ("dynamo_transform_s", "inductor_compile_s", "compiled_graph_load_s"))
        notes["torch_compile"] = ("the larger of vLLM's 'torch.compile takes X s in total' and "
                                  "Dynamo + Inductor + 'Directly load the compiled graph(s)'")
        return max(d["compile_time_s"], parts)
    start = scan.first("warmup_start")
    if start is not None:
        # On CPU vLLM times no compile; the AOT line that ends it (saved after compiling,
        # or loaded) is the first instant after the warm-up starts that only compile precedes.
        ends = [t for key in ("aot_saved", "aot_loaded") for t in scan.marks.get(key, ())
                if t >= start]
        if ends:
            resolution = scan.facts.get("timestamp_resolution_s", 1.0)
            notes["torch_compile"] = (
                f"log timestamps (resolution {resolution:g} s): 'Warming up model for the "
                "compilation' -> the AOT line ('saved AOT compiled function' or 'Directly load "
                "AOT compilation')")
            return min(ends) - start
    return None


def _not_below_zero(difference: float, scan: LogScan) -> float | None:
    """A difference of logged durations; below zero by more than rounding, the log disagrees
    with itself and the value is not read."""
    # vLLM prints graph capture in whole seconds and most durations to 0.01 s.
    slack = 1.0 if scan.durations.get("graph_capture_s", 0.0).is_integer() else 0.02
    if difference < -slack:
        return None
    return max(0.0, difference)


def _capture_applies(facts: dict[str, Any]) -> str | None:
    """Why CUDA-graph capture does not apply to this boot, or None where it does."""
    platform = str(facts.get("platform", "")).lower() or None
    if platform is not None and platform not in ("cuda", "rocm"):
        return f"no CUDA graphs on {platform}"
    if facts.get("enforce_eager") is True:
        return "enforce_eager"
    return None


def _v0_finished(scan: LogScan) -> bool:
    """A V0 engine's offline boot prints no ready line: it is done after graph capture, or
    after the KV-cache size where no capture follows (eager, CPU)."""
    if not scan.facts.get("v0_engine"):
        return False
    if "graph_capture_s" in scan.durations:
        return True
    return "v0_blocks" in scan.marks and _capture_applies(scan.facts) is not None


def _span(scan: LogScan, start_key: str, end_key: str) -> float | None:
    """Seconds from the first ``start_key`` line to the first ``end_key`` line after it."""
    start = scan.first(start_key)
    if start is None:
        return None
    ends = [t for t in scan.marks.get(end_key, ()) if t >= start]
    return min(ends) - start if ends else None


def _compose_v0(scan: LogScan) -> tuple[dict[str, float | None], dict[str, float | None],
                                        dict[str, str], dict[str, str]]:
    """The V0 engine (LLMEngine, vLLM 0.3 .. 0.7): fewer lines, most phases from timestamps.

    What each release prints (read from its wheel): 0.3 the engine line, "# GPU blocks" and
    graph capture; 0.4 and 0.5 also "Loading model weights took X GB" (the end of loading,
    its start is not logged); 0.6 also "Starting to load model"; 0.7 also "init engine
    (profile, create kv cache, warmup model) took" and "Memory profiling takes". A phase
    whose start or end its release does not print is not in the log.
    """
    d, facts = scan.durations, scan.facts
    phases: dict[str, float | None] = {}
    subphases: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    how: dict[str, str] = {}
    resolution = facts.get("timestamp_resolution_s", 1.0)
    stamps = f"log timestamps (resolution {resolution:g} s)"

    phases["framework_bootstrap"] = _framework_bootstrap(scan, how)
    phases["tokenizer_init"] = d.get("tokenizer_init_s")
    loading = _span(scan, "model_loading_start", "v0_weights_loaded")
    phases["model_loading"] = loading
    if loading is not None:
        how["model_loading"] = f"{stamps}: 'Starting to load model' -> 'Loading model weights took'"
    subphases["model_loading.model_init"] = d.get("model_init_s")
    subphases["model_loading.load_weights"] = d.get("load_weights_s")

    if _compile_disabled(facts):
        notes["torch_compile"] = f"{schema.NOT_APPLICABLE_PREFIX}: compilation disabled (level 0)"
        compile_s: float | None = None
    else:
        compile_s = _torch_compile(scan, how)
    phases["torch_compile"] = compile_s
    # V0 compiles only when asked (a compilation level above 0, from 0.6.2): with no compile
    # line there is nothing to take out of the profiling window; the note says so.
    compile_part = compile_s or 0.0
    if compile_s is None and not _compile_disabled(facts):
        how["torch_compile"] = ("no compile line: the V0 engine compiles only when asked, so "
                                "nothing is taken out of kv_cache_profiling for it")

    not_applicable = _capture_applies(facts)
    if not_applicable:
        notes["cuda_graph_capture"] = f"{schema.NOT_APPLICABLE_PREFIX}: {not_applicable}"
        capture_s, capture_part = None, 0.0
    else:
        capture_s = d.get("graph_capture_s")
        capture_part = capture_s
    phases["cuda_graph_capture"] = capture_s

    kv: float | None = None
    init = d.get("init_engine_s")
    if init is not None and capture_part is not None:
        kv = _not_below_zero(init - compile_part - capture_part, scan)
        how["kv_cache_profiling"] = ("vLLM's 'init engine (profile, create kv cache, warmup "
                                     "model) took' less torch_compile and cuda_graph_capture")
    elif "v0_weights_loaded" in scan.marks:
        # From the end of loading to where the capture starts (KV cache allocated), or,
        # without a capture, to the KV-cache size line: the allocation after it is not logged.
        end_key = "capture_start" if not not_applicable and "capture_start" in scan.marks \
            else "v0_blocks"
        span = _span(scan, "v0_weights_loaded", end_key)
        if span is not None:
            kv = _not_below_zero(span - compile_part, scan)
            how["kv_cache_profiling"] = (
                f"{stamps}: 'Loading model weights took' -> "
                + ("'Capturing the model for CUDA graphs'" if end_key == "capture_start" else
                   "'# GPU blocks' (the KV-cache allocation after it is not in the log)"))
    if "memory_profiling_s" in d:
        subphases["kv_cache_profiling.memory_profiling"] = _not_below_zero(
            d["memory_profiling_s"] - compile_part, scan)
    else:
        profiling = _span(scan, "v0_weights_loaded", "v0_blocks")
        if profiling is not None:
            subphases["kv_cache_profiling.memory_profiling"] = _not_below_zero(
                profiling - compile_part, scan)
            how["kv_cache_profiling.memory_profiling"] = (
                f"{stamps}: 'Loading model weights took' -> '# GPU blocks'")
    phases["kv_cache_profiling"] = kv

    for name in schema.PHASE_NAMES:
        if phases.get(name) is None:
            notes.setdefault(name, schema.NOT_IN_LOG)
    return phases, subphases, notes, how


def _compose(scan: LogScan) -> tuple[dict[str, float | None], dict[str, float | None],
                                     dict[str, str], dict[str, str]]:
    """Cut a scan into phases and subphases: (phases, subphases, phase_notes, how)."""
    if scan.facts.get("v0_engine"):
        return _compose_v0(scan)
    d, facts = scan.durations, scan.facts
    phases: dict[str, float | None] = {}
    subphases: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    how: dict[str, str] = {}
    platform = str(facts.get("platform", "")).lower() or None

    phases["framework_bootstrap"] = _framework_bootstrap(scan, how)
    phases["tokenizer_init"] = d.get("tokenizer_init_s")

    phases["model_loading"] = d.get("model_loading_s")
    subphases["model_loading.model_init"] = d.get("model_init_s")
    subphases["model_loading.load_weights"] = d.get("load_weights_s")

    compile_s: float | None
    if _compile_disabled(facts):
        notes["torch_compile"] = f"{schema.NOT_APPLICABLE_PREFIX}: compilation disabled (mode NONE)"
        compile_s = None
        compile_part = 0.0
    else:
        compile_s = _torch_compile(scan, how)
        compile_part = compile_s
    phases["torch_compile"] = compile_s
    if compile_s is not None:
        cache = facts.get("compile_cache")
        subphases["torch_compile.dynamo_transform"] = d.get("dynamo_transform_s")
        # A cache hit compiles nothing and a miss loads nothing: the log says so by the
        # absence of the other line, next to the line that is there.
        subphases["torch_compile.inductor_compile"] = d.get(
            "inductor_compile_s", 0.0 if cache == "hit" and "compiled_graph_load_s" in d else None)
        subphases["torch_compile.compiled_graph_load"] = d.get(
            "compiled_graph_load_s", 0.0 if cache == "miss" and "inductor_compile_s" in d else None)

    capture_s: float | None
    capture_part: float | None
    if platform is not None and platform != "cuda" and platform != "rocm":
        notes["cuda_graph_capture"] = f"{schema.NOT_APPLICABLE_PREFIX}: no CUDA graphs on {platform}"
        capture_s, capture_part = None, 0.0
    elif facts.get("enforce_eager") is True:
        notes["cuda_graph_capture"] = f"{schema.NOT_APPLICABLE_PREFIX}: enforce_eager"
        capture_s, capture_part = None, 0.0
    else:
        capture_s = d.get("graph_capture_s")
        capture_part = capture_s
    phases["cuda_graph_capture"] = capture_s

    init = d.get("init_engine_s")
    kv: float | None = None
    if init is not None and compile_part is not None and capture_part is not None:
        # torch.compile runs inside the profiling forward and graph capture inside the
        # warm-up: both are inside vLLM's "init engine" window, counted once in their phase.
        kv = _not_below_zero(init - compile_part - capture_part, scan)
        how["kv_cache_profiling"] = ("vLLM's 'init engine (profile, create kv cache, warmup "
                                     "model) took' less torch_compile and cuda_graph_capture")
        if "memory_profiling_s" in d:
            profiling = _not_below_zero(d["memory_profiling_s"] - compile_part, scan)
            subphases["kv_cache_profiling.memory_profiling"] = profiling
            if kv is not None and profiling is not None:
                subphases["kv_cache_profiling.kv_cache_allocation"] = _not_below_zero(
                    kv - profiling, scan)
            how["kv_cache_profiling.kv_cache_allocation"] = (
                "the rest of kv_cache_profiling after memory profiling: KV-cache allocation "
                "and the warm-up outside graph capture")
    elif init is not None:
        how["kv_cache_profiling"] = ("'init engine ... took' is in the log, but the compile or "
                                     "capture time inside it is not: not separable")
    phases["kv_cache_profiling"] = kv

    for name in schema.PHASE_NAMES:
        if phases.get(name) is None:
            notes.setdefault(name, schema.NOT_IN_LOG)
    return phases, subphases, notes, how


def _reached(scan: LogScan) -> int:
    """Index in boot order of the last phase the log shows evidence of (-1: none)."""
    reached = -1
    for i, name in enumerate(schema.PHASE_NAMES):
        if any(k in scan.durations or k in scan.marks for k in _END_EVIDENCE[name]):
            reached = i
    return reached


# Boot order of the phases whose start the log shows (the tokenizer loads inside bootstrap,
# in the front end), and the instants each begins at.
_STARTS: dict[str, tuple[str, ...]] = {
    "framework_bootstrap": (),
    "model_loading": ("model_loading_start",),
    "torch_compile": ("compile_start", "warmup_start"),
    "kv_cache_profiling": (),
    "cuda_graph_capture": ("kv_cache_sized", "capture_start"),
}


def _unfinished_phase(scan: LogScan, reached: int, notes: dict[str, str]) -> str | None:
    """The phase a log that stops before start-up finished was in: the first applicable one
    after the last phase it shows the end of. Its start and the log's last instant bound how
    long it ran at least (``scan.facts["unfinished"]``)."""
    if "log_span_s" not in scan.facts:
        return None
    order = list(schema.PHASE_NAMES)
    for name in _STARTS:
        if order.index(name) <= reached:
            continue
        if notes.get(name, "").startswith(schema.NOT_APPLICABLE_PREFIX):
            continue
        starts = [t for key in _STARTS[name] for t in scan.marks.get(key, ())]
        start = 0.0 if name == "framework_bootstrap" else (min(starts) if starts else None)
        info: dict[str, Any] = {"phase": name}
        if start is not None:
            info["at_least_s"] = round(max(0.0, scan.facts["log_span_s"] - start), 6)
        scan.facts["unfinished"] = info
        return name
    return None


def split_boots(lines: list[str]) -> list[list[str]]:
    """The boots one log holds, in order: a restarted pod appends its next boot to the file.

    A boot is known by the lines vLLM prints once per boot and process (the engine's
    "Initializing a V1 LLM engine (vX)", the front end's "non-default args" and "vLLM API
    server version"): the same line again from the same process name means another boot
    (the engines of a data-parallel boot, EngineCore_DP0 and _DP1, are different names).
    That boot began before it: at the front end's first process line (untagged, MainProcess
    or APIServer: "No plugins for group ...", "Automatically detected platform") after the
    previous boot's last start line, where there is one; else at the first of the lines just
    before it that its own process logged, if the previous boot never used that pid (a
    restarted container reuses pid 1: then the cut is the start line itself).
    """
    parsed = [_split(str(raw)) for raw in lines]
    cuts: list[int] = []
    seen: set[tuple[str | None, str]] = set()
    boot_begin = 0
    last_start = -1  # index of the current boot's latest start line
    for i, line in enumerate(parsed):
        found = _BOOT_START.search(line.text) if line.level is not None else None
        if found is None:
            continue
        key = (found.lastgroup, line.process or "main")
        if key in seen:
            begin = next((j for j in range(last_start + 1, i)
                          if _PROCESS_FIRST.search(parsed[j].text)
                          and (parsed[j].process or "MainProcess") in _FRONT_END), None)
            if begin is None:
                begin = i
                while (line.pid is not None and begin - 1 > last_start
                       and parsed[begin - 1].pid == line.pid):
                    begin -= 1
                if any(parsed[j].pid == line.pid for j in range(boot_begin, begin)):
                    begin = i
            cuts.append(begin)
            boot_begin = begin
            seen = set()
        seen.add(key)
        last_start = i
    bounds = [0, *cuts, len(lines)]
    return [list(lines[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]


def model_from_filename(path: str | Path) -> str | None:
    """The model of a reference-study log file, ``output_model_<name>[_<params>].txt``."""
    found = _STUDY_FILENAME.match(Path(path).name)
    return found["name"].removesuffix(".txt") if found else None


def _model_name(model_path: str | None) -> str | None:
    if not model_path:
        return None
    # A local folder is named by its last component; a hub id ("org/name") stays whole.
    if model_path.startswith(("/", ".", "~")):
        return Path(model_path.rstrip("/")).name or None
    return model_path


def read_log(path_or_text: str | Path, *, model: str | None = None) -> schema.BootResult:
    """Read one vLLM start-up log into a ``BootResult`` with ``source="log"``.

    Parameters
    ----------
    path_or_text : a ``Path``, a ``str`` without a newline (a file name), or the log itself
        (a ``str`` with at least one newline).
    model : the model name to record; by default the log's model (the last component of a
        local path, or the hub id), else the study's file name ``output_model_<name>...txt``.

    Returns
    -------
    BootResult
        ``state="measured"``, or ``"failed"`` where the log stops before start-up finished
        (``error`` says why, ``log_tail`` holds the last lines, the phases it completed are
        kept). A phase the log cannot support is ``None`` with ``phase_notes[name] ==
        schema.NOT_IN_LOG``; on CPU ``cuda_graph_capture`` is "not applicable: ...".

    A log holding several boots (a restarted pod appending to one file, see ``split_boots``)
    gives its last boot, with ``evidence["boots_in_log"]``; ``read_boots`` gives them all.

    Raises
    ------
    OSError
        The file is missing or unreadable.
    """
    return read_boots(path_or_text, model=model)[-1]


def read_boots(path_or_text: str | Path, *, model: str | None = None) -> list[schema.BootResult]:
    """Every boot of one log (``split_boots``), each read as ``read_log`` reads one; a log
    with one boot gives a list of one."""
    source_path: str | None = None
    if isinstance(path_or_text, Path) or "\n" not in path_or_text:
        source_path = str(path_or_text)
        text = Path(path_or_text).read_text(encoding="utf-8", errors="replace")
    else:
        text = path_or_text
    lines = text.splitlines()
    partial = None
    if text and not text.endswith(("\n", "\r")):
        # vLLM ends every record with a newline: a last line without one was cut mid-write
        # (the process was killed), and a number on it may be cut short too.
        partial = lines.pop()
    boots = split_boots(lines) or [[]]
    out = []
    for i, boot in enumerate(boots):
        last = i == len(boots) - 1
        result = _read_boot(boot, partial if last else None, source_path, model)
        if len(boots) > 1:
            result.evidence["boots_in_log"] = len(boots)
            result.evidence["boot_in_log"] = i + 1
        out.append(result)
    return out


def _read_boot(lines: list[str], partial: str | None, source_path: str | None,
               model: str | None) -> schema.BootResult:
    scan = scan_lines(lines)
    facts = scan.facts
    phases, subphases, notes, how = _compose(scan)

    state: schema.State = "failed" if scan.truncated else "measured"
    error = log_tail = None
    if scan.truncated:
        error = facts.get("error") or "log ends before start-up finished (no 'init engine ... took' line)"
        log_tail = "\n".join(lines[-20:])
        reached = _reached(scan)
        inside = _unfinished_phase(scan, reached, notes)
        for i, name in enumerate(schema.PHASE_NAMES):
            if phases.get(name) is None and i > reached:
                notes[name] = schema.FAILED_BEFORE
        if inside is not None:
            notes[inside] = f"{schema.UNFINISHED_PREFIX}: the log ends inside this phase"

    model_path = facts.get("model_path")
    name = model or _model_name(model_path) or (
        model_from_filename(source_path) if source_path else None) or (
        Path(source_path).stem if source_path else "unknown")
    version = facts.get("vllm_version")
    platform = str(facts["platform"]).lower() if "platform" in facts else None
    evidence = {
        "facts": facts,
        "composition": how,
        "marks": scan.marks,
        # Every value of the duration lines that repeat (log_durations holds their totals).
        "occurrences": {k: v for k, v in scan.occurrences.items() if len(v) > 1},
        "unread": scan.unread,
        "truncated": scan.truncated,
    }
    if partial is not None:
        evidence["partial_last_line"] = partial
    return schema.BootResult(
        state=state, model=name, model_path=model_path, source="log", source_path=source_path,
        vllm_version=version, platform=platform, phases=phases, phase_notes=notes,
        subphases=subphases, compile_cache_observed=facts.get("compile_cache"),
        log_durations=dict(scan.durations), events=scan.events, error=error, log_tail=log_tail,
        versions={"vllm": version} if version else {}, evidence=evidence,
        engine_config=engine_config(facts),
    )
