"""coldstart overhead's verdict, on numbers (no boot): exit 1 above the 1.02 target."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import overhead
from coldstart.__main__ import main as coldstart
from coldstart.commands import overhead as overhead_command

# Ready times of the five pairs in docs/results-cpu.md (eager SmolLM2-135M, this machine).
MEASURED = [(30.84, 30.62), (31.67, 30.88), (30.04, 32.46), (32.47, 32.26), (31.29, 31.29)]


def test_the_median_ratio_decides_not_a_single_pair() -> None:
    ratios = [i / b for i, b in MEASURED]
    median, ok = overhead.median_within_target(ratios)
    assert median == pytest.approx(1.0065, abs=1e-4) and ok
    assert max(ratios) > overhead.TARGET_RATIO  # one pair above: still within
    assert overhead.median_within_target([1.0, 1.03, 1.04]) == (1.03, False)
    assert overhead.median_within_target([1.02]) == (1.02, True)  # the target itself passes


@pytest.mark.parametrize("cost, code", [(1.0, 0), (1.03, 1)])
def test_main_exits_1_when_the_probes_cost_more_than_the_target(monkeypatch, tmp_path: Path,
                                                                cost: float, code: int) -> None:
    # The measured pairs, with the instrumented boots made `cost` times slower.
    ready = {f"{i}-{'probe' if inst else 'bare'}": (a * cost if inst else b)
             for i, (a, b) in enumerate(MEASURED) for inst in (True, False)}
    ready["discarded"] = 40.0

    def fake_boot(spec):
        return SimpleNamespace(ready_s=ready[Path(spec.work_dir).name], error=None)

    monkeypatch.setattr(overhead_command, "resolve_model", lambda name: (name, tmp_path))
    monkeypatch.setattr(overhead, "run_boot", fake_boot)
    out = tmp_path / "pairs.json"
    assert coldstart(["overhead", "--pairs", "5", "--out", str(out)]) == code
    assert ('"within_target": true' in out.read_text()) == (code == 0)
