"""Undo how people paste a vLLM log before any pattern reads it: one place for every paste form.

A log reaches the reader through a terminal, a container runtime, a CI system or a markdown
comment, and each adds its own layer: colour codes, quote markers, box borders, a service or
timestamp prefix, a hard wrap at the terminal's width, markdown emphasis around the values.
``normalise`` takes those layers off and gives the lines vLLM wrote, so the patterns of
``harness.registry`` are written once, for vLLM's own wording. vLLM's own prefix (its process
tags, "(EngineCore_DP0 pid=42)", "(RayWorkerWrapper pid=2, ip=..)") is kept: the reader tells
ranks and processes apart by it.

It also holds the one conversion of a printed number and its unit (``seconds``, ``gib``).
"""

from __future__ import annotations

import re

from harness.registry import COMMAND_LINE_REGEX, LOG_PATTERNS
from harness.registry.patterns import LOG_LEVEL_REGEX, RELOGGED_AFTER_INSTANT

__all__ = ["normalise", "seconds", "gib"]

# Colour and cursor codes, and Buildkite's "_bk;t=<ms>" timestamp marks (an APC escape that a
# copy from the web view leaves as bare text).
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|"
                      r"(?:\x1b)?_bk;t=\d+(?:\x07)?")
# Markdown quote markers, nested ("> > "); a line holding only ">" is a quoted blank line.
_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
# A code fence line ("```", "```text", "~~~"): no line of a log.
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})[\w+\-]*\s*$")
# A terminal UI's box (k9s "│ ... │"); only drawing characters, never ASCII "|" (tables, tqdm).
_BOX = re.compile(r"^\s*[│┃║]\s?(?P<body>.*?)\s*[│┃║]?\s*$")
# What a runtime writes before the line it relays, outermost first; stripped while one matches.
_WRAPPERS = re.compile(
    r"^\s*(?:"
    # Buildkite's "[2025-01-01T00:00:00Z] "
    r"\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?Z?\]"
    # TorchServe's "2024-09-13T22:25:37,532 [INFO ] W-9000-model_1.0-stdout MODEL_LOG - "
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)? \[[A-Z]+\s*\] \S+(?: MODEL_LOG)? -(?= |$)"
    # Kubernetes' (kubectl logs --timestamps) RFC 3339 "2025-06-01T12:00:00.123456789Z ", not
    # the instant of a record relogged in a tracing format (RELOGGED_HEADER_REGEX), its own
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})(?= )"
    rf"(?!{RELOGGED_AFTER_INSTANT})"
    # the systemd journal's (and syslog's) "Aug 04 16:26:11 host ident[pid]: ", the month in
    # the machine's language ("авг 18 14:14:59 llm python3[28145]: ")
    r"|[^\W\d_]{3,5}\.?\s{1,2}\d{1,2} \d{2}:\d{2}:\d{2} [\w.\-]+ [\w.\-/@]+(?:\[\d+\])?:(?= |$)"
    # docker compose's "service-1  | " (the name padded to the longest service's)
    r"|[A-Za-z0-9][\w.\-]*\s+\|(?= |$)"
    # Ray's "(pid=123) " of a worker without a class name: no process tag of vLLM's
    r"|\(pid=\d+(?:, ip=[0-9A-Fa-f.:]+)?\)"
    r") ?")
# Markdown emphasis and inline code around a value or a word: "**34.11 seconds**",
# "*34.11*", "`34.11 s`". The opening marker follows a space or punctuation that opens, so a
# glob in a message ("['*.safetensors', '*.bin']") is left alone; underscores are not taken
# for emphasis, since "__init__.py" names a file. Markers nest ("`took **52.96 seconds**`":
# bold inside inline code), so a marker may also stand next to another one, and the innermost
# pair is taken off first (``_plain``).
_EMPHASIS = re.compile(r"(?:(?<=^)|(?<=[\s(\[:=,*`]))(?P<m>\*{1,3}|`{1,2})"
                       r"(?P<body>[^\s*`](?:[^*`\n]*?[^\s*`])?)(?P=m)(?=$|[\s).,:;\]!?*`])")
# The start of a record, where a hard-wrapped line cannot go on: vLLM's header (level and
# timestamp, after a short prefix: process tags, a list marker), a process tag, a traceback.
_RECORD = re.compile(rf"^.{{0,40}}?\b(?:{LOG_LEVEL_REGEX})\s+(?:\d{{4}}-)?\d{{2}}-\d{{2}}"
                     r"[ T]\d{2}:|^\s*(?:\([^()]*\bpid=\d+[^()]*\)|Traceback \(|File \")|"
                     rf"^\s*\d{{4}}-\d{{2}}-\d{{2}}T\d{{2}}:\d{{2}}:\d{{2}}\S*(?={RELOGGED_AFTER_INSTANT})")
# A header whose message a wrap cut off whole ("... [worker.py:241] " / "Memory profiling
# takes 6.95 seconds"): the next line is its message, though it reads like a record's start.
_HEADER_ALONE = re.compile(rf"\b(?:{LOG_LEVEL_REGEX})\s+(?:\d{{4}}-)?\d{{2}}-\d{{2}}"
                           r"[ T][\d:.,]+\s+\[?[\w.\-]+:\d+\]\s*$")
