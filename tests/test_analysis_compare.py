"""analysis.compare: noise floor, Mann-Whitney, n=1 never significant, metadata, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis._cli import run_cli
from analysis.compare import compare_results
from analysis.compare import main as compare_main
from harness.schema import BootResult, benchmark_entry, new_document, write_document

MACHINE = {"cpu": {"brand_raw": "AMD EPYC 9354 32-Core Processor", "count": 32},
           "system": "Linux", "machine": "x86_64"}
BASE_PHASES = {"framework_bootstrap": 8.0, "tokenizer_init": 0.3, "model_loading": 20.0,
               "torch_compile": 9.0, "kv_cache_profiling": 1.6, "cuda_graph_capture": 1.2}


def _doc(path: Path, *, rounds: int, version: str, slower: dict[str, float] | None = None,
         machine: dict | None = None, fail: bool = False) -> Path:
    entries, unrecorded = [], []
    for model in ("a", "b"):
        boots = []
        for i in range(rounds):
            jitter = 0.02 * ((i * 7) % 5 - 2)  # deterministic noise of +-0.04 s
            phases = {k: v + jitter + (slower or {}).get(k, 0.0) if model == "a" else v + jitter
                      for k, v in BASE_PHASES.items()}
            boots.append(BootResult(state="measured", model=model, platform="cuda",
                                    vllm_version=version, loader="safetensors",
                                    compile_cache="warm", phases=phases))
        if fail and model == "b":
            unrecorded.append(BootResult(state="failed", model="b", platform="cuda",
                                         vllm_version=version, loader="safetensors",
                                         compile_cache="warm", error="CUDA OOM"))
            continue
        entries.append(benchmark_entry(boots[len(boots) // 2], name=f"boot[{model}]",
                                       params={"model": model}, rounds=boots))
    write_document(new_document(entries, unrecorded=unrecorded,
                                machine_info=machine or MACHINE), path)
    return path


def test_same_run_is_clean(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=5, version="0.10.1.1")
    assert compare_main([str(base), str(base)]) == 0


def test_regression_fails_the_gate_and_names_the_phase(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=5, version="0.10.1.1")
    new = _doc(tmp_path / "n.json", rounds=5, version="0.11.0", slower={"model_loading": 5.0})
    out = tmp_path / "c.json"
    assert compare_main([str(base), str(new), "--json", str(out)]) == 1
    report = json.loads(out.read_text())
    bad = [c for c in report["changes"] if c["status"] == "regression"]
    assert {c["metric"] for c in bad} == {"model_loading", "total"}
    assert all(c["cell"].startswith("model=a") and c["p_value"] < 0.05 for c in bad)
    assert report["vllm_version"] == {"base": "0.10.1.1", "new": "0.11.0"}


def test_change_inside_noise_floor_or_threshold_is_not_a_regression(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=5, version="x")
    # +0.5 s on 20 s is 2.5 %: below the 10 % threshold although significant.
    new = _doc(tmp_path / "n.json", rounds=5, version="y", slower={"model_loading": 0.5})
    assert compare_main([str(base), str(new)]) == 0
    assert compare_main([str(base), str(new), "--threshold", "0.01"]) == 1
    # +0.2 s on a 0.3 s tokenizer is 67 % but below a 0.5 s floor.
    new = _doc(tmp_path / "n2.json", rounds=5, version="y", slower={"tokenizer_init": 0.2})
    assert compare_main([str(base), str(new), "--noise-floor-s", "0.5"]) == 0


def test_one_round_is_never_significant(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=1, version="x")
    new = _doc(tmp_path / "n.json", rounds=1, version="y", slower={"model_loading": 10.0})
    out = tmp_path / "c.json"
    assert compare_main([str(base), str(new), "--json", str(out)]) == 0
    changes = json.loads(out.read_text())["changes"]
    loading = next(c for c in changes if c["metric"] == "model_loading" and "model=a" in c["cell"])
    assert loading["status"] == "possible regression" and not loading["significant"]
    assert loading["p_value"] is None
    assert compare_main([str(base), str(new), "--strict"]) == 1


def test_two_rounds_cannot_reach_significance() -> None:
    def mk(v: float) -> BootResult:
        return BootResult(state="measured", model="a", phases={"model_loading": v})

    changes = compare_results([mk(10.0), mk(10.1)], [mk(20.0), mk(20.1)])
    c = next(c for c in changes if c.metric == "model_loading")
    assert c.min_attainable_p == pytest.approx(1 / 3) and not c.significant
    assert "cannot reach" in c.note


def test_failure_in_new_is_a_regression(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="x")
    new = _doc(tmp_path / "n.json", rounds=3, version="y", fail=True)
    out = tmp_path / "c.json"
    assert compare_main([str(base), str(new), "--json", str(out)]) == 1
    statuses = {c["status"] for c in json.loads(out.read_text())["changes"]}
    assert "failed in new" in statuses


def test_metadata_must_agree_unless_forced(tmp_path: Path, capsys) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="x")
    other = MACHINE | {"cpu": {"brand_raw": "Intel Xeon Platinum 8568Y+", "count": 96}}
    new = _doc(tmp_path / "n.json", rounds=3, version="y", machine=other)
    assert run_cli("analysis.compare", compare_main, [str(base), str(new)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cpu" in err and "--force" in err
    assert compare_main([str(base), str(new), "--force"]) == 0


def test_bad_files_exit_2(tmp_path: Path, capsys) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="x")
    (tmp_path / "x.json").write_text("[1, 2")
    for other in ("missing.json", "x.json"):
        argv = [str(base), str(tmp_path / other)]
        assert run_cli("analysis.compare", compare_main, argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_study_iterations_as_rounds(study_reference: Path, tmp_path: Path) -> None:
    from analysis.study import read_study, study_document

    doc = tmp_path / "study.json"
    write_document(study_document(read_study(study_reference / "figures" / "figure-rest")), doc)
    assert compare_main([str(doc), str(doc)]) == 0


def test_suite_machine_facts_are_checked(tmp_path: Path) -> None:
    # benchmarks/provenance.py records machine_info.coldstart; a GPU change refuses.
    def facts(gpu: str) -> dict:
        return {"coldstart": {"cpu_model": "EPYC", "cpu_count": 32, "platform": "cuda",
                              "vllm": "0.11.0", "gpus": [{"index": 0, "name": gpu}]}}

    base = _doc(tmp_path / "b.json", rounds=3, version="x", machine=facts("NVIDIA H100 NVL"))
    same = _doc(tmp_path / "s.json", rounds=3, version="y", machine=facts("NVIDIA H100 NVL"))
    other = _doc(tmp_path / "o.json", rounds=3, version="y", machine=facts("NVIDIA L40S"))
    assert compare_main([str(base), str(same)]) == 0
    assert run_cli("analysis.compare", compare_main, [str(base), str(other)]) == 2
