"""vLLM version ranges, as every entry of the registry (harness.registry) is tagged with."""

from __future__ import annotations

import re

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


def is_version(text: str) -> bool:
    """Whether ``text`` names a release ``in_range`` can place (``0.10.1.1``, ``0.32.0+cpu``;
    not ``.10.1.1`` or ``X``)."""
    try:
        _base(text)
    except InvalidVersion:
        return False
    return True


def in_range(version: str | None, rng: VersionRange) -> bool:
    if version is None:
        return rng == ANY_VERSION
    v = _base(version)
    since, until = rng
    return (since is None or v >= Version(since)) and (until is None or v < Version(until))


def overlaps(rng: VersionRange, other: VersionRange) -> bool:
    """Whether two half-open ranges share a release."""
    (since, until), (other_since, other_until) = rng, other
    return ((since is None or other_until is None or Version(since) < Version(other_until))
            and (other_since is None or until is None or Version(other_since) < Version(until)))
