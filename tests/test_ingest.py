"""``coldstart ingest``: logs in, a result document out that read_results reads back."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import document
from coldstart.__main__ import main as coldstart
from harness.logs.reader import not_a_log, read_log
from tests.conftest import CPU_032_LOG, GPU_0101_LOG, REPO_ROOT


@pytest.fixture
def logs(tmp_path: Path) -> list[Path]:
    gpu = tmp_path / "output_model_qwen-0.5b.txt"
    gpu.write_text(GPU_0101_LOG)
    cpu = tmp_path / "cpu-boot.log"
    cpu.write_text(CPU_032_LOG)
    # No engine-config line, so no model in the log: the study's file name names it; and the
    # boot died before "init engine ... took".
    died = tmp_path / "output_model_yi-9b_cuda-graph-sizes_1_2.txt"
    died.write_text("\n".join(line for line in GPU_0101_LOG.splitlines()
                              if "model" not in line.lower())[:900])
    return [gpu, cpu, died]


def test_round_trip_through_read_results(logs: list[Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.json"
    assert coldstart(["ingest", *map(str, logs), "-o", str(out)]) == 0

    results = document.read_results(out)
    assert [r.model for r in results] == ["qwen-0.5b", "smollm2-135m", "yi-9b"]
    assert [r.state for r in results] == ["measured", "measured", "failed"]
    for result, log in zip(results, logs):
        assert result.source == "log" and result.source_path == str(log)
        assert result == read_log(log)

    err = capsys.readouterr().err.splitlines()
    assert sum(line.startswith("ingest [") for line in err) == len(logs)
    # The total each log prints is kept beside the phases and shown.
    printed = [r.printed_total_s for r in results]
    assert printed[0] is not None and printed[0] == read_log(logs[0]).log_durations[
        "study_initialize_engine_s"]
    assert printed[1] == pytest.approx(61.04)  # the CPU boot's "init engine ... took"
    assert printed[2] is None  # cut before it
    assert f"printed total {printed[0]:g} s" in err[0] and "printed total" not in err[2]


def test_failed_boot_is_kept_unrecorded(logs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert coldstart(["ingest", str(logs[2]), "-o", str(out)]) == 0
    (result,) = document.read_results(out)
    assert result.state == "failed" and result.error


@pytest.mark.parametrize("bad", ["missing.txt", "."], ids=["missing", "directory"])
def test_bad_input_exits_2_and_writes_nothing(logs: list[Path], tmp_path: Path, capsys,
                                              bad: str) -> None:
    out = tmp_path / "out.json"
    bad_path = tmp_path / bad
    assert coldstart(["ingest", str(logs[0]), str(bad_path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad_path) in err[0]
    assert err[0].startswith("coldstart ingest: error:")
    assert not out.exists()


# Committed files that are not logs: each would have been a failed boot named after it.
NOT_LOGS = {
    "empty": (None, "empty"),
    "list": (None, "is JSON, not a vLLM log"),
    "predictor": (REPO_ROOT / "analysis" / "predictors" / "cpu-scaling.json",
                  "is JSON, not a vLLM log"),
    "compare": (REPO_ROOT / "docs" / "data" / "gate-compare-0.31.0-0.32.0.json",
                "is JSON, not a vLLM log"),
    "cell-ids": (REPO_ROOT / "tests" / "data" / "matrix-ids" / "smoke.txt",
                 "no line a vLLM log has"),
}


@pytest.mark.parametrize("kind", sorted(NOT_LOGS))
def test_a_file_that_is_not_a_log_refuses_the_batch(logs: list[Path], tmp_path: Path, capsys,
                                                     kind: str) -> None:
    source, words = NOT_LOGS[kind]
    bad = source or tmp_path / f"{kind}.log"
    if source is None:
        bad.write_text("[]\n" if kind == "list" else "")
    out = tmp_path / "out.json"
    assert coldstart(["ingest", str(logs[0]), str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("coldstart ingest: error: ")
    assert f"{bad}: {words}" in err[0]
    assert not out.exists()


def test_every_committed_log_is_a_log(tmp_path: Path) -> None:
    # A boot that died before vLLM's first record (a worker's traceback only) is still one.
    data = REPO_ROOT / "tests" / "data"
    found = sorted(p for p in [*(data / "logs").rglob("*.log"), *(data / "study").rglob("*.txt"),
                               *data.glob("*.log")])
    assert len(found) > 60
    assert [p.name for p in found if not_a_log(p.read_text(errors="replace"))] == []
    traceback_only = data / "logs" / "public" / "032-v1-traceback-only-load.log"
    out = tmp_path / "out.json"
    assert coldstart(["ingest", str(traceback_only), "-o", str(out)]) == 0
    assert [r.state for r in document.read_results(out)] == ["failed"]


@pytest.mark.parametrize("argv, words", [
    (["-o", "{tmp}/nodir/out.json"], "out.json: folder {tmp}/nodir does not exist"),
    ([], "the following arguments are required: -o/--output (see coldstart ingest "
         "--help)"),
], ids=["output-folder-missing", "usage"])
def test_cli_errors_are_one_line(logs: list[Path], tmp_path: Path, capsys, argv, words) -> None:
    argv = [str(logs[0])] + [a.format(tmp=tmp_path) for a in argv]
    assert coldstart(["ingest", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("coldstart ingest: error: ") and err.count("\n") == 1
    assert words.format(tmp=tmp_path) in err, err
    assert not (tmp_path / "nodir").exists()


def test_module_entry_point(logs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    run = subprocess.run([sys.executable, "-m", "coldstart", "ingest", str(logs[0]), "-o",
                          str(out)],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert document.read_results(out)[0].model == "qwen-0.5b"
    missing = subprocess.run([sys.executable, "-m", "coldstart", "ingest", "nope.log", "-o",
                              str(out)],
                             cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2
    assert missing.stderr == "coldstart ingest: error: nope.log: no such file\n"