_HEADER_AHEAD = re.compile(rf"\b(?:{LOG_LEVEL_REGEX})\s+(?:\d{{4}}-)?\d{{2}}-\d{{2}}")
_COMMAND = re.compile(COMMAND_LINE_REGEX)
# vLLM's own messages, anchored at the line's start (the patterns search, so a bare message
# begins where they match at 0).
_MESSAGE_STARTS = [p.compiled for p in LOG_PATTERNS if p.kind != "fact"]
# A line cut by hand between a number and its unit ("took 9.82" / "seconds").
_ENDS_IN_NUMBER = re.compile(r"\d$")
_UNIT_FIRST = re.compile(r"^\s*(?:s|secs?|seconds?|ms|min|minutes?|GiB|GB|MiB|MB)\b")

# vLLM divides by 2**30 (2**20) and prints "GB" ("MB") up to 0.7, "GiB" later: all binary.
_GIB = {"gib": 1.0, "gb": 1.0, "mib": 1 / 1024, "mb": 1 / 1024}
_SECONDS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
            "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0}


def seconds(number: str, unit: str | None = None) -> float:
    """A printed duration in seconds; ``unit`` as printed (s, secs, seconds, ms, min), None
    for seconds. Raises ValueError for a number or a unit it cannot read."""
    factor = _SECONDS.get((unit or "s").lower())
    if factor is None:
        raise ValueError(f"not a unit of time: {unit!r}")
    return float(number) * factor


def gib(number: str, unit: str | None = None) -> float:
    """A printed memory size in GiB; ``unit`` as printed (GiB, GB, MiB, MB), None for GiB."""
    factor = _GIB.get((unit or "GiB").lower())
    if factor is None:
        raise ValueError(f"not a unit of memory: {unit!r}")
    return float(number) * factor


def normalise(text: str) -> list[str]:
    """The lines vLLM wrote, from ``text`` as pasted. The last line is kept whether or not a
    newline ends it; blank lines and lines the layers leave empty are kept as blank lines
    where they held text only of a layer (a code fence is dropped)."""
    physical = [_outer(line) for line in text.splitlines()]
    logical = _unwrap([line for line in physical if line is not None])
    return [_inner(line) for line in logical]


def _outer(line: str) -> tuple[str, int] | None:
    """Take off what sits on the physical line (drawn by the terminal, added when quoting),
    before a hard wrap is undone: colour codes, CR, quote markers, box borders. With the line,
    the width a terminal wrapped it at: a marker the author typed before the record (">> ")
    was on the terminal's line too."""
    line = _ESCAPES.sub("", line).replace("\r", "")
    if _FENCE.match(line):
        return None
    quoted = _QUOTE.match(line)
    marker = len(quoted.group(0)) if quoted else 0
    line = line[marker:]
    box = _BOX.match(line)
    if box is not None:
        return box["body"], len(box["body"])
    return line, len(line) + marker


def _inner(line: str) -> str:
    """Take off what a runtime wrote before the record (compose, Kubernetes, Buildkite,
    TorchServe, Ray's bare pid) and markdown emphasis inside it."""
    while True:
        found = _WRAPPERS.match(line)
        if found is None or not found.group(0):
            break
        line = line[found.end():]
    return _plain(line)


def _plain(line: str) -> str:
    """``line`` without markdown emphasis or inline code, nested pairs too: each pass takes
    off the pairs that hold no other marker, until none is left."""
    while True:
        plain = _EMPHASIS.sub(lambda m: m["body"], line)
        if plain == line:
            return line
        line = plain


def _unwrap(lines: list[tuple[str, int]]) -> list[str]:
    """Join the lines a terminal hard-wrapped at its width: a line exactly as wide as the
    widest one, followed by a line that does not start a record, goes on in it. The width is
    trusted where at least two different lines reach it, or where it is 80 columns (a single long line
    wrapped once). A line cut by hand between a number and its unit is joined too."""
    width = max((wide for _, wide in lines), default=0)
    # distinct lines: a log pasted twice holds its widest line twice
    wrapped = width >= 40 and (len({line for line, wide in lines if wide == width}) >= 2
                               or width == 80)
    out: list[str] = []
    joining = False
    for line, wide in lines:
        if out and joining and line and (not _starts_record(line) or _cut_in_prefix(out[-1])
                                         or _HEADER_ALONE.search(out[-1])):
            out[-1] += line
        elif (out and _ENDS_IN_NUMBER.search(out[-1]) and _UNIT_FIRST.match(line)
              and not _starts_record(line)):
            out[-1] += " " + line.lstrip()
        else:
            out.append(line)
        joining = wrapped and wide == width
    return out


def _cut_in_prefix(line: str) -> bool:
    """A wrap inside the process tags (Ray nests three or four): the header is still to come."""
    return "pid=" in line and _HEADER_AHEAD.search(line) is None


def _starts_record(line: str) -> bool:
    """A line no wrap continues into: a record's header, a runtime's prefix, the command that
    starts vLLM, or a bare message of vLLM's (a paste without headers: templated messages
    such as "Graph capturing finished in 15 secs, took 0.32 GiB" are often equally wide)."""
    return (_RECORD.match(line) is not None or _WRAPPERS.match(line) is not None
            or _COMMAND.match(line) is not None
            or any(p.match(line) for p in _MESSAGE_STARTS))
