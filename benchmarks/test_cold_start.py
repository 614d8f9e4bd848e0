"""One cell of the matrix: boot real vLLM, in isolation, and assert on its phases.

    pytest benchmarks/ --benchmark-json out.json [--matrix smoke|scaling|full] [--loaders ...]
"""

from __future__ import annotations

import statistics

import pytest

from benchmarks.matrix import Cell
from harness import pagecache
from harness.boot import BootError, BootSpec, launch_boot, prepare_boot
from harness.registry import LOADER_CLASSES, expected_answer, expected_compile_cache
from harness.schema import BootResult

MAX_RESIDUAL_SHARE = 0.05


def _spec(cell: Cell, coldstart) -> BootSpec:
    from fixtures.catalog import CATALOG, ensure_model

    path = ensure_model(cell.model)
    tensorizer_uri = None
    if cell.loader == "tensorizer":
        from fixtures.tensorized import ensure_tensorized

        tensorizer_uri = ensure_tensorized(path)
    real = CATALOG[cell.model].kind == "real"
    return BootSpec(model=cell.model, model_path=path, loader=cell.loader,
                    compile_cache=cell.compile_cache, page_cache=cell.page_cache,
                    entrypoint=cell.entrypoint, timeout_s=coldstart.boot_timeout,
                    runai_concurrency=coldstart.runai_concurrency,
                    tensorizer_uri=tensorizer_uri,
                    # Random weights answer nonsense; the real model must answer right.
                    expect_in_answer="Paris" if real else None)


def _storage_floor(spec: BootSpec, coldstart) -> dict:
    """A plain sequential read of the same weight files in the same page-cache state."""
    key = (str(spec.model_path), spec.loader, spec.page_cache)
    if key not in coldstart.floors:
        suffix = ".tensors" if spec.loader == "tensorizer" else ".safetensors"
        files = [f for f in spec.weight_files() if f.suffix == suffix]
        coldstart.floors[key] = pagecache.sequential_read_gbps(files, spec.page_cache)
    return coldstart.floors[key]


def _median_round(rounds: list[BootResult]) -> BootResult:
    measured = [r for r in rounds if r.state == "measured"]
    if not measured:
        return rounds[-1]
    walls = sorted(r.wall_s for r in measured)
    target = statistics.median_low(walls)
    return next(r for r in measured if r.wall_s == target)


def test_cold_start(benchmark, coldstart, model, loader, compile_cache, page_cache, entrypoint):
    cell = Cell(model, loader, compile_cache, page_cache, entrypoint)
    if cell.id in coldstart.resumed:
        pytest.skip(f"measured in {coldstart.config.getoption('resume')} (--resume)")
    try:
        spec = _spec(cell, coldstart)
    except BootError as exc:
        pytest.fail(f"cannot boot this cell: {exc}", pytrace=False)
    floor = _storage_floor(spec, coldstart)
    rounds: list[BootResult] = []

    def setup():
        prepared = prepare_boot(spec)
        if isinstance(prepared, BootResult):  # the page-cache state could not be reached
            rounds.append(prepared)
            pytest.skip(prepared.skip_reason)
        return (prepared,), {}

    def boot(prepared):
        result = launch_boot(prepared)
        rounds.append(result)
        return result

    benchmark.pedantic(boot, setup=setup, rounds=coldstart.rounds, iterations=1)
    result = _median_round(rounds)
    weights = result.evidence.get("weights", {})
    if weights.get("load_gbps") and floor.get("gbps"):
        weights["storage_floor_gbps"] = floor["gbps"]
        weights["fraction_of_floor"] = weights["load_gbps"] / floor["gbps"]
    benchmark.extra_info.update(result.model_dump(mode="json"))
    benchmark.extra_info["rounds"] = [r.model_dump(mode="json") for r in rounds]
    benchmark.extra_info["storage_floor"] = floor
    coldstart.record(cell, result)

    # -- the assertions every cell makes
    assert result.state == "measured", f"boot {result.state}: {result.error}\n{result.log_tail}"
    wall = result.wall_s
    assert abs(result.phase_sum_s() + result.residual_s - wall) <= 1e-6 * max(wall, 1.0)
    assert result.residual_s <= MAX_RESIDUAL_SHARE * wall, (
        f"residual {result.residual_s:.2f} s is {result.residual_s / wall:.1%} of the boot "
        f"({result.evidence.get('residual_parts_s')}): a phase boundary moved in this vLLM")
    for name in ("framework_bootstrap", "tokenizer_init", "model_loading", "kv_cache_profiling"):
        assert result.phases[name] and result.phases[name] > 0, f"{name}: {result.phase_notes}"
    if compile_cache == "off":
        assert result.phases["torch_compile"] is None
    else:
        assert result.phases["torch_compile"] and result.phases["torch_compile"] > 0
    if result.platform != "cuda":
        assert result.phase_notes["cuda_graph_capture"].startswith("not applicable")

    # the loader the cell asked for is the loader that ran
    ran = " ".join(result.evidence.get("loader_targets", []))
    assert LOADER_CLASSES[loader] in ran, f"asked for {loader}, probes saw {ran!r}"

    # the page cache was in the state the cell names when the boot started
    residency = result.evidence["page_cache"]["residency"]
    if page_cache == "warm":
        assert residency >= pagecache.WARM_MIN_RESIDENCY
    else:
        assert residency <= pagecache.EVICTED_MAX_RESIDENCY

    # the compile cache did what this vLLM release is known to do (see the registry's table)
    expected = expected_compile_cache(result.vllm_version, result.platform, compile_cache)
    assert result.compile_cache_observed == expected.observed, (
        f"compile cache {result.compile_cache_observed!r}, expected {expected.observed!r} "
        f"for vLLM {result.vllm_version} on {result.platform}: {expected.reason}")

    answer = result.evidence.get("answer")
    if answer is not None:
        expected_ans = expected_answer(result.vllm_version, result.platform, answer["compiled"],
                                       answer["dtype"])
        assert answer["correct"] == expected_ans.correct, (
            f"answer {answer['text']!r}: expected correct={expected_ans.correct} for vLLM "
            f"{result.vllm_version} on {result.platform}: {expected_ans.reason}")

    if entrypoint == "serve":
        assert result.ready_s and result.ttft_s is not None, "serve: no ready or first token"
    assert not result.evidence.get("survivors"), "processes of the boot outlived it"

