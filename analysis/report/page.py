"""What the run page and the comparison page share: the templates (jinja2, autoescaped), the
Content-Security-Policy, number formatting and the machine, versions and command of a run.

The templates (``analysis/report/templates/*.html.j2``) hold every tag; the modules hand them text
and numbers already formatted, never markup, so every string from a result file is escaped
by jinja2's autoescape.
"""

from __future__ import annotations

import math
from typing import Any

import jinja2

from document import RunCell, RunDocument, recorded_facts
from document.dates import written_at

__all__ = ["CSP", "command_facts", "machine_rows", "number_text", "render_page"]

CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
       "form-action 'none'")

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("analysis.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    # A value a result file leaves out (None) reads "-", never "None".
    finalize=lambda value: "-" if value is None else value,
)


def render_page(template: str, **context: Any) -> str:
    """A whole page from ``template``, with the policy and the time it was written."""
    return _ENV.get_template(template).render(
        csp=CSP, written_at=written_at().strftime("%Y-%m-%d %H:%M:%S %z"), **context)


def number_text(value: float | None, fmt: str = "{:.2f}") -> str:
    """A number as the pages print it; ``-`` where there is none (or it is not finite)."""
    return "-" if value is None or not math.isfinite(value) else fmt.format(value)


def _flatten(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(d, dict):
        return [kv for k, v in d.items() for kv in _flatten(v, f"{prefix}{k}.")]
    if isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        return [kv for i, v in enumerate(d) for kv in _flatten(v, f"{prefix}{i}.")]
    return [(prefix.rstrip("."), d)]


def machine_rows(doc: RunDocument | None, cells: list[RunCell]) -> list[tuple[str, Any]]:
    """(what, value) of the machine, the versions and the commit a run recorded."""
    info = doc.machine_info if doc is not None else {}
    rows = list(_flatten(recorded_facts(info).as_json()))
    rows += [(k, info[k]) for k in ("node", "processor", "machine", "python_version", "system",
                                    "release") if k in info]
    if not rows:  # a single BootResult: its own versions
        versions = {k: v for c in cells for k, v in c.headline.versions.items()}
        rows = [*versions.items(), ("platform", cells[0].headline.platform)]
    commit = doc.commit_info if doc is not None else {}
    rows += [(f"commit.{k}", commit[k]) for k in ("id", "branch", "dirty", "time") if k in commit]
    return rows


def command_facts(doc: RunDocument | None, cells: list[RunCell]) -> dict[str, Any]:
    """The command that made a run, for the ``command`` macro: ``source`` says where it
    comes from (``recorded``; ``matrix`` or ``single_boot``, reconstructed; ``none``), with
    the vLLM entry points and engine arguments its cells recorded."""
    meta = doc.coldstart if doc is not None else None
    facts: dict[str, Any] = {"source": "none"}
    if meta is not None and meta.command:
        facts = {"source": "recorded", "command": meta.command}
    elif meta is not None and meta.matrix:
        rounds = f" --rounds {meta.rounds}" if meta.rounds else ""
        facts = {"source": "matrix", "matrix": meta.matrix, "rounds": rounds}
    elif doc is None and len(cells) == 1:
        c = cells[0].headline
        facts = {"source": "single_boot", "boot": c}
    facts["entrypoints"] = sorted({c.headline.evidence.entrypoint_command for c in cells
                                   if c.headline.evidence.entrypoint_command})
    facts["engine_kwargs"] = sorted({repr(c.headline.evidence.engine_kwargs)
                                     for c in cells if c.headline.evidence.engine_kwargs})
    return facts
