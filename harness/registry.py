"""What to instrument and what to read, per vLLM version range: the one registry.

A vLLM release moves functions and rewords log lines. Everything version-specific the suite
knows lives here, as data: the functions the probes wrap (``WRAP_TARGETS``) and the log
patterns the log reader matches (``LOG_PATTERNS``), each tagged with the version range it
holds for. Supporting a new release is adding entries, not editing code elsewhere.

Imports without vLLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from packaging.version import InvalidVersion, Version

# A half-open version range [since, until). ``None`` leaves that end open.
VersionRange = tuple[str | None, str | None]
ANY_VERSION: VersionRange = (None, None)


def _base(version: str) -> Version:
    # "0.32.0+cpu", "0.10.1.1", "0.11.0rc2.dev5+g1234" -> comparable release number
    try:
        return Version(Version(version).base_version)
    except InvalidVersion:
        m = re.match(r"\d+(\.\d+)*", version)
        if not m:
            raise
        return Version(m.group(0))


def in_range(version: str | None, rng: VersionRange) -> bool:
    if version is None:
        return rng == ANY_VERSION
    v = _base(version)
    since, until = rng
    return (since is None or v >= Version(since)) and (until is None or v < Version(until))


# ------------------------------------------------------------------------------ probes
@dataclass(frozen=True)
class WrapTarget:
    """A function whose entry and exit the probe records as ``<event>.start`` / ``.end``.

    ``event`` is a phase, ``phase.subphase`` or another named mark (``ready``, ...).
    ``attr`` is ``Class.method`` or a module-level function name inside ``module``.
    """

    module: str
    attr: str
    event: str
    versions: VersionRange = ANY_VERSION
    platforms: tuple[str, ...] = ("cpu", "cuda")
    why: str = ""


WRAP_TARGETS: tuple[WrapTarget, ...] = ()  # filled in below the log section


# ------------------------------------------------------------------------- log patterns
@dataclass(frozen=True)
class LogPattern:
    """A log line vLLM prints, and what it tells.

    ``key`` names what the captured number is (``load_weights_s``, ...). ``kind`` says how the
    line is used: ``duration`` (the line carries a duration in its ``s`` group), ``mark`` (the
    line's timestamp marks an instant), ``fact`` (a value such as the version or the platform).
    """

    key: str
    regex: str
    kind: Literal["duration", "mark", "fact"]
    versions: VersionRange = ANY_VERSION
    why: str = ""
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.regex))


LOG_PATTERNS: tuple[LogPattern, ...] = ()  # owned by the log reader; see harness/logs.py


def wrap_targets_for(version: str | None, platform: str) -> list[WrapTarget]:
    return [t for t in WRAP_TARGETS if in_range(version, t.versions) and platform in t.platforms]


def log_patterns_for(version: str | None) -> list[LogPattern]:
    if version is None:
        return list(LOG_PATTERNS)
    return [p for p in LOG_PATTERNS if in_range(version, p.versions)]
