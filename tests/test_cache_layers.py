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

from document.evidence import CacheLayers, LayerObservation
from harness.cache_layers import observe_lines, summarise
from harness.logs.reader import read_log

DATA = Path(__file__).parent / "data"
PUBLIC = DATA / "logs" / "public"
# The reference study's logs, copied into the repository (tests/data/study).
REFERENCE = DATA / "study" / "figures" / "figure-rest" / "iterations" / "1"


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
        # every line cites where it is public: a published run, or vLLM's source at a commit
        assert entry["source"].startswith("https://github.com/"), entry["source"]
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


# ------------------------------------------------------------- real CPU boots, re-read
CPU_BOOTS = json.loads((DATA / "cache_layers" / "cpu-retained-state-boots.json").read_text())


def _cpu_boot(compile_cache: str, aot: str):
    return next(b for b in CPU_BOOTS["boots"] if b["compile_cache"] == compile_cache
                and b["aot"] == aot)


def _observe(boot):
    from document.evidence import Relocation
    from harness.cache_layers import observe_events, relocated

    before = boot["aot_cache_keys_before"] or []
    saved = [m.group(1) for e in boot["events"] for m in [__import__("re").search(
        r"torch_aot_compile/([0-9a-f]{64})/", e.get("msg") or "")] if m]
    after = list(dict.fromkeys(before + saved))
    layers = observe_events(boot["events"], platform=boot["platform"], compiled=True,
                            aot=boot["aot"] == "1", aot_keys_before=before,
                            aot_keys_after=after, cache_dir="/cache")
    if boot["relocation"]:
        # Both sides' key inputs read by this code: the building boot is the cold boot of
        # the same configuration in the same run.
        from harness.cache_layers import key_factors

        built = key_factors(_cpu_boot("cold", boot["aot"])["events"])
        where = Relocation.model_validate({**boot["relocation"], "built_key_factors": built,
                                           "seen_key_factors": layers.key_factors})
        layers = relocated(layers, where)
    return layers


def test_cpu_cold_boot_with_aot_saves_the_artifact_and_bundles_inductor():
    layers = _observe(_cpu_boot("cold", "1"))
    states = {k: v.state for k, v in layers.layers.items()}
    assert states["aot_artifact"] == "miss" and layers.layers["aot_artifact"].actions == ["saved"]
    assert states["vllm_compile_cache"] == "miss"  # it added its key folder
    # vLLM's AOT compile bundles Inductor's output in AOTAutograd's entry: no FX lookup.
    assert states["inductor_fx_graph"] == "not_applicable"
    assert layers.layers["aot_autograd"].counts == {"autograd_cache_miss": 1,
                                                    "autograd_cache_saved": 1}
    assert set(layers.key_factors) == {"env_hash", "config_hash", "inductor_factors",
                                       "model_hash"}
    assert layers.summary == "miss"


def test_cpu_cold_boot_without_aot_misses_inductors_fx_graph_cache():
    layers = _observe(_cpu_boot("cold", "0"))
    assert layers.layers["inductor_fx_graph"].counts == {"fxgraph_cache_miss": 1}
    assert layers.layers["aot_artifact"].state == "not_applicable"
    assert layers.layers["vllm_compile_cache"].state == "not_applicable"
    assert layers.summary == "miss"


def test_cpu_relocated_aot_boot_found_its_key_but_could_not_load_it():
    layers = _observe(_cpu_boot("relocated", "1"))
    aot = layers.layers["aot_artifact"]
    assert aot.state == "load_failure" and aot.actions == ["load_failed", "saved"]
    assert "finalize_loading" in aot.reason
    assert aot.reused is False and "none of vLLM's key inputs" in aot.key_differs[0]
    # The key folder vLLM computed at the other path is the one the copy held.
    assert layers.layers["vllm_compile_cache"].reused is True
    assert layers.relocation.built_key_factors == layers.relocation.seen_key_factors
    assert layers.relocation.seen_at != layers.relocation.built_at
    autograd = layers.layers["aot_autograd"]
    assert autograd.reused is False and "does not say which" in autograd.key_differs[0]
    assert layers.summary == "partial"


def test_cpu_relocated_boot_without_aot_reused_inductor_and_aotautograd():
    from document.boot_result import BootResult
    from harness.correctness import judge_compile_cache
    from harness.registry import expected_compile_cache

    boot = _cpu_boot("relocated", "0")
    layers = _observe(boot)
    for name in ("inductor_fx_graph", "aot_autograd"):
        assert (layers.layers[name].state, layers.layers[name].reused) == ("hit", True), name
    assert layers.summary == "hit"
    result = BootResult(state="measured", model="smollm2-135m", platform="cpu",
                        vllm_version="0.32.0", compile_cache="relocated",
                        compile_cache_observed=layers.summary,
                        evidence={"compile_cache_layers": layers.model_dump()})
    # Every layer reused and no load-failure reason: judged without one (this raised
    # TypeError in the real run).
    assert judge_compile_cache(result, expected_compile_cache("0.32.0", "cpu",
                                                              "relocated")) == []
