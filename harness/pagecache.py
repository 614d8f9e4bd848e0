"""Put a set of files into a known page-cache state, and prove it.

``warm``: every byte read once, then residency measured with mincore(2) (>= 99 % required).
``evicted``: fsync, then posix_fadvise(POSIX_FADV_DONTNEED) on every file, then residency
measured (<= 1 % required). No root needed, nothing else on the machine is disturbed (unlike
``echo 3 > /proc/sys/vm/drop_caches``, which the reference study used).

The standard library has no mincore, so it is called through ctypes; util-linux ``fincore``
is not on every machine and its output is not stable across versions.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import statistics
import time
from collections.abc import Iterable
from pathlib import Path

WARM_MIN_RESIDENCY = 0.99
WARM_READS = 3
EVICTED_MAX_RESIDENCY = 0.01
_CHUNK = 8 << 20

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_MAP_FAILED = ctypes.c_void_p(-1).value


class PageCacheError(RuntimeError):
    """The requested page-cache state could not be reached (and so must not be measured)."""


def files_under(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()))
        elif p.is_file():
            out.append(p)
    return out


def resident_bytes(path: Path) -> tuple[int, int]:
    """(resident bytes, size) of one file, by mincore on a read-only shared mapping."""
    size = path.stat().st_size
    if size == 0:
        return 0, 0
    page = mmap.PAGESIZE
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, _MAP_FAILED):
            raise OSError(ctypes.get_errno(), f"mmap failed for {path}")
        try:
            pages = (size + page - 1) // page
            vec = (ctypes.c_ubyte * pages)()
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore failed for {path}")
            resident = sum(1 for b in vec if b & 1)
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)
    return min(resident * page, size), size


def residency(paths: Iterable[str | Path]) -> dict[str, float | int]:
    """Byte-weighted fraction of the files' contents in the page cache."""
    resident = total = 0
    files = files_under(paths)
    for f in files:
        r, s = resident_bytes(f)
        resident += r
        total += s
    return {"files": len(files), "bytes": total, "resident_bytes": resident,
            "residency": (resident / total) if total else 1.0}


def evict(paths: Iterable[str | Path]) -> None:
    for f in files_under(paths):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages cannot be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_all(paths: Iterable[str | Path]) -> int:
    n = 0
    buf = bytearray(_CHUNK)
    for f in files_under(paths):
        with open(f, "rb", buffering=0) as fh:
            while True:
                got = fh.readinto(buf)
                if not got:
                    break
                n += got
    return n


def available_memory_bytes() -> int | None:
    """MemAvailable of /proc/meminfo (what the kernel could give without swapping), or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def prepare(paths: Iterable[str | Path], mode: str) -> dict[str, float | int | str]:
    """Bring ``paths`` to page-cache ``mode`` ("warm" / "evicted") and return the evidence."""
    paths = list(paths)
    if mode == "warm":
        # Pages read once may be reclaimed before the check when memory is short (a busy CI
        # machine): reading again brings them back, and the reads taken are recorded.
        for reads in range(1, WARM_READS + 1):
            read_all(paths)
            state = residency(paths)
            if state["residency"] >= WARM_MIN_RESIDENCY:
                break
        else:
            available = available_memory_bytes()
            memory = ("unknown" if available is None else f"{available / 2**30:.1f} GiB")
            raise PageCacheError(
                f"page cache warm-up reached only {state['residency']:.1%} residency of "
                f"{state['bytes'] / 1e6:.1f} MB in {WARM_READS} reads (need >= "
                f"{WARM_MIN_RESIDENCY:.0%}): memory available to the page cache: {memory}")
        state = {**state, "reads": reads}
    elif mode == "evicted":
        evict(paths)
        state = residency(paths)
        if state["residency"] > EVICTED_MAX_RESIDENCY:
            raise PageCacheError(f"eviction left {state['residency']:.1%} of the files resident "
                                 f"(need <= {EVICTED_MAX_RESIDENCY:.0%}): files mapped by another "
                                 "process, or a filesystem that ignores posix_fadvise")
    else:
        raise ValueError(f"unknown page-cache mode {mode!r}: use 'warm' or 'evicted'")
    return {"mode": mode, **state}


def sequential_read_gbps(paths: Iterable[str | Path], mode: str,
                         repeats: int = 3) -> dict[str, float | int | list[float]]:
    """The storage floor: a plain sequential read of the same files in the same cache state.

    The median of ``repeats`` reads: a single read of a few hundred MB from the page cache
    lasts a few milliseconds and varies by 2x from one read to the next.
    """
    paths = list(paths)
    rates, n = [], 0
    for _ in range(repeats):
        prepare(paths, mode)
        start = time.monotonic_ns()
        n = read_all(paths)
        seconds = (time.monotonic_ns() - start) / 1e9
        rates.append(n / seconds / 1e9 if seconds else 0.0)
    if mode == "evicted":
        evict(paths)  # leave the files as the boot will need them
    return {"bytes": n, "gbps": statistics.median(rates), "gbps_each": rates}
