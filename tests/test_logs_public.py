"""The log reader against start-up logs people pasted in public GitHub threads.

``tests/data/logs/public/manifest.json`` lists every log with its source and every duration it
prints, transcribed by hand from the log text (not produced by the reader), and the phase or
subphase each maps to. Each printed duration that maps to one must come out within 5 % + 0.05 s;
a log whose thread says it crashed during start-up must be a failed record with the phase that
was running marked unfinished; every log gives a record without a traceback.

An entry may carry ``reader_gap``: one line naming what today's reader misses in that log. Its
test is then an expected failure, strict: once the reader learns it, the test passes, pytest
reports that as a failure, and the field must be removed. Such entries are left out of the
agreement count.

``README.md`` beside the logs is generated from the manifest:
``python tests/test_logs_public.py`` writes it, and a test keeps it in step.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from document import boot_result
from harness.logs.reader import log_boots

PUBLIC = Path(__file__).resolve().parent / "data" / "logs" / "public"
from harness.logs.transcripts import agrees, value_of

MANIFEST = json.loads((PUBLIC / "manifest.json").read_text(encoding="utf-8"))
LOGS = MANIFEST["logs"]


def render_readme() -> str:
    out = [
        "# Start-up logs pasted in public threads",
        "",
        "Excerpts of vLLM start-up logs that people pasted in public GitHub issue and pull-request",
        "threads: the log lines only, as pasted (prefixes, indentation, wrappers kept), each the",
        "part of the paste the search excerpt showed; lines left out are named in the note. The",
        "printed durations were transcribed by hand from the log text. Generated from",
        "`manifest.json` by `python tests/test_logs_public.py`; `tests/test_logs_public.py`",
        "checks the reader against it.",
        "",
        f"{len(LOGS)} logs, {sum(len(e['printed']) for e in LOGS)} printed durations, "
        f"{sum(1 for e in LOGS for p in e['printed'] if p[2])} of them mapped to a phase, "
        "a subphase or the printed total.",
        "",
    ]
    for entry in LOGS:
        out.append(f"## {entry['file']}")
        out.append("")
        out.append(f"- source: {entry['url']} ({entry['author']})")
        engine = entry["engine"].upper() if entry["engine"] else "not stated in the excerpt"
        out.append(f"- vLLM: {entry['version'] or 'not stated in the excerpt or thread title'}; "
                   f"engine {engine}; platform {entry['platform']}"
                   + (f"; tensor parallel {entry['tensor_parallel']}"
                      if entry["tensor_parallel"] else ""))
        if entry["crashed_in"]:
            out.append(f"- crashed during start-up, in `{entry['crashed_in']}`")
        if entry.get("reader_gap"):
            out.append(f"- reader gap (its test is a strict expected failure): {entry['reader_gap']}")
        if entry["note"]:
            out.append(f"- {entry['note']}")
        if entry["printed"]:
            out.append("")
            out.append("| line | value (s) | maps to | process |")
            out.append("| --- | --- | --- | --- |")
            for words, value, target, process, *boot in entry["printed"]:
                where = f" (boot {boot[0]})" if boot else ""
                out.append(f"| {words} | {value:g} | {target or '-'}{where} | {process or ''} |")
        else:
            out.append("- prints no duration")
        out.append("")
    return "\n".join(out)


def test_manifest_names_every_log_and_the_readme_is_in_step() -> None:
    files = sorted(p.name for p in PUBLIC.glob("*.log"))
    assert files == sorted(e["file"] for e in LOGS)
    assert len(files) >= 30
    assert (PUBLIC / "README.md").read_text(encoding="utf-8") == render_readme(), (
        "README.md is out of step with manifest.json: run python tests/test_logs_public.py")


def _param(entry: dict):  # noqa: ANN202
    """The entry as a test case: a strict expected failure where the manifest names a gap."""
    gap = entry.get("reader_gap")
    marks = [pytest.mark.xfail(strict=True, reason=f"reader gap: {gap}")] if gap else []
    return pytest.param(entry, marks=marks, id=entry["file"].removesuffix(".log"))


@pytest.mark.parametrize("entry", [_param(e) for e in LOGS])
def test_public_log(entry: dict) -> None:
    boots = log_boots(PUBLIC / entry["file"])
    result = boots[-1]
    wrong = []
    # An optional fifth item names the boot (1-based) a line belongs to, where a paste holds
    # several (harness.logs.transcripts); without it the line is the last boot's.
    for words, printed, target, _, *boot in entry["printed"]:
        if target is None:
            continue
        got = value_of(boots[boot[0] - 1], target) if boot and boot[0] <= len(boots) else (
            None if boot else value_of(result, target))
        if not agrees(got, printed):
            wrong.append(f"{target}: printed {printed} ({words}), read {got}")
    assert not wrong, wrong
    # null where no line of the excerpt states the engine (the note says why)
    if entry["engine"]:
        assert result.evidence.facts["engine"] == entry["engine"]
    if entry["crashed_in"]:
        assert result.state == "failed"
        running = [n for n, note in result.phase_notes.items()
                   if note.startswith(boot_result.UNFINISHED_PREFIX)]
        assert running == [entry["crashed_in"]], (running, result.phase_notes)


def test_corpus_agreement_count() -> None:
    """Every printed duration that maps to a phase agrees (logs with a reader_gap aside)."""
    mapped = agreed = 0
    for entry in LOGS:
        if entry.get("reader_gap"):
            continue
        boots = log_boots(PUBLIC / entry["file"])
        for _, printed, target, _, *boot in entry["printed"]:
            if target:
                mapped += 1
                result = boots[boot[0] - 1] if boot and boot[0] <= len(boots) else boots[-1]
                agreed += agrees(value_of(result, target), printed)
    assert mapped >= 60
    assert agreed == mapped


def test_the_heldout_check_scores_the_corpus_in_full() -> None:
    """scripts/heldout_check.py's scoring over this corpus: every printed duration, mapped
    or not, is among what the reader gives, and no engine, platform or TP size it reads
    contradicts the manifest (where it reads none, no line of the excerpt states it). A log
    with a reader_gap is left out: its strict expected failure in test_public_log holds it."""
    from harness.logs.transcripts import check_manifest, fact_agrees

    report = check_manifest(PUBLIC)
    assert report["printed"] >= 150 and not report["crashed"]
    gaps = {e["file"] for e in LOGS if e.get("reader_gap")}
    missed = [(log["file"], o["words"], o["printed"]) for log in report["per_log"]
              if log["file"] not in gaps for o in log["durations"] if not o["reproduced"]]
    assert not missed, missed
    wrong = [(log["file"], name, fact) for log in report["per_log"] if log["file"] not in gaps
             for name, fact in log["facts"].items()
             if fact["read"] is not None and not fact_agrees(name, fact)]
    assert not wrong, wrong


def test_an_engine_no_line_states_is_not_checked() -> None:
    """A manifest's engine is null where no line of the excerpt states it: no engine fact is
    compared then, while a stated one still is, and a wrong one disagrees."""
    from harness.logs.transcripts import check_entry, fact_agrees

    entry = next(e for e in LOGS if e["file"].startswith("001-"))
    assert entry["engine"] == "v1"
    assert fact_agrees("engine", check_entry(PUBLIC, entry).facts["engine"])
    assert not fact_agrees("engine", check_entry(PUBLIC, dict(entry, engine="v0")).facts["engine"])
    assert "engine" not in check_entry(PUBLIC, dict(entry, engine=None)).facts


if __name__ == "__main__":
    (PUBLIC / "README.md").write_text(render_readme(), encoding="utf-8")
    sys.exit(0)
