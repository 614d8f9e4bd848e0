"""Logs as operators have them: several boots appended to one file, tensor-parallel ranks,
year-less timestamps across 28 Feb or New Year, a log cut off inside a phase."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import document
from coldstart.__main__ import main as coldstart
from document import boot_result
from harness.logs.boots import split_boots
from harness.logs.reader import log_boots, read_log
from tests.conftest import CPU_032_LOG, GPU_0101_LOG

_STAMP = re.compile(r"(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})")


def _phases(r: boot_result.BootResult) -> dict[str, float | None]:
    return {k: None if v is None else round(v, 3) for k, v in r.phases.items()}


def _cut_inside_loading(log: str) -> str:
    lines = log.splitlines()
    cut = next(i for i, line in enumerate(lines) if "Starting to load model" in line)
    return "\n".join(lines[:cut + 1]) + "\n"


@pytest.mark.parametrize("log", [GPU_0101_LOG, CPU_032_LOG], ids=["gpu-0.10.1.1", "cpu-0.32"])
def test_a_restarted_boot_is_its_own_record(log: str) -> None:
    alone = read_log(log)
    twice = log_boots(log + log)
    assert [b.state for b in twice] == ["measured", "measured"]
    assert all(_phases(b) == _phases(alone) for b in twice)
    assert [b.evidence.boot_in_log for b in twice] == [1, 2]
    # A boot that died, then the restart that came up: the death is not hidden, nothing of
    # the second boot (its tokenizer, its bootstrap) is added to the first.
    died, came_up = log_boots(_cut_inside_loading(log) + log)
    assert died.state == "failed" and came_up.state == "measured"
    assert _phases(came_up) == _phases(alone)
    assert died.phases["framework_bootstrap"] == alone.phases["framework_bootstrap"]
    assert died.phases["tokenizer_init"] == alone.phases["tokenizer_init"]
    # read_log gives the last boot and says there were more
    last = read_log(_cut_inside_loading(log) + log)
    assert last.state == "measured" and last.evidence.boots_in_log == 2


def test_every_reference_log_is_one_boot(study_reference: Path) -> None:
    files = sorted(study_reference.glob("**/*.txt"))
    assert len(files) > 30
    for f in files:
        assert len(split_boots(f.read_text(errors="replace").splitlines())) == 1, f


def test_ingest_writes_one_record_per_boot(tmp_path: Path, capsys) -> None:
    log = tmp_path / "pod.log"
    log.write_text(_cut_inside_loading(CPU_032_LOG) + CPU_032_LOG)
    out = tmp_path / "out.json"
    assert coldstart(["ingest", str(log), "-o", str(out)]) == 0
    boots = document.read_results(out)
    assert sorted(b.state for b in boots) == ["failed", "measured"]
    assert "boot 2/2" in capsys.readouterr().err


def test_tensor_parallel_ranks_are_not_added_up() -> None:
    """Up to 0.11 every rank prints its own 'Loading weights took' / 'Model loading took'."""
    alone = read_log(GPU_0101_LOG)
    ranked = []
    for line in GPU_0101_LOG.splitlines():
        if re.search(r"Loading weights took|Model loading took", line):
            ranked.append(f"(VllmWorker rank=0 pid=1001) {line}")
            ranked.append(f"(VllmWorker rank=1 pid=1002) {line}")
        else:
            ranked.append(line)
    tp = read_log("\n".join(ranked) + "\n")
    assert tp.phases["model_loading"] == alone.phases["model_loading"]
    assert tp.subphases["model_loading.load_weights"] == alone.subphases[
        "model_loading.load_weights"]
    assert tp.evidence.facts["durations_from_processes"]["model_loading_s"] == 2


def _shift(log: str, month_day: str, hms: str) -> str:
    """The log with its first timestamp moved to ``month_day hms``, the rest kept apart as
    they were (seconds), in a common year."""
    from datetime import datetime

    first = _STAMP.search(log)
    assert first is not None
    origin = datetime(2001, int(first[1]), int(first[2]), int(first[3]), int(first[4]),
                      int(first[5]))
    target = datetime.strptime(f"2001-{month_day} {hms}", "%Y-%m-%d %H:%M:%S")

    def move(m: re.Match[str]) -> str:
        t = datetime(2001, int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]))
        t = t - origin + target
        if t.year > 2001:  # still a year-less stamp
            t = t.replace(year=2001)
        return t.strftime("%m-%d %H:%M:%S")

    return _STAMP.sub(move, log)


@pytest.mark.parametrize("month_day,hms", [("02-28", "23:59:55"), ("12-31", "23:59:50")])
def test_a_boot_across_28_february_or_new_year_keeps_its_durations(month_day: str,
                                                                    hms: str) -> None:
    alone = read_log(GPU_0101_LOG)
    moved = read_log(_shift(GPU_0101_LOG, month_day, hms))
    assert _phases(moved) == _phases(alone)
    assert moved.evidence.facts["log_span_s"] == pytest.approx(
        alone.evidence.facts["log_span_s"], abs=0.001)


def test_new_year_with_a_line_out_of_order() -> None:
    """Processes flush on their own: a 31 Dec line after a 1 Jan one is a second late, not a
    year."""
    log = "\n".join([
        "INFO 12-31 23:59:58 [gpu_model_runner.py:1] Starting to load model /m...",
        "INFO 01-01 00:00:00 [x.py:1] something",
        "INFO 12-31 23:59:59 [default_loader.py:1] Loading weights took 1.00 seconds",
        "INFO 01-01 00:00:03 [gpu_model_runner.py:1] Model loading took 1.0 GiB and 4.5 seconds",
    ]) + "\n"
    marks = read_log(log).evidence.marks
    assert marks["model_loading_start"] == [0.0]
    assert marks["load_weights_s"] == [1.0]
    assert marks["model_loading_s"] == [5.0]


def test_a_log_cut_inside_a_phase_marks_that_phase() -> None:
    lines = GPU_0101_LOG.splitlines()
    start = next(i for i, line in enumerate(lines) if "Starting to load model" in line)
    # cut after "NEW: Initializing Model took" (18:06:18.115), 0.298 s into model loading
    cut = read_log("\n".join(lines[:start + 2]) + "\n")
    assert cut.state == "failed"
    assert cut.phase_notes["model_loading"] == "unfinished: the log ends inside this phase"
    assert cut.phase_notes["torch_compile"] == "failed before this phase"
    assert cut.evidence.facts["unfinished"] == {"phase": "model_loading",
                                                   "at_least_s": pytest.approx(0.298)}


def _engine_renamed(log: str, name: str, pid: int) -> str:
    return re.sub(r"\((EngineCore\w*) pid=\d+\)", f"({name} pid={pid})", log)


def test_a_data_parallel_boot_is_one_boot() -> None:
    """Two engines (EngineCore_DP0, _DP1) each print 'Initializing a V1 LLM engine'."""
    dp0 = _engine_renamed(CPU_032_LOG, "EngineCore_DP0", 18949).splitlines()
    engine = next(line for line in dp0 if "Initializing a V1 LLM engine" in line)
    i = dp0.index(engine)
    both = dp0[:i + 1] + [engine.replace("EngineCore_DP0 pid=18949",
                                         "EngineCore_DP1 pid=18950")] + dp0[i + 1:]
    assert len(split_boots(both)) == 1
    # ... while a restart of the same engine is another boot
    assert len(split_boots(dp0 + dp0)) == 2


def test_a_restart_that_reuses_the_pid_keeps_the_previous_boots_lines() -> None:
    """Containers restart as pid 1 again: the first boot's last front-end lines (its ready
    line, a request) stay with it, not with the restart."""
    lines = CPU_032_LOG.splitlines()
    front = next(line for line in lines if "non-default args" in line)
    pid = re.search(r"pid=(\d+)", front)[1]
    tail = [f"(MainProcess pid={pid}) INFO 11-29 09:39:00 [launcher.py:1] Application startup "
            "complete.",
            f"(MainProcess pid={pid}) INFO 11-29 09:39:05 [logger.py:1] Received request 1"]
    boots = split_boots(lines + tail + lines)
    assert [len(b) for b in boots] == [len(lines) + 2, len(lines)]
    assert boots[0][-2:] == tail


def test_unheaded_lines_between_two_boots_go_as_the_boots_begin() -> None:
    """Lines with no timestamp between two pasted boots: as many open the next boot as opened
    the first (none for a boot that begins at a record), the rest are the running boot's own
    output. ROCm MI100's boot names its platform only in such a last line, a UserWarning."""
    log = (Path(__file__).parent / "data" / "logs" / "public"
           / "075-rocm-mi100-v0-blank-progress.log").read_text()
    assert [b.platform for b in log_boots(log + log)] == ["rocm", "rocm"]
    # a boot that opens with its own unheaded lines (the command's echo) gives the next one
    # as many: they do not stay with the boot before
    opened = "+ python -u serve.py --model /models/Qwen3-8B\n" + log
    first, second = split_boots((opened + opened).splitlines())
    assert first[0] == second[0] == "+ python -u serve.py --model /models/Qwen3-8B"
    assert first[-1] == log.splitlines()[-1]
