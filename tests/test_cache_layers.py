"""Each retained-state layer on its own (harness.cache_layers), from recorded logs.

GPU lines: vLLM's AOT loads and piecewise-graph loads from the public corpus
(tests/data/logs/public, each log's source URL in its manifest), vLLM 0.10.1.1's Inductor
handle loads from the reference study's logs, and StartupPlan lines
(tests/data/cache_layers/startup-plan-lines.json, each with its source).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cache_layers import CacheLayers, LayerObservation, observe_lines, summarise
from harness.logs import read_log

DATA = Path(__file__).parent / "data"
PUBLIC = DATA / "logs" / "public"
REFERENCE = Path("/work/shared/reference/vllm-startup-profiler/figures/figure-rest/iterations/1")


def _manifest_url(name: str) -> str:
    manifest = json.loads((PUBLIC / "manifest.json").read_text())
    return next(e["url"] for e in manifest["logs"] if e["file"] == name)


def test_gpu_aot_loads_on_two_ranks_read_as_hits():
    # noonghunna/club-3090#142: a TP=2 warm boot that loaded both ranks' AOT artifacts and
    # the piecewise graphs from vLLM's cache.
    name = "041-club3090-aot-cache-hit-tp2.log"
    assert _manifest_url(name).endswith("club-3090/issues/142")
    layers = read_log(PUBLIC / name).evidence.compile_cache_layers
    aot, graphs = layers.layers["aot_artifact"], layers.layers["vllm_compile_cache"]
    assert (aot.state, aot.actions) == ("hit", ["loaded"])
    assert [e for e in aot.evidence if "rank_0_0/model" in e] and \
        [e for e in aot.evidence if "rank_1_0/model" in e]
    assert graphs.state == "hit" and "from the cache, took 5.958 s" in graphs.evidence[0]
    assert layers.summary == "hit"


def test_gpu_aot_save_reads_as_a_miss_and_the_encoder_load_as_a_hit():
    saved = read_log(PUBLIC / "040-club3090-aot-save-warmup.log").evidence.compile_cache_layers
    assert saved.layers["aot_artifact"].state == "miss"
    assert saved.layers["aot_artifact"].actions == ["saved"]
    assert saved.summary == "miss"
    # vllm-project/vllm#46389 (HDCharles): an encoder model's AOT artifact loaded on 2 ranks.
    assert _manifest_url("042-humming-aot-load-encoder.log").endswith("pull/46389")
    loaded = read_log(PUBLIC / "042-humming-aot-load-encoder.log").evidence.compile_cache_layers
    assert loaded.layers["aot_artifact"].state == "hit"
    assert loaded.layers["vllm_compile_cache"].state == "hit"


@pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference study's logs are not here")
def test_v0101_reference_log_reads_inductor_handle_loads_as_fx_graph_hits():
    # vLLM 0.10.1.1 on an H100 (the study's yi-6b log): DEBUG "Directly load the N-th graph
    # ... from inductor via handle" per graph, then "Directly load the compiled graph(s)".
    layers = read_log(REFERENCE / "output_model_yi-6b.txt").evidence.compile_cache_layers
    assert layers.layers["inductor_fx_graph"].state == "hit"
    assert layers.layers["vllm_compile_cache"].state == "hit"
    assert layers.layers["aot_artifact"].state == "unknown"  # no AOT in 0.10
    assert layers.summary == "hit"


def test_startup_plan_lines_saved_applied_rejected():
    data = json.loads((DATA / "cache_layers" / "startup-plan-lines.json").read_text())
    state = {"saved": "miss", "applied": "hit", "rejected": "load_failure"}
    for entry in data["lines"]:
        plan = observe_lines([entry["line"]], platform="cuda").layers["startup_plan"]
        assert (plan.state, plan.actions) == (state[entry["expect"]], [entry["expect"]]), entry
        if entry["expect"] == "rejected":
            assert plan.reason and plan.reason in entry["line"]
    # A boot that saves its plan and a later one that applies it, as recorded.
    recorded = [e["line"] for e in data["lines"] if e["kind"] == "recorded"]
    assert observe_lines(recorded[1:], platform="cuda").layers["startup_plan"].state == "hit"


def test_startup_plan_does_not_apply_on_cpu_and_is_no_compile_cache():
    layers = observe_lines([], platform="cpu")
    assert layers.layers["startup_plan"].state == "not_applicable"
    assert "GPU worker" in layers.layers["startup_plan"].reason
    assert layers.layers["triton_autotune"].state == "not_applicable"
    applied = observe_lines(["Applying persisted startup plan (fingerprint faaa0e6a718763db) "
                             "... Memory profiling will be skipped"], platform="cuda")
    assert applied.summary == "unknown"  # a plan is not a compile cache


def _layers(**states: str) -> CacheLayers:
    return CacheLayers(layers={k: LayerObservation(state=v) for k, v in states.items()})


@pytest.mark.parametrize("states, summary", [
    ({"aot_artifact": "load_failure", "inductor_fx_graph": "hit"}, "partial"),
    ({"aot_artifact": "not_applicable", "inductor_fx_graph": "hit"}, "hit"),
    ({"aot_artifact": "miss", "inductor_fx_graph": "miss"}, "miss"),
    ({"aot_artifact": "load_failure", "inductor_fx_graph": "miss"}, "load_failure"),
    ({"aot_artifact": "not_applicable", "inductor_fx_graph": "not_applicable"},
     "not_applicable"),
    ({"aot_artifact": "unknown"}, "unknown"),
])
def test_summary_never_hides_a_layer_that_hit(states, summary):
    assert summarise(_layers(**states)) == summary
