"""Killing a boot's processes, and naming the one that died: on real processes without vLLM
(fast), and on a real boot (marked ``boot``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from harness import processes
from harness.boot import PROBE_DIR, run_boot
from harness.interpret import error_naming_deaths
from harness.processes import group_members, kill_group, marked_processes
from harness.spec import BootSpec
from harness.timeline import Timeline

# The child starts a grandchild that leaves the process group (as vLLM's data-parallel
# supervisor does with setsid), writes its pid, and both sleep.
_TREE = """
import os, subprocess, sys, time
g = subprocess.Popen([sys.executable, "-c",
                      "import os, time; os.setsid(); time.sleep(120)"])
open(sys.argv[1], "w").write(str(g.pid))
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _start(tmp_path: Path) -> tuple[subprocess.Popen, int, str]:
    marker_value = str(tmp_path / "events.jsonl")
    env = dict(os.environ, COLDSTART_EVENTS=marker_value)
    pid_file = tmp_path / "grandchild.pid"
    proc = subprocess.Popen([sys.executable, "-c", _TREE, str(pid_file)], env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline, "the grandchild never started"
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    # Wait until it has left the group.
    while os.getpgid(grandchild) == proc.pid:
        assert time.monotonic() < deadline, "the grandchild never called setsid"
        time.sleep(0.05)
    return proc, grandchild, f"COLDSTART_EVENTS={marker_value}"


def test_the_boot_marker_finds_and_kills_a_process_that_left_the_group(tmp_path: Path) -> None:
    proc, grandchild, marker = _start(tmp_path)
    try:
        assert group_members(proc.pid) == [proc.pid]
        assert sorted(marked_processes(marker)) == sorted([proc.pid, grandchild])
        assert kill_group(proc.pid, grace_s=2.0, marker=marker) == []
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(grandchild)
    finally:
        for pid in (proc.pid, grandchild):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def test_without_the_marker_the_group_kill_misses_it(tmp_path: Path) -> None:
    # Why the marker exists: killpg alone leaves the escaped process running.
    proc, grandchild, marker = _start(tmp_path)
    try:
        assert kill_group(proc.pid, grace_s=2.0) == []
        proc.wait(timeout=10)
        assert _alive(grandchild)
        assert marked_processes(marker) == [grandchild]
    finally:
        os.kill(grandchild, 9)


def test_signals_become_an_interrupt_during_a_boot_unless_ignored() -> None:
    from harness.launch import BootInterrupted, interrupt_boot_on_end_signals

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with interrupt_boot_on_end_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: nothing happens
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
                raise AssertionError("SIGTERM did not interrupt")
            except BootInterrupted as exc:
                assert "SIGTERM during a boot" in str(exc)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)


def test_the_serve_childs_exit_line_does_not_hide_the_logs_root_cause() -> None:
    from harness.interpret import root_cause

    log = ("(APIServer pid=7) ERROR 11-29 10:00:01 [api_server.py:1] ValueError: "
           "max_model_len 99999 is larger than the model's 8192\n")
    serve = "server exited with code 1 before /health answered"
    assert root_cause(log, serve).startswith("ValueError: max_model_len 99999")
    # The offline child's own exception is the most precise one.
    assert root_cause(log, "RuntimeError: out of memory") == "RuntimeError: out of memory"


# ------------------------------------------------------------------ which process died, how
# vLLM's process tree in miniature: a front end spawns "EngineCore", which spawns
# "VllmWorker-0", each a fresh interpreter running the probe (as vLLM's spawned processes do);
# the Worker's load_weights is probed as model_loading and writes a file once it runs.
_LOADER = """
import time
def load_weights(flag):
    open(flag, "w").write("loading")
    time.sleep(120)
"""
_FRONT_END = """
import multiprocessing as mp, sys
def worker(flag):
    import slowload
    slowload.load_weights(flag)
def engine(flag):
    w = mp.get_context("spawn").Process(target=worker, args=(flag,), name="VllmWorker-0")
    w.start(); w.join(); sys.exit(1)  # as vLLM's EngineCore fails once its Worker is gone
if __name__ == "__main__":
    e = mp.get_context("spawn").Process(target=engine, args=(sys.argv[1],), name="EngineCore")
    e.start(); e.join(); sys.exit(1)
"""


def _worker_in(events: Path, phase: str) -> int | None:
    """The pid of the Worker once the probes report it inside ``phase``."""
    try:
        lines = events.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line being written
            continue
        if rec.get("k") == "start" and rec.get("e", "").split(".")[0] == phase \
                and str(rec.get("proc", "")).startswith("VllmWorker"):
            return rec["pid"]
    return None


