"""harness.pagecache on real files: real reads, real posix_fadvise eviction, real mincore.

Memory pressure is what the warm-up must survive (pages read once and reclaimed before the
residency check: a CI run skipped its one real boot on it); it is stood in for by evicting the
files right after a read, which is what reclaim does to them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import pagecache


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "model"
    folder.mkdir()
    for name, size in (("model.safetensors", 8 << 20), ("config.json", 800)):
        (folder / name).write_bytes(os.urandom(size))
    pagecache.evict([folder])
    if pagecache.residency([folder])["residency"] > pagecache.EVICTED_MAX_RESIDENCY:
        pytest.skip(f"{tmp_path} keeps files resident whatever posix_fadvise says (tmpfs?): "
                    "reclaim cannot be stood in for here")
    return [folder]


def test_a_warm_up_reads_every_byte_once_and_says_so(files) -> None:
    state = pagecache.prepare(files, "warm")
    assert state["residency"] >= pagecache.WARM_MIN_RESIDENCY
    assert state["reads"] == 1 and state["files"] == 2 and state["bytes"] == (8 << 20) + 800


def test_pages_reclaimed_after_the_first_read_are_read_again(files, monkeypatch) -> None:
    reads = []
    real_read_all = pagecache.read_all

    def read_then_reclaimed(paths):
        n = real_read_all(paths)
        reads.append(n)
        if len(reads) == 1:
            pagecache.evict(paths)
        return n

    monkeypatch.setattr(pagecache, "read_all", read_then_reclaimed)
    state = pagecache.prepare(files, "warm")
    assert state["reads"] == 2 == len(reads)
    assert state["residency"] >= pagecache.WARM_MIN_RESIDENCY


def test_pages_never_kept_skip_with_the_residency_and_the_memory_available(
        files, monkeypatch) -> None:
    real_read_all = pagecache.read_all

    def always_reclaimed(paths):
        n = real_read_all(paths)
        pagecache.evict(paths)
        return n

    monkeypatch.setattr(pagecache, "read_all", always_reclaimed)
    with pytest.raises(pagecache.PageCacheError) as caught:
        pagecache.prepare(files, "warm")
    message = str(caught.value)
    assert f"in {pagecache.WARM_READS} reads" in message
    assert "0.0% residency of 8.4 MB" in message
    assert "memory available to the page cache:" in message and "GiB" in message


def test_available_memory_is_the_kernels_figure() -> None:
    available = pagecache.available_memory_bytes()
    if not Path("/proc/meminfo").exists():
        assert available is None
        return
    total = int(next(line for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:")).split()[1]) * 1024
    assert 0 < available <= total
