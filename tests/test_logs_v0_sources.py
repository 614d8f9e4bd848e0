"""The V0 log lines the reader's tests use, checked against the releases' own source where it
is unpacked on disk (not in the analysis-alone list: without the wheels it skips, saying so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_logs_versions import V0_SOURCE_PHRASES


@pytest.mark.parametrize("release", sorted(V0_SOURCE_PHRASES))
def test_v0_phrases_are_in_the_release_source(release: str) -> None:
    """Where COLDSTART_V0_SOURCES names a folder of unpacked wheels (``<folder>/<release>/vllm``,
    e.g. from ``pip download vllm==0.6.0 --no-deps --only-binary :all:`` and unzip), every
    phrase the logs above use is in the file of that release it is said to come from."""
    import os

    folder = os.environ.get("COLDSTART_V0_SOURCES")
    root = Path(folder) / release / "vllm" if folder else None
    if root is None or not root.is_dir():
        pytest.skip(f"no unpacked vllm {release} wheel (set COLDSTART_V0_SOURCES)")
    for relpath, phrase in V0_SOURCE_PHRASES[release]:
        assert phrase in (root / relpath).read_text(), f"{release} {relpath}: {phrase!r}"
