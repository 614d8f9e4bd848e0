"""Killing a boot's processes, on real processes (no vLLM): fast, not marked ``boot``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from harness.boot import _group_members, _marked_processes, kill_group

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
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


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
    while Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[2] \
            == str(proc.pid):
        assert time.monotonic() < deadline, "the grandchild never called setsid"
        time.sleep(0.05)
    return proc, grandchild, f"COLDSTART_EVENTS={marker_value}"


def test_the_boot_marker_finds_and_kills_a_process_that_left_the_group(tmp_path: Path) -> None:
    proc, grandchild, marker = _start(tmp_path)
    try:
        assert _group_members(proc.pid) == [proc.pid]
        assert sorted(_marked_processes(marker)) == sorted([proc.pid, grandchild])
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
        assert _marked_processes(marker) == [grandchild]
    finally:
        os.kill(grandchild, 9)


def test_signals_become_an_interrupt_during_a_boot_unless_ignored() -> None:
    import signal

    from harness.boot import BootInterrupted, _signals_interrupt

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with _signals_interrupt():
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
    from harness.boot import _root_cause

    log = ("(APIServer pid=7) ERROR 11-29 10:00:01 [api_server.py:1] ValueError: "
           "max_model_len 99999 is larger than the model's 8192\n")
    serve = "server exited with code 1 before /health answered"
    assert _root_cause(log, serve).startswith("ValueError: max_model_len 99999")
    # The offline child's own exception is the most precise one.
    assert _root_cause(log, "RuntimeError: out of memory") == "RuntimeError: out of memory"
