"""How much of the machine other processes took while a round booted: what makes a gate boot a
round again.

A boot on a 2-core machine uses both cores; another process that takes a core for a minute
slows the round it overlaps by tens of seconds, and one such round can leave a cell
undecided. ``OtherCpu`` samples every process's CPU time (``psutil``) while the round runs
and sums what the processes outside this one's tree (the gate, its pytest, the boot's
processes) used, in cores on average. The gate boots a round again where that is above
``BUSY_CORES``. Processes that start and end between two samples are missed: the figure is a
lower bound.
"""

from __future__ import annotations

import os
import threading
import time

import psutil

# Above a quarter of a core on average, taken by others during a boot, the round is booted
# again: set before any gate measured it, at a quarter of one of the two cores a boot uses.
# An idle machine measured 0.01-0.05 cores in the real gates since (each round's
# other_cpu_cores in coldstart.gate).
BUSY_CORES = 0.25
SAMPLE_S = 2.0


class OtherCpu:
    """A context manager: ``cores`` is the CPU other processes used while it was open."""

    def __init__(self, sample_s: float = SAMPLE_S):
        self.sample_s = sample_s
        self.cores = 0.0
        self._seen: dict[int, float] = {}
        self._used = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def _sample(self, first: bool = False) -> None:
        me = os.getpid()
        procs = {}
        for p in psutil.process_iter(["pid", "ppid", "cpu_times"]):
            info = p.info
            times = info.get("cpu_times")
            if times is not None:
                procs[info["pid"]] = (info["ppid"], times.user + times.system)
        mine = {me}
        for pid in procs:  # a process is ours when a parent on its chain is this one
            chain, cur = [], pid
            while cur in procs and cur not in mine and cur not in chain and cur > 1:
                chain.append(cur)
                cur = procs[cur][0]
            if cur in mine:
                mine.update(chain)
        for pid, (_, cpu) in procs.items():
            if pid in mine:
                continue
            before = self._seen.get(pid)
            if before is not None:
                self._used += max(0.0, cpu - before)
            elif not first:
                # started since the last sample: all it used is within the window
                self._used += cpu if cpu < self.sample_s * (os.cpu_count() or 1) else 0.0
            self._seen[pid] = cpu

    def _run(self) -> None:
        while not self._stop.wait(self.sample_s):
            try:
                self._sample()
            except (psutil.Error, OSError):  # a process gone mid-walk: next sample
                continue

    def __enter__(self) -> OtherCpu:
        self._t0 = time.monotonic()
        self._sample(first=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self._sample()
        except (psutil.Error, OSError):
            pass
        elapsed = max(time.monotonic() - self._t0, 1e-9)
        self.cores = round(self._used / elapsed, 3)
