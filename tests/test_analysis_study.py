"""The reference study's data as BootResults and features (analysis.study)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.study import (
    STUDY_HOLDOUT,
    STUDY_PHASE_COLUMNS,
    read_study,
    study_document,
    study_model_name,
)
from coldstart.__main__ import main as coldstart
from document import read_results
from document.boot_result import PHASE_NAMES, SchemaError
from tests.conftest import REPO_ROOT, STUDY_DIR


@pytest.fixture(scope="module")
def figure_rest() -> Path:
    return STUDY_DIR / "figures" / "figure-rest"


@pytest.fixture(scope="module")
def study(figure_rest: Path):
    return read_study(figure_rest)


def test_mapping_is_derived_from_the_log_readers_map() -> None:
    # harness.study_columns.STUDY_PHASE_MAP is the one source; this is what it says for our phases.
    assert STUDY_PHASE_COLUMNS["framework_bootstrap"] == (
        "detect_platform", "llm_imports", "get_model_info", "worker_init")
    assert STUDY_PHASE_COLUMNS["model_loading"] == ("model_loading",)
    assert STUDY_PHASE_COLUMNS["torch_compile"] == (
        "dynamo_transform_time", "graph_compile_general_shape", "graph_compile_cached")
    assert STUDY_PHASE_COLUMNS["kv_cache_profiling"] == ("kv_cache_profiling",)
    assert STUDY_PHASE_COLUMNS["cuda_graph_capture"] == ("graph_capturing",)
    assert STUDY_PHASE_COLUMNS["tokenizer_init"] == ("tokenizer_init",)
    assert STUDY_PHASE_COLUMNS["torch_compile.compiled_graph_load"] == ("graph_compile_cached",)
    assert set(PHASE_NAMES) <= set(STUDY_PHASE_COLUMNS)


def test_model_names() -> None:
    assert study_model_name("output_model_gemma-7b.txt") == "gemma-7b"
    assert study_model_name("output_model_granite4.0-h-3b_no-enable-prefix-caching_.txt") == \
        "granite4.0-h-3b"


def test_records(study, figure_rest: Path) -> None:
    assert len(study.results) == 22
    assert set(STUDY_HOLDOUT) <= {r.model for r in study.results}
    assert all(len(v) == 5 for v in study.rounds.values())
    raw = json.loads((figure_rest / "avg_comparison_results.json").read_text())["data"]
    for i, r in enumerate(study.results):
        assert r.state == "measured" and r.platform == "cuda" and r.vllm_version == "0.10.1.1"
        assert r.compile_cache == "warm" and r.compile_cache_observed == "hit"
        # The six phases are the study's total; the residual closes the wall time.
        assert r.phase_sum_s() == pytest.approx(raw["total_time"][i], abs=1e-6)
        assert r.phase_sum_s() + r.residual_s == pytest.approx(r.wall_s)
        assert r.wall_s == raw["actual_total_time"][i]


def test_features_use_the_logged_weight_bytes(study) -> None:
    gemma = study.features["gemma-7b"]
    # "Model loading took 15.9067 GiB": 8.54 B parameters in bf16, not the nominal 7 B.
    assert gemma.weight_bytes == round(15.9067 * 2**30)
    assert gemma.params == pytest.approx(8.54e9, rel=1e-3)
    assert gemma.nominal_params == 7e9
    oss = study.features["gpt-oss-20b"]
    assert oss.quantization == "sub-16-bit" and oss.params == 21e9 and "params" in oss.estimated
    assert all(f.capture_sizes == 35 for f in study.features.values())


def test_hybrid_models_are_known_from_the_logs_architecture_line(study) -> None:
    # models_config.json has no such field; "Resolved architecture:
    # GraniteMoeHybridForCausalLM" in the two granite4.0-h logs says it.
    hybrid = sorted(name for name, f in study.features.items() if f.hybrid)
    assert hybrid == ["granite4.0-h-32b", "granite4.0-h-3b"]
    assert study.features["granite4.0-h-32b"].trait_kinds() == ["MoE", "hybrid Mamba"]
    assert study.features["granite3.3-8b-instruct"].trait_kinds() == []


def test_document_round_trips_through_read_results(study, tmp_path: Path) -> None:
    from document import write_run

    p = tmp_path / "study.json"
    write_run(study_document(study), p)
    medians = read_results(p)
    assert [r.model for r in medians] == [r.model for r in study.results]
    assert len(read_results(p, all_rounds=True)) == 22 * 5


def test_cli(figure_rest: Path, tmp_path: Path) -> None:

    out, feats = tmp_path / "s.json", tmp_path / "f.json"
    assert coldstart(["study", str(figure_rest), "-o", str(out), "--features-out", str(feats)]) == 0
    assert len(json.loads(out.read_text())["benchmarks"]) == 22
    assert "gemma-7b" in json.loads(feats.read_text())
    # the module entry point answers bad input with one line, through run_cli
    for argv, words in (([str(tmp_path / "missing"), "-o", str(out)], "no such"),
                        ([str(figure_rest), "-o", str(tmp_path / "nodir" / "s.json")],
                         f"folder {tmp_path / 'nodir'} does not exist"),
                        ([str(figure_rest)], "the following arguments are required: -o")):
        run = subprocess.run([sys.executable, "-m", "coldstart", "study", *argv], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
        assert run.stderr.startswith("coldstart study: error: ") and words in run.stderr


def test_each_figure_names_the_node_it_ran_on(study, figure_rest: Path, tmp_path: Path,
                                              monkeypatch) -> None:
    """figures/README.md: n1 (H100 NVL) for all but figure 10's second GPU (n2, L40S) and
    figure 11's second CPU (n3); the result document says so, and a compare refuses the pair."""
    from analysis.compare import compare_runs
    from document import write_run

    figures = figure_rest.parent
    assert study.machine["gpu"] == "H100 NVL" and study.machine["node"] == "n1"
    l40s = read_study(figures / "figure-10" / "gpu1")
    n3 = read_study(figures / "figure-11" / "cpu1")
    assert (l40s.machine["node"], l40s.machine["gpu"]) == ("n2", "L40S")
    assert (n3.machine["node"], n3.machine["cpu_count"]) == ("n3", 96)
    # Told from the resolved folder: "." inside figure-10/gpu1 is n2 as well.
    monkeypatch.chdir(figures / "figure-10" / "gpu1")
    assert read_study(".").machine["node"] == "n2"
    assert read_study("../gpu1").machine["gpu"] == "L40S"
    write_run(study_document(l40s), tmp_path / "n2.json")
    write_run(study_document(study), tmp_path / "n1.json")
    doc = json.loads((tmp_path / "n2.json").read_text())
    assert doc["machine_info"]["gpu"] == "L40S" and doc["machine_info"]["node"] == "study-n2"
    # Two GPUs: the verdict cannot be the release's, so it is inconclusive (exit 3), and
    # compare's document says which fact differs.
    out = tmp_path / "c.json"
    assert compare_runs(tmp_path / "n1.json", tmp_path / "n2.json", json_path=out) == 3
    report = json.loads(out.read_text())
    assert report["metadata_disagreement"]["gpu"] == ["H100 NVL", "L40S"]
    assert report["verdict"]["reasons"][0].startswith("the machines differ: ")