def test_a_sigkilled_worker_is_named_by_the_engine_core_that_reaps_it(tmp_path: Path) -> None:
    (tmp_path / "slowload.py").write_text(_LOADER)
    (tmp_path / "front_end.py").write_text(_FRONT_END)
    events = tmp_path / "events.jsonl"
    target = {"module": "slowload", "attr": "load_weights", "event": "model_loading.load_weights",
              "kind": "call", "io": True}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PROBE_DIR), str(tmp_path)]),
               COLDSTART_EVENTS=str(events), COLDSTART_PROBE_TARGETS=json.dumps([target]))
    t0 = time.monotonic_ns()
    proc = subprocess.Popen([sys.executable, str(tmp_path / "front_end.py"),
                             str(tmp_path / "flag")], env=env, start_new_session=True)
    watch = processes.GroupWatch(proc.pid)
    try:
        deadline = time.monotonic() + 60
        while (worker := _worker_in(events, "model_loading")) is None:
            assert proc.poll() is None and time.monotonic() < deadline, "no Worker loading"
            watch.poll()
            time.sleep(0.05)
        watch.poll()
        os.kill(worker, signal.SIGKILL)
        assert proc.wait(timeout=30) == 1
        ended = time.monotonic_ns()
    finally:
        kill_group(proc.pid, grace_s=1.0)
    tl = Timeline.from_file(events, t0)
    found = processes.deaths(tl, front_pid=proc.pid, front_status=proc.returncode,
                             front_ended=ended, watch=watch, until=ended, entrypoint="offline")
    deaths = processes.with_phases(found, tl, None)
    engine = next(p for p, seen in tl.processes.items() if seen.get("name") == "EngineCore")
    assert [(d.role, d.pid, d.signal, d.exit_code) for d in deaths] == [
        ("Worker", worker, 9, None), ("EngineCore", engine, None, 1),
        ("front end", proc.pid, None, 1)]
    killed = deaths[0]
    assert (killed.signal_name, killed.phase, killed.process_name, killed.seen_by) == \
        ("SIGKILL", "model_loading", "VllmWorker-0", f"reaped by pid {engine}")
    assert 0 < killed.at_s < (ended - t0) / 1e9
    generic = "RuntimeError: Engine core initialization failed. See root cause above."
    assert error_naming_deaths(generic, deaths) == \
        f"Worker (pid {worker}) killed by SIGKILL in model_loading; then: {generic}"
    # The I/O counters of the probed call come through psutil where the boot has it.
    start = next(json.loads(line) for line in events.read_text().splitlines()
                 if '"model_loading.load_weights"' in line)
    assert set(start["io"]) >= {"rchar", "read_bytes"} and start["io"]["rchar"] > 0


def test_an_error_names_a_death_by_exit_code_only_where_the_log_says_nothing_better() -> None:
    from document.boot_result import ProcessDeath

    died = [ProcessDeath(role="EngineCore", pid=7, exit_code=1, phase="torch_compile"),
            ProcessDeath(role="front end", pid=5, signal=15, signal_name="SIGTERM")]
    specific = "ValueError: max_model_len 99999 is larger than the model's 8192"
    assert error_naming_deaths(specific, died) == specific
    assert error_naming_deaths("RuntimeError: EngineCore failed to start.", died) == (
        "EngineCore (pid 7) exited with code 1 in torch_compile; "
        "then: RuntimeError: EngineCore failed to start.")
    assert error_naming_deaths(specific, []) == specific


@pytest.mark.slow
@pytest.mark.boot
def test_a_real_boot_whose_worker_is_sigkilled_names_it_with_signal_and_phase(tmp_path: Path
                                                                               ) -> None:
    pytest.importorskip("vllm")
    from fixtures.build import ensure_model

    spec = BootSpec(model="smollm2-135m", model_path=ensure_model("smollm2-135m"),
                    compile_cache="off", work_dir=tmp_path, timeout_s=600)
    events, killed = tmp_path / "events.jsonl", []

    def kill_worker_in_model_loading() -> None:  # the OOM killer, on cue
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            worker = _worker_in(events, "model_loading")
            if worker is not None:
                os.kill(worker, signal.SIGKILL)
                killed.append(worker)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_worker_in_model_loading, daemon=True)
    killer.start()
    result = run_boot(spec)
    killer.join(timeout=5)
    assert killed, f"the Worker never reached model_loading: {result.error}"
    assert result.state == "failed"
    worker_deaths = [d for d in result.process_deaths if d.pid == killed[0]]
    assert [(d.role, d.signal, d.signal_name, d.phase) for d in worker_deaths] == \
        [("Worker", 9, "SIGKILL", "model_loading")], result.process_deaths
    assert result.process_deaths[0].pid == killed[0]  # the first to die: the cause
    assert result.error.startswith(f"Worker (pid {killed[0]}) killed by SIGKILL in "
                                   "model_loading"), result.error
    assert result.phase_notes["model_loading"].startswith("unfinished")
    assert not result.evidence.survivors
    assert group_members(result.evidence.pgid) == []
    assert marked_processes(f"COLDSTART_EVENTS={events}") == []
