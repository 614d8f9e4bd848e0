"""What the machine is, as far as a known defect or a cached reference depends on it.

Imports neither torch nor vLLM: read from /proc/cpuinfo and NVML.
"""

from __future__ import annotations

import hashlib
import json
import platform
from functools import lru_cache
from pathlib import Path
from typing import Any


@lru_cache(maxsize=1)
def cpu_identity() -> dict[str, Any]:
    """The CPU's vendor, model name, family / model numbers and ISA flags (first core).

    The flags decide which kernels torch and vLLM pick (``avx512_bf16``, ``amx_bf16``, ...),
    and with them the rounding of a bf16 forward pass.
    """
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break  # the first core's block is enough
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except OSError:
        pass
    return {"vendor": fields.get("vendor_id") or None,
            "model_name": fields.get("model name") or platform.processor() or None,
            "family": fields.get("cpu family"), "model": fields.get("model"),
            "flags": sorted(fields.get("flags", "").split())}


def cpu_fingerprint() -> str:
    """A short id of :func:`cpu_identity`: two machines with equal ids run the same kernels."""
    text = json.dumps(cpu_identity(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def gpus() -> list[dict[str, Any]]:
    """NVIDIA GPUs through NVML; an empty list where there are none (or no NVML)."""
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except Exception:
        return []
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(handle)
            out.append({"index": i, "name": name.decode() if isinstance(name, bytes) else name,
                        "memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total),
                        "driver": driver.decode() if isinstance(driver, bytes) else driver})
        return out
    finally:
        pynvml.nvmlShutdown()


def gpu_models() -> list[str]:
    """The NVIDIA GPUs' names; empty where there are none (or no NVML)."""
    return [g["name"] for g in gpus()]
