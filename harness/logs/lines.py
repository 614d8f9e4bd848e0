"""One line of a vLLM start-up log, parsed: its header (level, timestamp, ``file.py:123``
tag, the process tags of its prefix) and its place in time. The first step of the log reader
(``harness.logs.scan`` scans the parsed lines; ``harness.logs`` describes the whole reader).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.registry import LOG_PATTERNS
from harness.registry.patterns import LOG_LEVELS, RELOGGED_HEADER_REGEX
from harness.registry.version_range import is_version

__all__ = ["LogLine", "parse_line", "parse_timestamp", "place_in_time", "detect_version",
           "has_process_tag"]

# vLLM colours its process prefix and levels when writing to a terminal.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# "<prefix>LEVEL MM-DD HH:MM:SS[.mmm] [file.py:123] message" ("file.py:123] message" up to
# 0.7, the V0 engine's logger); the prefix holds
# VLLM_LOGGING_PREFIX and "(EngineCore_DP0 pid=42)"-style process tags.
# A paste cut at the line's start may keep only the level's end ("O 04-11 12:37:49 [llm_engine.py:
# 242] ..."): the timestamp and tag that follow make it a header still.
_LEVEL_ENDS = sorted({level[i:] for level in LOG_LEVELS for i in range(len(level))}, key=len,
                     reverse=True)
_HEADER = re.compile(
    rf"^(?P<prefix>.*?)\b(?P<level>{'|'.join(_LEVEL_ENDS)})\s+"
    r"(?P<ts>(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)\s+"
    r"(?:\[(?P<where>[^\]]*)\]|(?P<where_v0>[\w.\-]+:\d+)\])\s?(?P<msg>.*)$"
)
# A process tag: "(EngineCore_DP0 pid=42)", "(VllmWorker rank=1 pid=43)", Ray's
# "(RayWorkerWrapper pid=44, ip=10.0.0.2)". Wrappers nest them ("(EngineCore pid=1)
# (RayWorkerWrapper pid=2, ip=..)", Ray Serve's replica before both): the innermost (last) tag
# is the process that logged the line.
_PROCESS = re.compile(r"\((?P<name>[^()]*?)\s+(?:rank=\d+\s+)?pid=(?P<pid>\d+)"
                      r"(?:,\s*ip=(?P<ip>[0-9A-Fa-f.:]+))?\)")
_SOURCE_FILE = re.compile(r"([\w.\-]+\.py):\d+")
_RELOGGED = re.compile(RELOGGED_HEADER_REGEX)
# vLLM's timestamps carry no year. The stand-in year is a common one (a leap year would put
# a 29 Feb between 28 Feb and 1 Mar and add a day to a boot crossing them), unless the log
# itself names a 29 Feb; a boot crossing New Year moves to the next stand-in year.
_COMMON_YEAR, _LEAP_YEAR = 2001, 2000


@dataclass
class LogLine:
    text: str  # what the patterns are searched in
    raw: str
    t: datetime | None  # parsed in the stand-in year where the line names none
    level: str | None
    process: str | None
    pid: int | None
    subsecond: bool = False
    stamp: str | None = None  # the timestamp as written, "MM-DD HH:MM:SS[.fff]" or with a year
    ip: str | None = None  # a Ray worker's node
    prefix: str = ""  # what came before the level: wrappers and process tags
    source: str | None = None  # "default_loader.py", from the "[file.py:123]" tag
    # Every process tag of the prefix, outermost first: (name, pid, ip). The whole chain names
    # the process (ranks under one EngineCore, Ray workers on several nodes with one pid).
    tags: tuple[tuple[str, int, str | None], ...] = ()
    # Logged again by a host in its own format (RELOGGED_HEADER_REGEX): the source is vLLM's,
    # the header's form is not, so it is no clue to the release or engine.
    relogged: bool = False

    @property
    def who(self) -> Any:
        """The process that logged the line; None: untagged (the front end, or a paste
        without prefixes)."""
        return self.tags or None

    @property
    def has_year(self) -> bool:
        return self.stamp is not None and len(self.stamp) > 4 and self.stamp[4] == "-"


def parse_timestamp(text: str, year: int = _LEAP_YEAR) -> datetime | None:
    text = text.replace(",", ".").replace("T", " ")
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
        try:
            stamp = text if text[4] == "-" else f"{year}-{text}"
            return datetime.strptime(stamp, fmt)
        except (ValueError, IndexError):
            continue
    return None


def place_in_time(parsed: list[LogLine]) -> list[float | None]:
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
            candidates = [(y, parse_timestamp(line.stamp, y)) for y in (year - 1, year, year + 1)]
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


def parse_line(raw: str) -> LogLine:
    clean = _ANSI.sub("", raw).rstrip("\r\n")
    header = _HEADER.match(clean)
    if header is None:
        return _relogged(clean)
    tags = list(_PROCESS.finditer(header["prefix"]))
    proc = tags[-1] if tags else None
    where = _SOURCE_FILE.search(header["where"] or header["where_v0"] or "")
    level = next(whole for whole in LOG_LEVELS if whole.endswith(header["level"]))
    return LogLine(
        header["msg"].strip(), clean, parse_timestamp(header["ts"]), level,
        proc["name"] if proc else None, int(proc["pid"]) if proc else None,
        subsecond=any(c in header["ts"][-7:] for c in ".,"), stamp=header["ts"],
        ip=proc["ip"] if proc else None, prefix=header["prefix"],
        source=where.group(1) if where else None,
        tags=tuple((t["name"], int(t["pid"]), t["ip"]) for t in tags),
    )


def _relogged(clean: str) -> LogLine:
    """A record logged again in a tracing format, or a line with no header at all."""
    found = _RELOGGED.match(clean)
    if found is None:
        return LogLine(clean.strip(), clean, None, None, None, None)
    tags = list(_PROCESS.finditer(found["prefix"]))
    proc = tags[-1] if tags else None
    stamp = found["ts"].replace("T", " ")
    if "." in stamp:  # nanoseconds (Rust's tracing) to what datetime reads
        whole, fraction = stamp.split(".")
        stamp = f"{whole}.{fraction[:6]}"
    return LogLine(
        found["msg"].strip(), clean, parse_timestamp(stamp),
        "DEBUG" if found["level"] == "TRACE" else
        next(whole for whole in LOG_LEVELS if whole.startswith(found["level"])),
        proc["name"] if proc else None, int(proc["pid"]) if proc else None,
        subsecond="." in stamp, stamp=stamp, ip=proc["ip"] if proc else None,
        prefix=found["prefix"], source=found["module"].rsplit(".", 1)[-1] + ".py",
        tags=tuple((t["name"], int(t["pid"]), t["ip"]) for t in tags), relogged=True)


def has_process_tag(raw: str) -> bool:
    """Whether a line carries vLLM's process tag, "(EngineCore_DP0 pid=42)": vLLM prefixes
    even a worker's traceback and its prints with it."""
    return _PROCESS.search(raw) is not None


def detect_version(lines: list[LogLine]) -> str | None:
    for pattern in LOG_PATTERNS:
        if pattern.key != "vllm_version":
            continue
        for line in lines:
            found = pattern.compiled.search(line.text)
            # a cut or garbled line ("(v.10.1.1)") names no release: read on
            if found and is_version(found["value"]):
                return found["value"]
    return None

