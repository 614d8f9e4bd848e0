"""No secret leaves the process: which names mark one, and the scrub of what is written.

A boot records the variables that can change a start-up (``harness.spec``), and the text of
the boot (vLLM's log lines, each process's command line, error lines, the log tail) goes into
result files, cells logs, merged documents, traces, pages and CI artifacts. A variable or an
engine argument whose name marks a secret (:func:`is_secret_name`) is recorded as present
and redacted, never its value; and its value is cut out of every text that is written
(:func:`scrub`), together with what a text itself shows as a secret-named assignment
(``api_key='...'``, ``--api-key ...``, ``HF_TOKEN=...``), whose value the process may not know
(a log read from another machine).

Standard library only: every package may import it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["REDACTED", "MIN_SCRUBBED_LENGTH", "is_secret_name", "redact_named", "secret_values",
           "environment_secrets", "redact_text", "scrub", "scrub_file"]

REDACTED = "<redacted>"
# A value shorter than this is redacted where it is recorded as a setting, but not searched
# for in text: it would blot out numbers and words of every line (a flag "1", "true"), and no
# real token or password is that short.
MIN_SCRUBBED_LENGTH = 6

# A word of a name (split at anything not a letter or digit) that is one of these marks a
# secret: HF_TOKEN, HUGGING_FACE_HUB_TOKEN, VLLM_API_KEY, AWS_SECRET_ACCESS_KEY,
# AWS_SESSION_TOKEN, DB_PASSWORD, GOOGLE_APPLICATION_CREDENTIALS, AUTHORIZATION, GITHUB_PAT (a
# personal access token). Whole words, so that counts of tokens (VLLM_MAX_TOKENS_PER_...,
# max_num_batched_tokens), TOKENIZERS_PARALLELISM, cache keys (aot_cache_keys_before) and words
# that merely contain one (AUTHOR, MONKEY) are not secrets.
_SECRET_WORDS = frozenset({
    "TOKEN", "SECRET", "SECRETS", "KEY", "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE",
    "CREDENTIAL", "CREDENTIALS", "AUTH", "OAUTH", "AUTHORIZATION", "PAT"})
# ... or one of them run together with what kind of secret it is, as names written in one word
# do: OPENAI_APIKEY, authToken, AWS_ACCESSKEY, a SECRETKEY.
_SECRET_KINDS = ("API", "ACCESS", "AUTH", "BEARER", "CLIENT", "PRIVATE", "REFRESH", "SECRET",
                 "SESSION")
_SECRET_COMPOUNDS = frozenset(kind + word for kind in _SECRET_KINDS for word in _SECRET_WORDS)
# ... unless the name's last word says what else its value is: where a secret is kept
# (HF_TOKEN_PATH, a *_PASSWORD_FILE) or a size (VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD); or the
# name is a switch about a secret, its value a flag (HF_HUB_DISABLE_IMPLICIT_TOKEN). A false
# positive only hides a harmless value; these few are named because hiding them would also cut
# their common values (a number, a path) out of every log line.
_NOT_A_SECRET_KIND = ("PATH", "FILE", "DIR", "THRESHOLD")
_SWITCH_WORDS = frozenset({"DISABLE", "ENABLE"})
_WORD = re.compile(r"[A-Z0-9]+")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable or an engine argument named ``name`` holds a secret
    (case does not matter: ``api_key`` and ``--api-key`` are ``API_KEY``)."""
    words = _WORD.findall(name.upper())
    if not words or (len(words) > 1 and words[-1] in _NOT_A_SECRET_KIND):
        return False
    # A bare "key" names a field, not a secret: OTLP's and Jaeger's attributes are
    # {"key": "vllm.process_id", "value": ...}, and redacting it blanked every attribute name
    # of an exported trace.
    if words == ["KEY"] or _SWITCH_WORDS & set(words):
        return False
    return any(w in _SECRET_WORDS or w in _SECRET_COMPOUNDS for w in words)