def test_model_facts_from_another_figures_logs(figure_rest: Path) -> None:
    """Figure 10 publishes averages without logs: its features are nominal (estimated) unless
    the logs of figure-rest, the same model files, are given."""
    gpu1 = figure_rest.parent / "figure-10" / "gpu1"
    nominal = read_study(gpu1).features["yi-9b"]
    logged = read_study(gpu1, logs=figure_rest).features["yi-9b"]
    assert "weight_bytes" in nominal.estimated and "weight_bytes" not in logged.estimated
    assert nominal.weight_bytes == 2 * nominal.params
    # "Model loading took 16.4471 GiB" in figure-rest's yi-9b log: 8.83 B parameters, not 9.
    assert logged.weight_bytes == read_study(figure_rest).features["yi-9b"].weight_bytes
    assert logged.params == pytest.approx(8.83e9, rel=0.01)
    with pytest.raises(SchemaError, match="no study boot logs"):
        read_study(gpu1, logs=gpu1)


def test_the_study_data_is_the_snapshot_its_manifest_names() -> None:
    """tests/data/study is kept byte for byte: every file MANIFEST.sha256 lists, with its
    SHA-256, and no file it does not list (a copy that lost or gained a log would change what
    the log-reader and fit tests check without a word)."""
    import hashlib

    manifest = {}
    for line in (STUDY_DIR / "MANIFEST.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        manifest[name] = digest
    kept = {"README.md", "MANIFEST.sha256", ".gitattributes"}
    present = {p.relative_to(STUDY_DIR).as_posix() for p in STUDY_DIR.rglob("*")
               if p.is_file()} - kept
    assert present == set(manifest)
    for name, digest in manifest.items():
        assert hashlib.sha256((STUDY_DIR / name).read_bytes()).hexdigest() == digest, name
    assert len(manifest) == 58
