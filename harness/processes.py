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
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

from harness.schema import PHASE_NAMES, ProcessDeath
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
