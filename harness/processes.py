"""Which process of a boot died, how, and in which phase.

A boot is several processes: the front end (the harness's child offline, vLLM's API server
with ``entrypoint=serve``), the EngineCore it spawns, the Worker the EngineCore spawns, and
helpers (Inductor's compile workers, the model-inspection subprocess, ...). When one of them
dies (the OOM killer's SIGKILL), vLLM reports "Engine core initialization failed. See root
cause above. Failed core proc(s): {}", which names neither the process nor the signal.

Where each fact comes from, and why that source:

- **The exit status** of a process can only be waited for by its parent: the harness gets
  the front end's (its own child) from ``Popen.returncode``; every other parent of the boot
  runs the probe, which records each child it reaps with its status (``process.reaped``).
  That is the kernel's own answer, and it reaches us whichever process died.
- **A death nobody reaped** (its parent died first, or the boot ran without probes) is still
  seen by the harness, which watches the boot's process group with psutil while it waits:
  a main process (front end, EngineCore, Worker) that vanished is a death with its status
  unknown.
- **The role** is the process's multiprocessing name the probe records (``EngineCore``,
  ``VllmWorker-0``), else the title vLLM gives its processes (``VLLM::Worker``, seen by the
  watch), else its command line (Inductor's ``compile_worker``) or that of an ancestor.
- **The phase** is the one of the innermost probed call the dead process left open; else the
  phase that held the boot at the instant its death was seen.

vLLM's own "Worker proc ... died unexpectedly (exit code: -9)" says the same for a Worker
only, and only in versions that log it: it is not used.

And how they are ended: the whole group, and the processes of the boot that left it
(:func:`kill_group`); and the signals that would end the harness before it could end them
(:func:`raise_on_end_signals`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psutil

from document.boot_result import PHASE_NAMES, ProcessDeath
from harness.timeline import PhaseCut, Timeline

FRONT_END = "front end"
ENGINE_CORE = "EngineCore"
WORKER = "Worker"
COMPILE_WORKER = "compile worker"
# The harness's child with entrypoint=serve: it starts the server and asks it, nothing more.
LAUNCHER = "launcher"
HELPER = "helper"
# Without these a boot cannot go on: one that vanished unreaped is a death, status unknown.
MAIN_ROLES = (FRONT_END, ENGINE_CORE, WORKER)


@dataclass
class GroupWatch:
    """What the harness saw of the boot's processes while it waited (psutil, every poll)."""

    pgid: int
    # pid -> latest command line (vLLM retitles its processes: "VLLM::EngineCore").
    cmdlines: dict[int, str] = field(default_factory=dict)
    # pid -> the first instant (monotonic ns) it was seen gone, or a zombie nobody reaped yet.
    vanished: dict[int, int] = field(default_factory=dict)

    def poll(self) -> None:
        now = time.monotonic_ns()
        alive = set()
        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) != self.pgid:  # first: cheap, and true of few
                    continue
                with proc.oneshot():
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        continue
                    cmdline = proc.cmdline()
            except (ProcessLookupError, psutil.Error):  # gone since the listing
                continue
            alive.add(proc.pid)
            if cmdline:
                self.cmdlines[proc.pid] = " ".join(cmdline)[:300]
        for pid in set(self.cmdlines) - alive - set(self.vanished):
            self.vanished[pid] = now


def role_of(pid: int, tl: Timeline, cmdlines: dict[int, str], front_pid: int,
            entrypoint: str) -> tuple[str, str | None]:
    """(role, the process's name) of ``pid``; see the module's docstring for the sources."""
    def facts(p: int) -> tuple[str, str]:
        seen = tl.processes.get(p, {})
        name = seen.get("name") or ""
        return name, f"{seen.get('argv') or ''} {cmdlines.get(p, '')}"

    name, cmd = facts(pid)
    shown = name if name not in ("", "MainProcess", "child", "?") else None
    if name.startswith("EngineCore") or "VLLM::EngineCore" in cmd:
        return ENGINE_CORE, shown or "EngineCore"
    if name.startswith(("VllmWorker", "Worker")) or "VLLM::Worker" in cmd:
        return WORKER, shown or "Worker"
    if "vllm.entrypoints.openai.api_server" in cmd or "VLLM::APIServer" in cmd:
        return FRONT_END, shown or "APIServer"
    if pid == front_pid:
        return (FRONT_END if entrypoint == "offline" else LAUNCHER), shown
    ancestor, hops = pid, 0
    while ancestor and hops < 16:  # a compile worker's pool processes are its children
        if "compile_worker" in facts(ancestor)[1]:
            return COMPILE_WORKER, shown
        ancestor, hops = tl.processes.get(ancestor, {}).get("ppid"), hops + 1
    return HELPER, shown


def decode_status(status: int) -> tuple[int | None, int | None]:
    """(signal, exit code) of a wait status; (None, None) for a stop or continue report."""
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status), None
    if os.WIFEXITED(status):
        return None, os.WEXITSTATUS(status)
    return None, None


def _signal_name(signum: int | None) -> str | None:
    if signum is None:
        return None
    try:
        return signal.Signals(signum).name
    except ValueError:
        return None


def _phase_of(event: str) -> str | None:
    phase = event.split(".")[0]
    return phase if phase in PHASE_NAMES else None


def phase_at_death(pid: int, at: int, tl: Timeline, cut: PhaseCut | None) -> str | None:
    """The phase of the innermost probed call ``pid`` left open, else the boot's at ``at``."""
    open_phases = sorted(((c["start"], _phase_of(c["event"])) for c in tl.open_calls
                          if c["pid"] == pid and _phase_of(c["event"])), reverse=True)
    if open_phases:
        return open_phases[0][1]
    if cut is not None:
        for name, ivs in cut.owned.items():
            if any(s <= at <= e for s, e in ivs):
                return name
    return None