def redact_named(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with the value of each secret-named key replaced by :data:`REDACTED` (an
    unset one, None or empty, stays as it is: it says the secret was not given)."""
    return {k: REDACTED if is_secret_name(k) and v not in (None, "", [], False) else v
            for k, v in values.items()}


def _flat(value: Any) -> Iterable[str]:
    if isinstance(value, (list, tuple, set)):  # vLLM's --api-key takes several
        for v in value:
            yield from _flat(v)
    elif isinstance(value, str):
        yield value
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def secret_values(*named: Mapping[str, Any]) -> list[str]:
    """The values of the secret-named entries of each mapping (an environment, engine
    arguments), as they may be written in text: as given, JSON-escaped and as Python's repr
    writes them; longest first, so a value holding another is cut out whole."""
    found: set[str] = set()
    for mapping in named:
        for name, value in mapping.items():
            if not is_secret_name(name):
                continue
            for text in _flat(value):
                text = text.strip()
                if len(text) >= MIN_SCRUBBED_LENGTH and text != REDACTED:
                    found |= {text, json.dumps(text)[1:-1], repr(text)[1:-1]}
    return sorted(found, key=lambda v: (-len(v), v))


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """:func:`secret_values` of this process's environment (or ``environ``)."""
    return secret_values(os.environ if environ is None else environ)


# What a text shows as a secret-named assignment: a flag and its value (``--api-key X``,
# ``--hf-token=X``), a quoted value (``api_key='X'``, ``'api_key': ['X']``, ``"hf_token": "X"``)
# or a bare one (``HF_TOKEN=X``).
_FLAG = re.compile(r"(?P<name>--[A-Za-z][\w-]*)(?P<sep>=|\s+)"
                   r"(?P<value>[^\s'\"\\]+|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")")
# A quoted value ends at its first unescaped quote, and a bare one never takes a backslash:
# a value inside a JSON string (an events file's line) is cut out without breaking the JSON.
_QUOTED = re.compile(r"(?P<name>[A-Za-z_][\w.-]*)(?P<sep>['\"]?\s*[:=]\s*\[?\s*)"
                     r"(?P<value>'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")")
_BARE = re.compile(r"(?P<name>\b[A-Za-z_][\w.-]*)(?P<sep>=)(?P<value>[^\s'\",;)\]}\\]+)")
_NOT_A_VALUE = {"None", "True", "False", "null", "true", "false", "***", "''", '""', REDACTED,
                f"'{REDACTED}'", f'"{REDACTED}"'}


def _assignment(found: re.Match[str]) -> str:
    value = found["value"]
    if not is_secret_name(found["name"]) or value in _NOT_A_VALUE or value.startswith("-"):
        return found[0]
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{found['name']}{found['sep']}{quote}{REDACTED}{quote}"


def redact_text(text: str, values: Iterable[str] = ()) -> str:
    """``text`` with each of ``values`` (from :func:`secret_values`) and the value of every
    secret-named assignment it shows replaced by :data:`REDACTED`."""
    for value in values:
        if value in text:
            text = text.replace(value, REDACTED)
    if "=" in text or ":" in text or "--" in text:
        for pattern in (_FLAG, _QUOTED, _BARE):
            text = pattern.sub(_assignment, text)
    return text


def scrub(data: Any, values: Iterable[str] = ()) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string put through
    :func:`redact_text`; the keys are names, kept."""
    values = list(values)
    if isinstance(data, str):
        return redact_text(data, values)
    if isinstance(data, dict):
        return {k: scrub(v, values) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [scrub(v, values) for v in data]
    return data


def scrub_file(path: str | Path, values: Iterable[str] = ()) -> bool:
    """Rewrite the file ``path`` with :func:`redact_text` applied (bytes that are not UTF-8
    kept as they are); True when it held something to redact. A missing file is left."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError:
        return False
    text = raw.decode("utf-8", errors="surrogateescape")
    clean = redact_text(text, values)
    if clean == text:
        return False
    p.write_bytes(clean.encode("utf-8", errors="surrogateescape"))
    return True
