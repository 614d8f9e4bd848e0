"""The measured part of a boot: the child in a fresh process group, watched, then killed.

The parent times nothing itself except the launch instant, the origin of the boot's clock:
every other instant is written by the probes inside the boot's own processes on the same
monotonic clock. It enforces the hard timeout, kills the whole group when the boot is over or
has failed, and checks that nothing of it survived; harness.interpret reads what is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from document.boot_result import PHASE_NAMES, BootResult
from harness import processes
from harness.interpret import ProcessOutcome, interpret_boot
from harness.spec import PreparedBoot

CHILD_SCRIPT = Path(__file__).parent / "_child.py"
# Held while the child starts and while its group is killed (SIGINT too: a second Ctrl-C).
_HELD_SIGNALS = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}


class BootInterrupted(KeyboardInterrupt):
    """The parent got SIGTERM / SIGHUP during a boot (a cancelled CI job, ``timeout``)."""


def interrupt_boot_on_end_signals():
    """SIGTERM and SIGHUP raise ``BootInterrupted`` in the ``with`` block: the boot is killed
    on the way out (see :func:`harness.processes.raise_on_end_signals`)."""
    return processes.end_signals_raise(lambda name: BootInterrupted(f"{name} during a boot"))


def launch_boot(prepared: PreparedBoot, *, progress: Callable[[str], None] | None = None
                ) -> BootResult:
    """The measured part: one boot in a fresh process group, cut into phases.

    A boot that fails or times out still returns a BootResult (``state="failed"``) holding the
    phases it completed, the error and the log tail: a failure is recorded, never lost. With
    spans on (``BootSpec.spans``), a receiver in this process takes vLLM's OTLP spans for the
    length of the boot (``harness.spans.witness``).
    """
    say = progress or (lambda _msg: None)
    if prepared.spec.spans is None:
        say("booting vLLM")
        return interpret_boot(prepared, _run_child(prepared, say))
    from harness.spans.witness import witness_spans

    with witness_spans(prepared) as attach:
        say(f"booting vLLM (spans to {prepared.env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']})")
        return attach(interpret_boot(prepared, _run_child(prepared, say)))


def _run_child(prepared: PreparedBoot, say: Callable[[str], None]) -> ProcessOutcome:
    """Start the child, wait for it (telling the phases), kill its group: what was seen."""
    spec, work, env, events_path = prepared.spec, prepared.work, prepared.env, prepared.events_path
    with open(prepared.log_path, "wb") as log, interrupt_boot_on_end_signals():
        t0 = time.monotonic_ns()  # the boot's origin: the one instant the parent takes
        # Written first, so an events file alone is enough to replay the cut.
        events_path.write_text(json.dumps({"t": t0, "e": "boot.t0", "k": "mark",
                                           "target": "parent", "pid": os.getpid(),
                                           "proc": "parent"}) + "\n")
        # Held while the child is started: a signal then would leave a session nobody kills.
        # Delivered inside the try below, whose finally kills the boot.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
        try:
            proc = subprocess.Popen(
                [sys.executable, str(CHILD_SCRIPT), str(work / "child_spec.json")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=str(work), start_new_session=True)
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            raise
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            watch = processes.GroupWatch(proc.pid)
            timed_out = _wait_with_progress(proc, events_path, t0, spec.timeout_s, say, watch)
            returned_ns = time.monotonic_ns()
        finally:
            # Also on Ctrl-C / SIGTERM: the boot's group is a session of its own, which the
            # terminal's signals never reach.
            escaped, survivors = _kill_boot(proc.pid, env, held)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # stuck in uninterruptible sleep: keep the record
            survivors = sorted(set(survivors) | {proc.pid})
    return ProcessOutcome(pgid=proc.pid, exit_code=proc.returncode, t0=t0, ended_ns=returned_ns,
                          timed_out=timed_out, watch=watch, survivors=survivors, escaped=escaped)


def _kill_boot(pgid: int, env: dict[str, str], held: set[signal.Signals]
               ) -> tuple[list[int], list[int]]:
    """Kill the boot's group and its processes that left it: (those that left, survivors)."""
    # A second Ctrl-C or SIGTERM must not cut the kill short: held until it is done (in this
    # thread; the harness starts no other).
    signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    # Unique to this boot: another run's boot on the same machine is never matched.
    marker = f"COLDSTART_BOOT_ID={env['COLDSTART_BOOT_ID']}"
    try:
        escaped = sorted(set(processes.marked_processes(marker))
                         - set(processes.group_members(pgid)))
        survivors = processes.kill_group(pgid, marker=marker)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return escaped, survivors


_PROGRESS_EVENTS = {name: name for name in PHASE_NAMES}
_PROGRESS_EVENTS.update({"mark.engine_client": "engine core start", "mark.executor_init":
                         "worker start", "ready": "ready", "first_token": "first token"})


def _wait_with_progress(proc: subprocess.Popen, events_path: Path, t0: int, timeout_s: float,
                        say: Callable[[str], None], watch: processes.GroupWatch) -> bool:
    """Wait for the child, telling each phase as the probes report it, and watching the boot's
    processes. True on timeout."""
    deadline = time.monotonic() + timeout_s
    offset = 0
    seen: set[str] = set()
    while True:
        try:
            proc.wait(timeout=0.5)
            return False
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            return True
        watch.poll()
        try:
            with open(events_path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except OSError:
            continue
        complete = chunk.rfind(b"\n") + 1
        offset += complete
        for line in chunk[:complete].splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            label = _PROGRESS_EVENTS.get(rec.get("e"))
            if label and rec.get("k") in ("start", "mark") and label not in seen:
                seen.add(label)
                say(f"[{(rec['t'] - t0) / 1e9:7.1f} s] {label}")
