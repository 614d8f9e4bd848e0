"""What a cell of ``pytest benchmarks/`` keeps on record when something around its boots breaks.

Each case runs ``pytest benchmarks/`` in a subprocess with pytest-benchmark and the JSON hooks
for real; ``tests/_fake_boots.py`` scripts the rounds instead of booting vLLM, so these take
seconds. benchmarks.check is fed malformed files through its ``main``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import check
from benchmarks.matrix import Cell, split_values
from harness.schema import BootResult, benchmark_entry, new_document, read_results

REPO = Path(__file__).resolve().parents[1]
ONE_CELL = ["--loaders", "safetensors", "--compile-caches", "cold", "--page-caches", "warm",
            "--entrypoints", "offline"]
CELL = Cell("smollm2-135m", "safetensors", "cold", "warm", "offline")


def _run(tmp_path: Path, rounds: str, *args: str, faults: str = "") -> tuple[
        subprocess.CompletedProcess, dict, dict]:
    """(the pytest run, its JSON document, its one cells.jsonl record)."""
    out = tmp_path / "out.json"
    env = {**os.environ, "FAKE_ROUNDS": rounds, "FAKE_FAULTS": faults,
           "COLDSTART_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "-p", "tests._fake_boots",
         "-p", "no:cacheprovider", "-q", "--basetemp", str(tmp_path / "inner"),
         # Nothing here is timed: a vLLM running beside these runs disturbs nothing.
         "--allow-busy-machine", "--benchmark-json", str(out), *ONE_CELL, *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.is_file(), proc.stdout[-3000:] + proc.stderr[-2000:]
    (line,) = Path(f"{out}.cells.jsonl").read_text().splitlines()
    return proc, json.loads(out.read_text()), json.loads(line)


def test_all_rounds_measured_pass_and_leave_no_work_folder(tmp_path):
    proc, doc, record = _run(tmp_path, "measured,measured,measured", "--rounds", "3")
    assert proc.returncode == 0, proc.stdout[-3000:]
    (entry,) = doc["benchmarks"]
    assert entry["stats"]["rounds"] == 3
    assert entry["extra_info"]["checks_failed"] == []
    assert entry["extra_info"]["wall_s"] == 10.75  # round 2 of 9.75, 10.75, 11.75 s
    assert len(record["rounds"]) == 3
    assert not any(Path(r["evidence"]["work_dir"]).exists() for r in record["rounds"])


@pytest.mark.parametrize("last, state, reason", [
    ("unreachable", "skipped", "eviction left 87.5% of the files resident"),
    ("setup_error", "failed", "round 3 setup: OSError: [Errno 28] No space left on device"),
])
def test_a_round_whose_setup_fails_keeps_the_rounds_before_it(tmp_path, last, state, reason):
    proc, doc, record = _run(tmp_path, f"measured,measured,{last}", "--rounds", "4")
    assert proc.returncode == 1, proc.stdout[-3000:]
    (entry,) = doc["benchmarks"]
    assert entry["stats"]["rounds"] == 2  # the two boots that were timed
    extra = entry["extra_info"]
    assert [r["state"] for r in extra["rounds"]] == ["measured", "measured", state]
    assert (extra["rounds"][2]["skip_reason"] or extra["rounds"][2]["error"]).startswith(reason)
    assert extra["state"] == "measured" and extra["wall_s"] == 9.75
    assert extra["checks_failed"] == [
        "3 of 4 rounds run: a round's setup ended the cell",
        f"1 of 3 rounds not measured: [{reason!r}]" if state == "skipped" else
        f"1 of 3 rounds not measured: [{extra['rounds'][2]['error']!r}]",
    ]
    assert doc["coldstart"]["unrecorded"] == []
    # the measured rounds are readable, and their work folders are named and kept, as for any
    # cell whose checks failed
    rounds = read_results(tmp_path / "out.json", all_rounds=True)
    assert [r.state for r in rounds] == ["measured", "measured", state]
    assert [r["state"] for r in record["rounds"]] == ["measured", "measured", state]
    assert all(Path(r.evidence["work_dir"]).is_dir() for r in rounds[:2])


@pytest.mark.parametrize("first, state, exit_code", [
    ("unreachable", "skipped", 0), ("setup_error", "failed", 1)])
def test_a_first_round_that_cannot_boot_is_the_cells_record(tmp_path, first, state, exit_code):
    proc, doc, record = _run(tmp_path, first, "--rounds", "3")
    assert proc.returncode == exit_code, proc.stdout[-3000:]
    assert doc["benchmarks"] == []
    (result,) = doc["coldstart"]["unrecorded"]
    assert result["state"] == record["result"]["state"] == state
    if state == "failed":
        assert result["error"].startswith(
            "round 1 setup: OSError: [Errno 28] No space left on device")
        assert "prepare_boot" in result["log_tail"]  # the traceback, for whoever debugs it


@pytest.mark.parametrize("fault, failure", [
    ("check_raises", "compile cache 'miss' not judged: KeyError: "
                     "\"no compile-cache expectation for mode 'cold'\""),
    ("warm_copy_raises", "keeping the compile cache as the warm cache: "
                         "OSError: [Errno 28] No space left on device"),
])
def test_a_check_or_warm_copy_that_raises_keeps_the_measurement(tmp_path, fault, failure):
    proc, doc, record = _run(tmp_path, "measured", faults=fault)
    assert proc.returncode == 1, proc.stdout[-3000:]
    (entry,) = doc["benchmarks"]
    extra = entry["extra_info"]
    assert extra["state"] == "measured" and extra["wall_s"] == 9.75
    assert extra["phases"]["model_loading"] == 1.0
    assert extra["checks_failed"] == [failure]
    assert record["checks_failed"] == [failure] and record["result"]["state"] == "measured"
    # and benchmarks.check does not take it for a good cell
    assert check.main([str(tmp_path / "out.json"), *ONE_CELL]) == 1


def test_an_unreachable_storage_floor_skips_the_cell(tmp_path):
    proc, doc, record = _run(tmp_path, "measured", faults="floor_unreachable")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "1 skipped" in proc.stdout
    (result,) = doc["coldstart"]["unrecorded"]
    assert result["state"] == "skipped" and result["error"] is None
    assert result["skip_reason"].startswith("storage floor: eviction left 100.0%")
    assert "posix_fadvise" in result["skip_reason"]
    assert record["result"] == result


def test_rounds_with_benchmark_disable_is_refused(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider", "-q",
         "--collect-only", "--rounds", "3", "--benchmark-disable", *ONE_CELL],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout[-1000:]
    assert "--rounds 3 needs pytest-benchmark enabled" in proc.stderr
    # one round, or benchmarks turned back on, is what the user asked for
    for args in (["--rounds", "1", "--benchmark-disable"],
                 ["--rounds", "3", "--benchmark-disable", "--benchmark-enable"]):
        ok = subprocess.run([sys.executable, "-m", "pytest", "benchmarks/", "-p",
                             "no:cacheprovider", "-q", "--collect-only",
                             "--allow-busy-machine", *args, *ONE_CELL],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
        assert ok.returncode == 0, ok.stdout[-1000:] + ok.stderr[-1000:]


# ---------------------------------------------------------------- benchmarks.check


def _measured() -> BootResult:
    phases = {"framework_bootstrap": 3.0, "tokenizer_init": 0.2, "model_loading": 1.0,
              "torch_compile": 4.0, "kv_cache_profiling": 0.5}
    return BootResult(state="measured", **CELL.params(), phases=phases, wall_s=8.75,
                      residual_s=0.05, platform="cpu",
                      phase_notes={"cuda_graph_capture": "not applicable on cpu"})


@pytest.mark.parametrize("content, what", [
    ([_measured().model_dump(mode="json")], "a list of results, not the JSON of"),
    (_measured().model_dump(mode="json"), "a single BootResult, not the JSON of"),
    # the shapes harness.schema.read_results refuses, in its words
    ({"benchmarks": {"a": 1}}, "'benchmarks', 'coldstart' or its 'unrecorded' has the wrong"),
    ({"benchmarks": ["x"]}, "benchmark 0 is a JSON str, not an object"),
    ({"benchmarks": [], "coldstart": {"schema_version": "1"}}, "schema_version '1' is not"),
    ({"machine_info": {}}, "no 'benchmarks' list and not a BootResult"),
    ("a string", "not a result document"),
])
def test_check_refuses_what_is_not_a_benchmark_document(tmp_path, capsys, content, what):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    assert check.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"benchmarks.check: error: {path}: {what}")


def test_check_as_a_command_exits_2_on_a_list(tmp_path):
    path = tmp_path / "list.json"
    path.write_text(json.dumps([_measured().model_dump(mode="json")]))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.check", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (f"benchmarks.check: error: {path}: a list of results, not the JSON "
                           "of `pytest benchmarks/ --benchmark-json`\n")


def test_check_reads_axis_values_as_pytest_does(tmp_path, capsys):
    path = tmp_path / "out.json"
    doc = new_document([benchmark_entry(_measured(), name="cell", params=CELL.params())])
    doc["benchmarks"][0]["extra_info"]["checks_failed"] = []
    path.write_text(json.dumps(doc))
    spaced = ["--loaders", " safetensors ", "--compile-caches", "cold, ", "--page-caches",
              " warm", "--entrypoints", "offline ,"]
    assert check.main([str(path), *spaced]) == 0
    assert f"{CELL.id}: measured, ready in 8.8 s" in capsys.readouterr().out
    assert split_values(" a , b,,") == ["a", "b"]
    assert split_values(" , ") is None and split_values(None) is None


def test_a_cell_without_a_measured_round_is_recorded_by_its_failed_boot() -> None:
    from benchmarks.test_cold_start import _median_round
    from harness.schema import BootResult

    failed = BootResult(state="failed", model="m", error="EngineCore died")
    skipped = BootResult(state="skipped", model="m", skip_reason="page cache not evicted")
    assert _median_round([failed, skipped]) is failed
    assert _median_round([skipped]) is skipped