def deaths(tl: Timeline, *, front_pid: int, front_status: int | None, front_ended: int | None,
           watch: GroupWatch | None, until: int, entrypoint: str) -> list[dict[str, Any]]:
    """Every abnormal end of a boot's process seen before ``until`` (ns), in time order.

    An abnormal end is a signal, a non-zero exit code, or a main process that vanished
    unreaped. ``front_status`` is the harness's own child's ``returncode`` (None: it did not
    end by itself before ``until``). Phases are filled in by :func:`with_phases`, once the
    phases are cut.
    """
    cmdlines = watch.cmdlines if watch else {}
    found: dict[int, dict[str, Any]] = {}

    def add(pid: int, at: int, signum: int | None, code: int | None, seen_by: str) -> None:
        if at > until or pid in found or (signum is None and code == 0):
            return
        role, name = role_of(pid, tl, cmdlines, front_pid, entrypoint)
        if signum is None and code is None and role not in MAIN_ROLES:
            return
        found[pid] = {"role": role, "pid": pid, "process_name": name, "signal": signum,
                      "signal_name": _signal_name(signum), "exit_code": code, "at": at,
                      "seen_by": seen_by}

    for r in sorted(tl.reaped, key=lambda r: r["t"]):
        if r["child"] is None or r["status"] is None:
            continue
        signum, code = decode_status(int(r["status"]))
        if signum is not None or code is not None:
            add(int(r["child"]), r["t"], signum, code, f"reaped by pid {r['pid']}")
    if front_status is not None and front_ended is not None:
        add(front_pid, front_ended, -front_status if front_status < 0 else None,
            front_status if front_status >= 0 else None, "the harness (its parent)")
    # A process whose status is known (a clean exit included) is not a vanished one.
    known = {r["child"] for r in tl.reaped} | ({front_pid} if front_status is not None else set())
    for pid, at in sorted((watch.vanished if watch else {}).items(), key=lambda kv: kv[1]):
        if pid not in known:
            add(pid, at, None, None, "the harness's watch: gone from the process group, unreaped")
    return sorted(found.values(), key=lambda d: d["at"])


def with_phases(found: list[dict[str, Any]], tl: Timeline, cut: PhaseCut | None
                ) -> list[ProcessDeath]:
    """The deaths as schema records: the phase each died in, instants relative to the boot."""
    return [ProcessDeath(**{k: v for k, v in d.items() if k != "at"},
                         phase=phase_at_death(d["pid"], d["at"], tl, cut),
                         at_s=(d["at"] - tl.t0) / 1e9) for d in found]


# ------------------------------------------------------------ ending a boot's processes
def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.Error):  # gone since the listing
            continue
    return sorted(out)


def marked_processes(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (``NAME=value``).

    Every descendant of a boot inherits its environment, also one that left the process group
    with setsid / setpgrp (vLLM's data-parallel supervisor does), which ``killpg`` misses.
    """
    name, _, value = marker.partition("=")
    me, out = os.getpid(), []
    # Another user's environment cannot be read: psutil gives None for it (ad_value).
    for proc in psutil.process_iter(["environ", "status"]):
        env = proc.info["environ"] or {}
        if proc.pid != me and env.get(name) == value \
                and proc.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(proc.pid)
    return sorted(out)


def kill_group(pgid: int, grace_s: float = 3.0, marker: str | None = None) -> list[int]:
    """SIGTERM, then SIGKILL, the whole group; return pids still alive afterwards.

    With ``marker`` (an environment entry unique to the boot), processes of the boot that
    left the group are signalled too.
    """
    def members() -> list[int]:
        found = set(group_members(pgid))
        if marker is not None:
            found |= set(marked_processes(marker))
        return sorted(found)

    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        alive = members()
        if not alive:
            return []
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        for pid in set(alive) - set(group_members(pgid)):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and members():
            time.sleep(0.05)
    return members()


# What a cancelled CI job, ``timeout`` or a closed terminal sends. Python's default for both
# ends the process on the spot (SIGINT already raises KeyboardInterrupt).
END_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def raise_on_end_signals(interrupt: Callable[[str], BaseException]) -> dict[int, Any]:
    """Make SIGTERM and SIGHUP raise ``interrupt(the signal's name)``, a KeyboardInterrupt.

    Python's default for SIGTERM ends the process without unwinding, so no ``finally`` would
    run: not the one that kills a boot's group (a session of its own, it would outlive the
    parent), not the one that writes a run's JSON. A KeyboardInterrupt is what pytest and the
    CLI already treat as "stop now". A signal the process ignores (nohup's SIGHUP) stays
    ignored. Signals can only be handled in the main thread; elsewhere nothing changes.
    Returns the handlers it replaced (for :func:`restore_signal_handlers`).
    """
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, _frame: Any) -> None:
        raise interrupt(signal.Signals(signum).name)

    return {sig: signal.signal(sig, handler) for sig in END_SIGNALS
            if signal.getsignal(sig) is not signal.SIG_IGN}


def restore_signal_handlers(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@contextmanager
def end_signals_raise(interrupt: Callable[[str], BaseException]) -> Iterator[None]:
    """:func:`raise_on_end_signals` for the ``with`` block only."""
    previous = raise_on_end_signals(interrupt)
    try:
        yield
    finally:
        restore_signal_handlers(previous)
