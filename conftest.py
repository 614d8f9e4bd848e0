"""Session set-up shared by tests/ and benchmarks/: a machine-hygiene check before timing.

Boot timings are only worth keeping on a quiet machine: another vLLM boot or server running
beside the session halves the CPU a 2-core box has. A session that boots vLLM (tests marked
``boot``, the benchmarks) refuses to start while one runs (``--allow-busy-machine`` opts out;
the header says what was found either way). A benchmark cell the pre-flight skips on this
machine (another platform, more GPUs) boots nothing, and is not counted.
"""

from __future__ import annotations

import os

import psutil
import pytest

_MARKERS = ("VLLM::", "vllm.entrypoints", "EngineCore", "VllmWorker")


def other_vllm_processes() -> list[str]:
    me = os.getpid()
    found = []
    # Another user's command line may be unreadable: psutil gives None for it.
    for proc in psutil.process_iter(["cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or ())
        if proc.pid != me and any(m in cmd for m in _MARKERS):
            found.append(f"{proc.pid}: {cmd.strip()[:80]}")
    return found


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--allow-busy-machine", action="store_true",
                     help="run even while other vLLM processes are running (timings suffer)")


def pytest_report_header(config: pytest.Config) -> list[str]:
    load1, _, _ = os.getloadavg()
    lines = [f"vllm-coldstart: {os.cpu_count()} CPUs, load average {load1:.2f}"]
    busy = other_vllm_processes()
    if busy:
        lines.append(f"vllm-coldstart: {len(busy)} other vLLM process(es) running: {busy[0]}")
    return lines


def _times_boots(item: pytest.Item) -> bool:
    # cannot_boot_here: a cell the pre-flight skips on this machine (benchmarks/preflight.py)
    if item.get_closest_marker("cannot_boot_here") is not None:
        return False
    return item.get_closest_marker("boot") is not None or "benchmarks" in item.path.parts


def pytest_collection_finish(session: pytest.Session) -> None:
    """Only sessions that boot vLLM (tests marked ``boot``, the benchmarks) are refused."""
    config = session.config
    if config.getoption("allow_busy_machine") or not any(map(_times_boots, session.items)):
        return
    busy = other_vllm_processes()
    if busy:
        raise pytest.UsageError(
            f"{len(busy)} other vLLM process(es) are running ({busy[0]}): timings would be "
            "disturbed. Stop them, or pass --allow-busy-machine.")
