"""A test's check that no secret got out: ``leaks(values, paths=..., texts=...)``.

For a test that gives a boot (or any verb) secret values, then looks for them in everything
it wrote and printed::

    secrets = ["hf_" + "x" * 30, "sk-" + "y" * 30]
    env = {**os.environ, "HF_TOKEN": secrets[0], "VLLM_API_KEY": secrets[1]}
    done = subprocess.run([...], env=env, capture_output=True, text=True)
    assert leaks(secrets, paths=[out_dir, work_dir], texts=[done.stdout, done.stderr]) == []

Every file under each path is read as bytes (binary-safe: a compile cache, a gzip, a
non-UTF-8 log), and a value is looked for as written, JSON-escaped, as Python's repr escapes
it, percent-encoded and in UTF-16 (how a value can end up in text without being itself). A
file that cannot be read is reported too: what was not looked at is not clean. The report
never shows a value, only which one (by its place in ``values``) and where, so an assertion
message does not leak it in turn.

Use values of at least ``document.secrets.MIN_SCRUBBED_LENGTH`` characters (6): a shorter
one is redacted where it is recorded as a setting but not cut out of text. Values that would
occur by chance (a word, a number, a path) make every check fail: make them unique, long
random-looking strings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

__all__ = ["leaks"]


def _forms(value: str) -> list[bytes]:
    texts = {value, json.dumps(value)[1:-1], repr(value)[1:-1], quote(value, safe="")}
    found = {t.encode("utf-8") for t in texts}
    found |= {value.encode("utf-16-le"), value.encode("utf-16-be")}
    return sorted(found)


def _files(path: Path) -> Iterable[Path]:
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                yield Path(root) / name
    else:
        yield path


def _where(data: bytes, forms: list[list[bytes]], place: str) -> list[str]:
    return [f"{place}: secret value {i} ({len(form[0])} characters)"
            for i, form in enumerate(forms) if any(f in data for f in form)]


def leaks(values: Iterable[str], *, paths: Iterable[str | Path] = (),
          texts: Iterable[str | bytes] = ()) -> list[str]:
    """Where any of ``values`` appears: one line per (place, value) found, in the files under
    each of ``paths`` (a file or a folder, walked recursively, links not followed) and in
    each of ``texts`` (a captured stdout, a log, a str or bytes). Empty when none does.

    A path that does not exist is reported (a test that names the wrong folder would
    otherwise pass), and so is a file that cannot be read.
    """
    values = [v for v in values if v]
    if not values:
        raise ValueError("leaks: no values to look for")
    forms = [_forms(v) for v in values]
    found: list[str] = []
    for given in paths:
        root = Path(given)
        if not root.exists() and not root.is_symlink():
            found.append(f"{root}: does not exist, not looked in")
            continue
        for path in _files(root):
            if path.is_symlink():
                found += _where(os.fsencode(os.readlink(path)), forms, f"{path} (link target)")
                continue
            try:
                data = path.read_bytes()
            except OSError as exc:
                found.append(f"{path}: cannot be read ({exc.strerror or exc}), not looked in")
                continue
            found += _where(data, forms, str(path))
            found += _where(os.fsencode(path.name), forms, f"{path} (its name)")
    for i, text in enumerate(texts):
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
        found += _where(data, forms, f"text {i}")
    return found
