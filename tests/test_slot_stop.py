"""A stopped gate or history stops its slot's pytest as Ctrl-C would (benchmarks.interleave
.stop_pytest), so that the harness kills the boot's process group: a session of its own,
which a kill of pytest alone left running (a real gate stopped by SIGTERM left vLLM's
engine core and worker busy on both cores)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from benchmarks.interleave import stop_pytest

# What the harness does with a boot: its child in a session of its own, killed in a finally
# on Ctrl-C or SIGTERM (harness.launch._run_child).
PARENT = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.default_int_handler)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=True)
open(sys.argv[1], "w").write(str(child.pid))
try:
    child.wait()
finally:
    os.killpg(child.pid, signal.SIGKILL)
"""


def _started(tmp_path: Path, script: str) -> tuple[subprocess.Popen, int]:
    pid_file = tmp_path / "child.pid"
    proc = subprocess.Popen([sys.executable, "-c", script, str(pid_file)],
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not (pid_file.is_file() and pid_file.read_text()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    return proc, int(pid_file.read_text())


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stopping_a_slot_ends_the_boot_in_its_own_session(tmp_path: Path) -> None:
    proc, child = _started(tmp_path, PARENT)
    assert os.getpgid(child) != os.getpgid(proc.pid)  # out of reach of a kill of the group
    stop_pytest(proc, grace_s=(20.0, 5.0))
    assert proc.returncode is not None
    deadline = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child)


def test_a_slot_that_ignores_sigint_and_sigterm_is_killed(tmp_path: Path) -> None:
    stubborn = ("import signal, sys, time\n"
                "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "open(sys.argv[1], 'w').write('1'); time.sleep(600)\n")
    proc, _ = _started(tmp_path, stubborn)
    t0 = time.monotonic()
    stop_pytest(proc, grace_s=(0.5, 0.5))
    assert proc.returncode == -9 and time.monotonic() - t0 < 10
