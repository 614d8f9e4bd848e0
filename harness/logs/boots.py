"""The boots one log holds: a restarted pod appends its next boot to the file, and people
paste several boots as one (``split_boots``). Apart from ``harness.logs.scan``, which reads one
boot's lines."""

from __future__ import annotations

import re
from typing import Any

from harness.logs.lines import LogLine, parse_line, place_in_time
from harness.registry import (
    BOOT_START_REGEX,
    COMMAND_LINE_REGEX,
    LOG_PATTERNS,
    PROCESS_FIRST_LINES_REGEX,
)

__all__ = ["split_boots"]

_BOOT_START = re.compile(BOOT_START_REGEX)
_COMMAND = re.compile(COMMAND_LINE_REGEX)
# The first lines a vLLM process logs, and the processes that are a boot's front end: where
# the next boot begins.
_PROCESS_FIRST = re.compile(PROCESS_FIRST_LINES_REGEX)
_FRONT_END = ("MainProcess", "APIServer")
_MODEL_LOADED = next(p.compiled for p in LOG_PATTERNS if p.key == "model_loading_s")
_LOADING_STARTS = [p.compiled for p in LOG_PATTERNS
                   if p.key in ("model_loading_start", "load_weights_s", "model_init_s")]
# What a boot prints once, at its end, from one process even under tensor parallelism (the
# engine's init total, the study's driver total), and what may follow it in the same boot.
_ONCE_AT_END = [p.compiled for p in LOG_PATTERNS
                if p.key in ("init_engine_s", "study_initialize_engine_s")]
_TRAILERS = [p.compiled for p in LOG_PATTERNS
             if p.key in ("init_engine_s", "init_engine_compilation_s", "study_initialize_engine_s",
                          "engine_ready", "api_server_ready")]
_ANY_LINE = [p.compiled for p in LOG_PATTERNS if p.kind != "fact"]

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

    A paste that kept none of those lines (several engines' lines without prefixes) still
    shows each engine's "Model loading took", which one worker prints once per boot: the same
    process printing it again is another engine, which began at the first loading line
    ("Starting to load model", "Loading weights took", ...) after the previous one's. A bare
    paste (no header: no level, no timestamp) is cut at its start lines as well, and at the
    second "init engine ... took" (or the study's "initialize_engine took"): the next boot
    begins at the first line of start-up after it. Where the timestamps go back to the
    current boot's first one (more than a second back: not processes flushing out of order),
    a boot appended without any of these lines begins there, its last lines without a
    timestamp (a printed total, the ready line, a warning) left with the boot before, but for
    as many as opened the current boot before its first timestamp. A shell command
    that starts vLLM ("$ vllm serve M", "python -m vllm.entrypoints.openai.api_server"),
    pasted before each boot's lines, begins the next boot where a line of vLLM's came since
    the current one began.
    """
    parsed = [parse_line(str(raw)) for raw in lines]
    times = place_in_time(parsed)
    first_t: float | None = None  # the current boot's first timestamp
    latest: float | None = None
    last_stamped = -1
    ended: dict[Any, int] = {}  # (end line, process) -> where it is in this boot
    cuts: list[int] = []
    seen: set[tuple[str | None, str]] = set()
    loaded: dict[Any, int] = {}  # process -> its "Model loading took" line in this boot
    boot_begin = 0
    last_start = -1  # index of the current boot's latest start line
    read_since_begin = False  # a line of vLLM's the reader takes since the current boot began
    for i, line in enumerate(parsed):
        if line.level is None and _COMMAND.match(line.raw) and read_since_begin:
            # The command that starts vLLM, pasted before each boot's lines: the next boot.
            cuts.append(i)
            boot_begin, seen, loaded, ended, last_start = i, set(), {}, {}, i - 1
            first_t = latest = None
            read_since_begin = False
            continue
        read_since_begin = read_since_begin or any(r.search(line.text) for r in _ANY_LINE)
        begin = _appended_boot(parsed, times, i, boot_begin, last_stamped, first_t, latest,
                               ended)
        if begin is not None and begin > boot_begin:
            cuts.append(begin)
            boot_begin, seen, loaded, ended, last_start = begin, set(), {}, {}, begin - 1
            first_t = latest = None
            for j in range(begin, i):
                first_t = first_t if times[j] is None or first_t is not None else times[j]
                latest = times[j] if times[j] is not None and (
                    latest is None or times[j] > latest) else latest
        if times[i] is not None:
            first_t = times[i] if first_t is None else first_t
            latest = times[i] if latest is None else max(latest, times[i])
            last_stamped = i
        once = _once_at_end(line)
        if once is not None:
            ended[once] = i
        if line.level is not None and _MODEL_LOADED.search(line.text):
            if line.who in loaded:
                begin = next((j for j in range(loaded[line.who] + 1, i)
                              if parsed[j].who == line.who
                              and any(r.search(parsed[j].text) for r in _LOADING_STARTS)), i)
                cuts.append(begin)
                boot_begin, seen, loaded = begin, set(), {}
                last_start = begin - 1
            loaded[line.who] = i
        found = _BOOT_START.search(line.text)
        # a bare line starts a boot only where it begins with the start line's words
        if found is None or (line.level is None and found.start() > 0):
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
            seen, loaded = set(), {j: at for j, at in loaded.items() if at >= begin}
        seen.add(key)
        last_start = i
    bounds = [0, *cuts, len(lines)]
    boots = [list(lines[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]
    # A part with no line of vLLM's (a command and "..." pasted after the last boot) is no
    # boot of its own: it stays with the one before.
    kept: list[list[str]] = []
    for boot in boots:
        if kept and not any(_holds_log(parse_line(str(raw))) for raw in boot):
            kept[-1].extend(boot)
        else:
            kept.append(boot)
    return kept


def _holds_log(line: LogLine) -> bool:
    return line.level is not None or any(r.search(line.text) for r in _ANY_LINE)


def _appended_boot(parsed: list[LogLine], times: list[float | None], i: int, boot_begin: int,
                   last_stamped: int, first_t: float | None, latest: float | None,
                   ended: dict[Any, int]) -> int | None:
    """Where a boot that line ``i`` shows to be another one began (``split_boots``): its
    once-per-boot end line again from the same process, or its timestamp back at the current
    boot's start. None: line ``i`` continues the boot.

    Between the two, the lines without a timestamp are split as the boots of one paste begin
    alike: as many of them open the next boot as opened the current one before its first
    timestamp (a shell's or wrapper's lines, import-time warnings), and those before them are
    the running boot's own output (a warning and its source line, a trace) and stay with it."""
    once = _once_at_end(parsed[i])
    if once is not None and once in ended:
        return next((j for j in range(ended[once] + 1, i)
                     if not any(r.search(parsed[j].text) for r in _TRAILERS)
                     and any(r.search(parsed[j].text) for r in _ANY_LINE)), i)
    t = times[i]
    if t is None or first_t is None or latest is None or not (t <= first_t < latest - 1.0):
        return None
    begin = last_stamped + 1
    for j in range(last_stamped + 1, i):
        if any(r.search(parsed[j].text) for r in _TRAILERS):
            begin = j + 1
    opening = next((j for j in range(boot_begin, i) if times[j] is not None), i) - boot_begin
    return max(begin, i - opening)


def _once_at_end(line: LogLine) -> tuple[int, Any] | None:
    """Which once-per-boot end line ``line`` is, and from which process; None: neither."""
    return next(((k, line.who) for k, r in enumerate(_ONCE_AT_END) if r.search(line.text)), None)

