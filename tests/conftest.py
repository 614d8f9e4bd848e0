"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def reference_dir() -> Path | None:
    """The reference study's published data: ``../shared/reference`` beside the clone (CI)."""
    candidate = REPO_ROOT.parent / "shared" / "reference" / "vllm-startup-profiler"
    return candidate if candidate.is_dir() else None


@pytest.fixture
def study_reference() -> Path:
    """The reference study's folder, or a skip naming where it was looked for."""
    found = reference_dir()
    if found is None:
        pytest.skip(f"reference data not found at {REPO_ROOT.parent / 'shared' / 'reference'} "
                    "(CI keeps ../shared beside the clone)")
    return found
