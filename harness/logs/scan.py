"""Scan a vLLM start-up log: every line matched against ``harness.registry.LOG_PATTERNS``.

The first of the log reader's two steps (``harness.logs`` holds the public entry points and
the description of the whole reader): this module parses each line's header (level,
timestamp, ``file.py:123`` tag, the process tags of its prefix), places the lines in time,
collects vLLM's durations per process, the instants and the facts, and cuts a log holding
several boots into one list of lines per boot (``split_boots``). ``harness.logs.compose``
(V1) and ``harness.logs.compose`` (the V0 engine) cut a scan into phases.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from harness.logs.facts import (
    assigned_ranks,
    capture_not_applicable,
    compile_cache_state,
    fact_value,
    parallel_ranks,
    resolve_platform,
    version_range,
)
from harness.logs.lines import LogLine, detect_version, has_process_tag, parse_line, place_in_time
from harness.logs.normalise import seconds as to_seconds
from harness.registry import (
    LOG_PATTERNS,
    PLATFORM_ABSENT,
    PLATFORM_CLUES,
    PLATFORM_FROM_SOURCE,
    TRACEBACK_COMPILER_PATH,
    TRACEBACK_FUNCTIONS,
    TRACEBACK_LOADER_PATH,
    V0_ONLY_KEYS,
    V0_PROCESSES,
    V0_SOURCES,
    V0_SOURCES_BEFORE_0_11,
    V1_ONLY_KEYS,
    V1_PROCESSES,
    V1_SOURCES,
    VERSION_CLUE_KEYS,
    VERSION_CLUE_LINES,
    VERSION_CLUE_SOURCES,
    LogPattern,
    in_range,
    log_patterns_for,
)
from harness.registry.patterns import V0_WORDING_CLUES
from harness.registry.version_range import overlaps

__all__ = ["LogScan", "scan_lines", "is_log_line"]

_FRAME = re.compile(r'File "(?P<path>[^"]+)", line \d+, in (?P<func>[\w<>]+)\s*$')
_CALL = re.compile(r"^\s*(?:[\w.\[\], ]+=\s*)?(?:await\s+)?[\w.]*?\b(?P<func>\w+)\(")
_COMPILER = re.compile(TRACEBACK_COMPILER_PATH)
# vLLM's package and its platform plugins' (vllm_ascend, vllm_gaudi, ...), not torch's own
# files of the same name (torch/cuda/...)
_VLLM_PATH = re.compile(r"[/\\]vllm(?:[_-]\w+)?[/\\]")
_LOADER = re.compile(TRACEBACK_LOADER_PATH)
_V0_ONLY = set(V0_ONLY_KEYS)
_V1_SOURCES = set(V1_SOURCES)
_FUNCTION_PHASE = {f: phase for phase, names in TRACEBACK_FUNCTIONS for f in names}
# A line that reads like start-up timing (a timing word and a number); if no pattern takes
# it, the scan reports it.
LOOKS_TIMED = re.compile(r"\b(?:took|takes|seconds|secs|elapsed)\b", re.IGNORECASE)
HAS_DIGIT = re.compile(r"\d")
_PLATFORM_CLUES = [(name, re.compile(regex)) for name, regex in PLATFORM_CLUES]
_PLATFORM_ABSENT = re.compile(PLATFORM_ABSENT)
# The process tags and rank prefix a line without a log header (a traceback's) begins with.
_LEADING_TAGS = re.compile(r"^\s*(?:\([^()]*\)\s*)*(?:\[rank\d+\]:)?")
_VERSION_CLUE_LINES = {name: re.compile(r) for name, r in VERSION_CLUE_LINES.items()}
_VERSION_CLUE_SOURCES = {name: (source, re.compile(r))
                         for name, (source, r) in VERSION_CLUE_SOURCES.items()}
# An exception Python printed without a log header ("RuntimeError: CUDA out of memory",
# "[rank0]: torch.OutOfMemoryError: ..."), after any process tags and rank prefix.
_RAISED = re.compile(r"^(?:\([^()]*pid=\d+[^()]*\)\s*)*(?:\[rank\d+\]:\s*)?"
                     r"(?:[\w.]+\.)?\w*(?:Error|Exception)\b(?::|$)")


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
    facts : ``vllm_version`` (``vllm_version_line``: the line stating it; else
        ``vllm_version_range`` and its ``vllm_version_clues``), ``platform`` (cuda / rocm /
        cpu / tpu / xpu / hpu / npu; ``platform_from`` where no line states it), the ranks
        process tags name (``tp_ranks_seen``, ...), ``model_path``, ``architecture``,
        ``weights_gib``,
        ``cuda_graph_sizes``, ``compile_cache`` (hit / miss / load_failure / disabled /
        not_applicable / unknown), ``timestamp_resolution_s``, ``log_span_s``, ``error``, ...
    unread : lines that read like start-up timing (took / takes / seconds ...) but matched no
        pattern, so a reworded line shows up instead of silently vanishing.
    facts["engine"] : "v0" or "v1": from the "Initializing a V0 / V1 LLM engine" line, else from
        the lines and processes only one engine has (``registry.V0_ONLY_KEYS`` ...).
    facts["traceback_phase"] : the phase the innermost vLLM frame of a traceback belongs to
        (``registry.TRACEBACK_PHASES``), where the log holds one.
    truncated : the log stops before start-up finished (no "init engine ... took" line and no
        ready line): the boot died or the log was cut.
    first_error : index of the log's first error line (an ERROR or CRITICAL record, a
        traceback's start, an exception Python printed), where it has one: the crash.
    """

    durations: dict[str, float] = field(default_factory=dict)
    occurrences: dict[str, list[float]] = field(default_factory=dict)
    marks: dict[str, list[float]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    truncated: bool = False
    lines_read: int = 0
    # (line index, key) of every mark and duration line, in the order the log holds them
    # (timestamps of processes flushing independently can be out of order; lines are not).
    order: list[tuple[int, str]] = field(default_factory=list)
    first_error: int | None = None

    def first(self, mark: str) -> float | None:
        times = self.marks.get(mark)
        return times[0] if times else None

    def last(self, mark: str) -> float | None:
        times = self.marks.get(mark)
        return times[-1] if times else None



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
    parsed = [parse_line(str(raw)) for raw in lines]
    if version is None:
        version = detect_version(parsed)
    patterns = log_patterns_for(version)
    scan = LogScan(lines_read=len(parsed))
    if version is not None:
        scan.facts["vllm_version"] = version

    times = place_in_time(parsed)
    stamped = [t for t in times if t is not None]
    errors: list[str] = []
    # Per process (pid), the values of each duration line: tensor-parallel ranks each print
    # their own "Model loading took" (up to 0.11), and the boot waits for the slowest, so a
    # duration is summed within a process and the largest process total is the boot's.
    per_process: dict[str, dict[Any, list[float]]] = {}
    # Ray (and other wrappers) print a worker's record again with the outer prefixes: the same
    # instant and message from a chain of process tags that ends in one seen before (or that
    # one ends in it) is that echo, read once.
    seen: dict[tuple[str | None, str], list[tuple[Any, ...]]] = {}
    processes: set[str] = set()
    sources: list[str] = []
    traceback_phase: str | None = None
    after_frame = False
    platform_clues: list[str] = []
    frame_sources: list[str] = []
    version_clues: set[str] = set()

    for index, (line, t_s) in enumerate(zip(parsed, times)):
        if line.level is not None:
            chains = seen.setdefault((line.stamp, line.text), [])
            if line.tags and any(_echo(line.tags, chain) for chain in chains):
                continue
            chains.append(line.tags)
            processes.update(name for name, _, _ in line.tags)
            if line.source:
                sources.append(line.source)
        frame = _traceback_phase(line, after_frame)
        found_frame = _FRAME.search(line.text if line.level is not None else line.raw)
        after_frame = found_frame is not None
        if found_frame is not None and _VLLM_PATH.search(found_frame["path"]):
            # a frame in vLLM's (or a platform plugin's) file names that file as a tag does
            frame_sources.append(re.split(r"[/\\]", found_frame["path"])[-1])
        if frame is not None:
            traceback_phase = _innermost(traceback_phase, frame)
        if line.level in ("ERROR", "CRITICAL"):
            errors.append(line.text)
        if scan.first_error is None and (line.level in ("ERROR", "CRITICAL") or (
                line.level is None and _RAISED.match(line.text))):
            scan.first_error = index
        _clues(line, platform_clues, version_clues)
        matched = False
        for pattern in patterns:
            found = pattern.compiled.search(line.text)
            if found is None:
                continue
            if pattern.key in _V0_ONLY and line.source in _V1_SOURCES:
                continue  # V0's wording kept by a V1 runner: no sign of V0 or of its releases
            matched = True
            if pattern.kind == "duration":
                try:
                    seconds = to_seconds(found["s"], found.groupdict().get("unit"))
                except (IndexError, ValueError):
                    continue
                if not math.isfinite(seconds):
                    continue
                scan.occurrences.setdefault(pattern.key, []).append(seconds)
                scan.order.append((index, pattern.key))
                mine = per_process.setdefault(pattern.key, {}).setdefault(line.who, [])
                mine.append(seconds)
                scan.durations[pattern.key] = max(
                    values[-1] if pattern.repeats == "last" else sum(values)
                    for values in per_process[pattern.key].values())
                if t_s is not None:
                    scan.marks.setdefault(pattern.key, []).append(t_s)
            elif pattern.kind == "mark":
                scan.order.append((index, pattern.key))
                if pattern.key == "engine_failed" and scan.first_error is None:
                    scan.first_error = index
                if t_s is not None:
                    scan.marks.setdefault(pattern.key, []).append(t_s)
                    scan.events.append({"process": line.process or "main", "pid": line.pid,
                                        "event": pattern.key, "t_s": t_s})
                if pattern.key == "engine_failed":
                    errors.append(line.text)
            else:
                # Earlier lines win: the version and model are stated first by the front end.
                scan.facts.setdefault(pattern.key, fact_value(pattern.key, found))
                if pattern.key == "vllm_version" and found["value"] == version:
                    scan.facts.setdefault("vllm_version_line", pattern.why)
        if not matched and LOOKS_TIMED.search(line.text) and HAS_DIGIT.search(line.text):
            scan.unread.append(line.raw)

    if stamped:
        scan.facts["timestamp_resolution_s"] = (
            0.001 if any(line.subsecond for line in parsed) else 1.0)
        scan.facts["log_span_s"] = round(stamped[-1], 6)
    ranks = {k: len(v) for k, v in per_process.items() if len(v) > 1}
    if ranks:
        scan.facts["durations_from_processes"] = ranks
    scan.facts["compile_cache"] = compile_cache_state(scan.facts)
    keys = set(scan.marks) | set(scan.durations) | {k for _, k in scan.order}
    inferred = version_range(version_clues | (keys & set(VERSION_CLUE_KEYS)))
    if inferred is not None and "vllm_version" not in scan.facts:
        scan.facts["vllm_version_range"], scan.facts["vllm_version_clues"] = inferred
        _drop_other_releases(scan, patterns, inferred[0])
    scan.facts["engine"] = _engine(scan, processes, parsed)
    if scan.facts["engine"] == "v0":
        scan.facts["v0_engine"] = True
    named = [PLATFORM_FROM_SOURCE[s] for s in sources + frame_sources
             if s in PLATFORM_FROM_SOURCE]
    resolve_platform(scan.facts, platform_clues, named)
    scan.facts.update(parallel_ranks(
        line.prefix if line.level is not None else _LEADING_TAGS.match(line.raw).group(0)
        for line in parsed))
    scan.facts.update(assigned_ranks(line.text for line in parsed))
    if traceback_phase is not None:
        scan.facts["traceback_phase"] = traceback_phase
    if errors:
        scan.facts["error"] = errors[0]
    finished = "init_engine_s" in scan.durations or any(
        k in scan.marks for k in ("engine_ready", "api_server_ready")) or _v0_finished(scan)
    scan.truncated = not finished
    return scan



def is_log_line(raw: str) -> bool:
    """Whether the reader recognises ``raw`` as a line of a vLLM start-up log: a log record
    (level, timestamp, ``[file.py:123]``), a process tag, a traceback's frame, or a line one
    of the registry's patterns reads. A log of a boot that died before vLLM's first record
    still holds its traceback; a file with none of these is not a log."""
    line = parse_line(raw)
    return (line.level is not None or has_process_tag(line.raw)
            or _FRAME.search(line.raw) is not None
            or any(p.compiled.search(line.text) for p in LOG_PATTERNS))


def _clues(line: LogLine, platforms: list[str], versions: set[str]) -> None:
    """Note the platform a line names and the releases its wording and format allow."""
    if not _PLATFORM_ABSENT.search(line.text):
        platforms.extend(name for name, clue in _PLATFORM_CLUES if clue.search(line.text))
    # a process tag names it too ("(NPURayWorkerWrapper pid=..)")
    platforms.extend(name for name, clue in _PLATFORM_CLUES if clue.search(line.prefix))
    versions.update(name for name, clue in _VERSION_CLUE_LINES.items()
                    if clue.search(line.text)
                    and not (name in V0_WORDING_CLUES and line.source in _V1_SOURCES))
    versions.update(name for name, (source, clue) in _VERSION_CLUE_SOURCES.items()
                    if line.source == source and clue.search(line.text))
    if (line.level is not None and line.source and not line.relogged
            and line.raw.split(line.source)[0][-1:] == "["):
        versions.add("bracketed_source")


def _echo(tags: tuple[Any, ...], other: tuple[Any, ...]) -> bool:
    """Two different chains of process tags, one the tail of the other: the same process, the
    longer one with a wrapper's outer tags."""
    if not other or tags == other:
        return False
    short, long = sorted((tags, other), key=len)
    return long[-len(short):] == short


def _engine(scan: LogScan, processes: set[str], parsed: list[LogLine]) -> str:
    """V0 or V1: the engine line where the log kept one, else the lines and processes only one
    engine has, else the logger's format (the bracketless "file.py:123]" is 0.7 and older,
    where V0 was the default)."""
    if scan.facts.get("v1_engine"):
        return "v1"
    if scan.facts.get("v0_engine"):
        return "v0"
    seen = set(scan.marks) | set(scan.durations) | {k for _, k in scan.order}
    def named(names: tuple[str, ...]) -> int:
        # "EngineCore", "EngineCore_DP0", "Worker_TP1": the name, or the name and a suffix
        return sum(any(p == n or p.startswith(n + "_") for p in processes) for n in names)

    headers = [line for line in parsed if line.level is not None]
    sources = {line.source for line in headers if line.source}
    v0 = (sum(k in seen for k in V0_ONLY_KEYS) + named(V0_PROCESSES)
          + len(sources & set(V0_SOURCES)))
    v1 = (sum(k in seen for k in V1_ONLY_KEYS) + named(V1_PROCESSES)
          + len(sources & set(V1_SOURCES)))
    # the logger's own format, where a host did not log the records again in its own
    formatted = [line for line in headers if not line.relogged]
    if sources & set(V0_SOURCES_BEFORE_0_11) and _before_0_11(scan, formatted):
        v0 += 1
    if v0 != v1:
        return "v0" if v0 > v1 else "v1"
    # Nothing tells the engines apart (or as much for each): the logger's format does. Every
    # record with the bracketless "file.py:123]" tag is 0.7 or older, where V0 was the default
    # engine (V1 an opt-in alpha) -- an excerpt of plugin or config lines included.
    if formatted and all(line.source and "[" not in line.raw.split(line.source)[0][-1:]
                         for line in formatted):
        return "v0"
    return "v1"


def _drop_other_releases(scan: LogScan, patterns: list[LogPattern], spec: str) -> None:
    """Where no line states the release, every release's wording was tried; the durations that
    only releases outside the range the log's own clues allow print go. One line can read two
    ways: "torch.compile takes X s in total" is a running total up to 0.11 and one compile's
    wall time from 0.12, and the two add up differently."""
    bounds = {b.operator: b.version for b in SpecifierSet(spec)}
    allowed = (bounds.get(">="), bounds.get("<"))
    for key in list(scan.durations):
        ranges = [p.versions for p in patterns if p.key == key and p.kind == "duration"]
        if ranges and not any(overlaps(r, allowed) for r in ranges):
            del scan.durations[key]
            scan.facts.setdefault("durations_of_other_releases", []).append(key)


def _before_0_11(scan: LogScan, headers: list[LogLine]) -> bool:
    """Whether the log comes from a release older than 0.11: its version line, else the
    bracketless "file.py:123]" tag (0.7 and older) or a clue that bounds it below 0.11."""
    version = scan.facts.get("vllm_version")
    if version is not None:
        return in_range(str(version), (None, "0.11"))
    if headers and all(line.source and "[" not in line.raw.split(line.source)[0][-1:]
                       for line in headers):
        return True
    upper = re.search(r"<(?P<v>[\d.]+)", str(scan.facts.get("vllm_version_range", "")))
    return upper is not None and Version(upper["v"]) <= Version("0.11")


def _traceback_phase(line: LogLine, after_frame: bool) -> str | None:
    """The start-up phase a traceback line names: a frame's function or compiler path, or,
    on the source line under a frame, the function it calls."""
    text = line.text if line.level is not None else line.raw
    frame = _FRAME.search(text)
    if frame is not None:
        if frame["func"] in _FUNCTION_PHASE:
            return _FUNCTION_PHASE[frame["func"]]
        if _LOADER.search(frame["path"]):
            return "model_loading"
        return "torch_compile" if _COMPILER.search(frame["path"]) else None
    if after_frame:
        call = _CALL.match(re.sub(r"^\[rank\d+\]:", "", text))
        if call is not None:
            return _FUNCTION_PHASE.get(call["func"])
    return None


def _innermost(before: str | None, frame: str) -> str:
    # Frames print outermost first, so a later frame is deeper. A compiler frame under a
    # model's construction (vLLM's compile decorator wraps __init__) does not move the crash
    # out of model loading; anywhere else the deeper frame wins.
    if frame == "torch_compile" and before == "model_loading":
        return before
    return frame



def _v0_finished(scan: LogScan) -> bool:
    """A V0 engine's offline boot prints no ready line: it is done after graph capture, or
    after the KV-cache size where no capture follows (eager, CPU)."""
    if not scan.facts.get("v0_engine"):
        return False
    if "graph_capture_s" in scan.durations:
        return True
    return "v0_blocks" in scan.marks and capture_not_applicable(scan.facts) is not None
