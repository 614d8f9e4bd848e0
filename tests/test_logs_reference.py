"""The log reader against the reference study's raw logs and its published numbers.

The study ran vLLM 0.10.1.1 on an H100 (figures/figure-rest, 22 models, millisecond
timestamps) and on an A100 (experiments/.../batch_size, whole-second timestamps, EngineCore
spawned as a separate interpreter), and published per-model values per column in each folder's
``comparison_results.json``. Reading the same logs must give the same values.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from document import boot_result
from harness.logs.reader import read_log
from harness.study_columns import (
    STUDY_COLUMNS,
    STUDY_PHASE_MAP,
    agreement,
    read_reference,
    study_phases,
)

H100 = "figures/figure-rest/iterations/1"
A100 = "experiments/A100/examples/batch_size/iterations/1"
# The totals are published too, but are sums of the phase columns.
PHASE_COLUMNS = tuple(c for c in STUDY_COLUMNS if c not in ("total_time", "actual_total_time"))


def _published_count(folder: Path, columns: tuple[str, ...]) -> int:
    reference = read_reference(folder / "comparison_results.json")
    return sum(values.get(c) is not None for values in reference.values() for c in columns)


def _report(result) -> str:
    return "\n".join(f"{log} {col}: published {want}, read {got}"
                     for log, col, want, got in result.misses[:20])


@pytest.mark.parametrize("columns", [STUDY_COLUMNS, PHASE_COLUMNS], ids=["all", "phases"])
def test_h100_logs_agree_with_published_values(study_reference: Path, columns) -> None:
    folder = study_reference / H100
    result = agreement(folder, tolerance_s=0.05, columns=columns)
    # Every non-null published value is compared: 22 models x 17 columns (the uncompiled
    # "graph_compile_general_shape" is null on this cached run).
    assert result.compared == _published_count(folder, columns) >= 22 * (len(columns) - 1)
    assert result.fraction >= 0.95, _report(result)


def test_a100_whole_second_spawned_logs_agree(study_reference: Path) -> None:
    # Whole-second timestamps and a spawned EngineCore that repeats the platform lines: the
    # study's "latest start before the last end" spans are what it published.
    folder = study_reference / A100
    result = agreement(folder, tolerance_s=0.05)
    assert result.compared == _published_count(folder, STUDY_COLUMNS) > 0
    assert result.fraction >= 0.95, _report(result)


def test_qwen_05b_spot_values(study_reference: Path) -> None:
    result = read_log(study_reference / H100 / "output_model_qwen-0.5b.txt")
    assert result.state == "measured" and result.source == "log"
    assert (result.model, result.vllm_version, result.platform) == ("qwen-0.5b", "0.10.1.1", "cuda")
    assert result.compile_cache_observed == "hit"
    assert result.evidence.facts["weights_gib"] == pytest.approx(0.9009)
    assert len(result.evidence.facts["cuda_graph_sizes"]) == 35

    study = study_phases(result)
    # Published: kv 1.579 = 9.23 (memory profiling) - 4.29 (torch.compile) - 3.361 (cache load)
    assert study["kv_cache_profiling"] == pytest.approx(1.579, abs=1e-6)
    assert study["framework_bootstrap"] == pytest.approx(7.957, abs=1e-6)
    assert study["torch.compile"] == pytest.approx(4.29)
    assert study["actual_total_time"] == pytest.approx(21.646, abs=1e-6)

    phases = result.phases
    # Ours: the cache load is part of torch_compile, and KV profiling keeps the allocation.
    assert phases["torch_compile"] == pytest.approx(4.29 + 3.361)
    assert phases["kv_cache_profiling"] == pytest.approx(10.61 - 4.29 - 3.361 - 0.94)
    assert phases["cuda_graph_capture"] == pytest.approx(0.94)
    assert phases["model_loading"] == pytest.approx(1.810252)
    assert phases["tokenizer_init"] == pytest.approx(0.26)
    assert result.subphases["torch_compile.compiled_graph_load"] == pytest.approx(3.361)
    assert result.subphases["kv_cache_profiling.memory_profiling"] == pytest.approx(1.579)


def test_phases_partition_the_init_engine_window(study_reference: Path) -> None:
    # torch_compile + kv_cache_profiling + cuda_graph_capture is vLLM's "init engine" time,
    # each second counted once, for every model.
    for log in sorted((study_reference / H100).glob("output_model_*.txt")):
        result = read_log(log)
        window = sum(result.phases[p] for p in
                     ("torch_compile", "kv_cache_profiling", "cuda_graph_capture"))
        assert window == pytest.approx(result.log_durations["init_engine_s"], abs=1e-6), log.name
        assert result.evidence.unread == [], log.name


def test_every_published_file_follows_the_mapping(study_reference: Path) -> None:
    # Iterations 2..5, the uncached run and the figure averages ship without their logs here;
    # their columns must still obey the compositions STUDY_PHASE_MAP states.
    files = sorted(study_reference.rglob("*comparison_results.json"))
    assert len(files) >= 10
    for path in files:
        data = json.loads(path.read_text())["data"]
        for i in range(len(next(iter(data.values())))):
            col = {k: v[i] for k, v in data.items()}

            def z(name: str) -> float:
                return col[name] or 0.0

            where = f"{path.relative_to(study_reference)}[{i}]"
            assert math.isclose(z("framework_bootstrap"), z("detect_platform") + z("llm_imports")
                                + z("get_model_info") + z("worker_init"), abs_tol=0.01), where
            assert math.isclose(z("total_time"), z("framework_bootstrap") + z("model_loading")
                                + z("init_engine") + z("tokenizer_init"), abs_tol=0.01), where
            # The study's torch.compile is Dynamo + Inductor; the cache load stays outside it.
            assert math.isclose(z("torch.compile"), z("dynamo_transform_time")
                                + z("graph_compile_general_shape"), abs_tol=0.03), where


def test_mapping_names_every_published_column_and_our_phases(study_reference: Path) -> None:
    published = json.loads((study_reference / H100 / "comparison_results.json").read_text())
    assert set(published["data"]) == set(STUDY_COLUMNS)
    mentioned = " ".join(c.ours for c in STUDY_PHASE_MAP)
    for name in boot_result.PHASE_NAMES:
        assert name in mentioned
