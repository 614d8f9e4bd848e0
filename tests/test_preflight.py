"""A cell that cannot boot here ends before its boot, in one line (issue 29): the platform,
the GPUs, the hub and the token, checked by benchmarks.preflight; and the GPU example run for
real on this CPU machine without the hub, every cell ended at once with its reason, no boot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from benchmarks.matrix.cells import load_plan
from benchmarks.preflight import Preflight, cell_gpus
from document.errors import FeatureError

REPO = Path(__file__).resolve().parents[1]
GPU_NODE = REPO / "examples" / "matrices" / "gpu-node.yaml"


def _matrix(tmp_path: Path, body: str) -> str:
    path = tmp_path / "m.yaml"
    path.write_text("version: 1\n" + textwrap.dedent(body))
    return str(path)


def _refusals(plan, **kw) -> dict[str, tuple[str, str] | None]:
    check = Preflight(plan, **kw)
    return {c.id: check.check(c) for c in plan.cells}


def test_the_gpu_example_is_skipped_on_a_machine_without_gpus():
    plan = load_plan(str(GPU_NODE))
    found = _refusals(plan, environ={}, gpus=lambda: [])
    assert len(found) == 16
    assert all(r and r[0] == "skipped" and "needs platform cuda" in r[1]
               and "this machine is cpu" in r[1] for r in found.values())


def test_gpus_and_the_product_are_counted_on_a_gpu_machine():
    plan = load_plan(str(GPU_NODE))
    one_h100 = _refusals(plan, environ={"HF_TOKEN": "t"}, gpus=lambda: ["NVIDIA H100 80GB HBM3"],
                         access=lambda *a: None)
    for cell in plan.cells:
        if cell_gpus(plan, cell) == 2:
            assert one_h100[cell.id] == ("skipped", "needs 2 GPUs (tensor x pipeline x data "
                                                    "parallel size); this machine has 1")
        else:
            assert one_h100[cell.id] is None
    a100s = _refusals(plan, environ={"HF_TOKEN": "t"},
                      gpus=lambda: ["NVIDIA A100-SXM4-80GB"] * 2, access=lambda *a: None)
    assert all(r and "needs GPU NVIDIA-H100-80GB-HBM3" in r[1] for r in a100s.values())


def test_a_gated_model_without_its_token_file_fails_in_one_line(tmp_path):
    matrix = _matrix(tmp_path, """\
        models:
          - hub: meta-llama/Llama-3.1-8B-Instruct
            env: {HF_TOKEN_PATH: /nonexistent/hf-token}
        axes: {compile_cache: [cold, warm]}
        """)
    asked = []
    found = _refusals(load_plan(matrix), environ={}, gpus=lambda: [],
                      access=lambda *a: asked.append(a))
    for state, why in found.values():
        assert state == "failed" and "\n" not in why
        assert "HF_TOKEN_PATH=/nonexistent/hf-token cannot be read" in why
        assert "kubectl create secret generic hf-token --from-file=hf-token=" in why
    assert not asked  # nothing asked of the hub without the token
    token = tmp_path / "hf-token"
    token.write_text("hf_xxx\n")
    matrix = _matrix(tmp_path, f"""\
        models:
          - hub: meta-llama/Llama-3.1-8B-Instruct
            env: {{HF_TOKEN_PATH: {token}}}
        axes: {{compile_cache: [cold, warm]}}
        """)
    found = _refusals(load_plan(matrix), environ={}, gpus=lambda: [],
                      access=lambda *a: asked.append(a))
    assert set(found.values()) == {None}
    assert asked == [("meta-llama/Llama-3.1-8B-Instruct", None, "hf_xxx")]  # once per model


def test_the_hub_s_refusal_is_the_cell_s_one_line(tmp_path):
    matrix = _matrix(tmp_path, """\
        models: [{hub: org/private-model}]
        axes: {page_cache: [warm, evicted]}
        """)

    def refuse(repo, revision, token):
        raise FeatureError(f"{repo}: could not read it from the Hugging Face hub "
                           "(GatedRepoError: 401); a gated model: accept its licence")

    found = _refusals(load_plan(matrix), environ={}, gpus=lambda: [], access=refuse)
    assert {r for r in found.values()} == {(
        "failed", "hub model org/private-model: could not read it from the Hugging Face hub "
                  "(GatedRepoError: 401); a gated model: accept its licence")}
    offline = _refusals(load_plan(matrix), environ={"HF_HUB_OFFLINE": "1"}, gpus=lambda: [],
                        access=refuse)
    assert all(r[0] == "failed" and "HF_HUB_OFFLINE is set" in r[1] for r in offline.values())


def test_fixtures_on_a_cpu_machine_pass():
    plan = load_plan("smoke")
    assert set(_refusals(plan, environ={}, gpus=lambda: []).values()) == {None}


NO_BOOTS = '''
"""Any boot, priming or page-cache floor of the run appends to $NO_BOOTS_MARKER and raises."""
import os
import pytest

def _launched(*args, **kw):
    with open(os.environ["NO_BOOTS_MARKER"], "a") as fh:
        fh.write("launched\\n")
    raise RuntimeError("a boot was launched")

@pytest.fixture(autouse=True)
def _no_boots(request, monkeypatch):
    module = request.module
    if hasattr(module, "check_cell"):
        for name in ("prepare_boot", "launch_boot", "_storage_floor"):
            monkeypatch.setattr(module, name, _launched)
'''


def test_the_gpu_example_on_this_cpu_machine_ends_at_once_naming_why(tmp_path):
    """The acceptance of issue 29: `pytest benchmarks/ --matrix examples/matrices/gpu-node.yaml`
    without GPUs and without the hub ends within the minute, every cell skipped or failed with
    its reason, and no boot launched (a plugin stands guard: a boot would be recorded)."""
    (tmp_path / "no_boots_plugin.py").write_text(NO_BOOTS)
    marker = tmp_path / "launched"
    out = tmp_path / "gpu.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_BOOTS_MARKER": str(marker),
           "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider",
         "-p", "no_boots_plugin", "--matrix", str(GPU_NODE.relative_to(REPO)),
         "--benchmark-json", str(out), "-q", "-rs"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    assert not marker.exists(), "a boot was launched"
    assert took < 60, took  # vLLM is not even imported: no cell can run here
    assert "engine arguments not checked against the installed vLLM" in proc.stderr
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]  # all skipped
    doc = json.loads(out.read_text())
    cells = doc["coldstart"]["unrecorded"]
    assert not doc["benchmarks"] and len(cells) == 16
    for cell in cells:
        assert cell["state"] == "skipped"
        assert cell["skip_reason"].startswith("pre-flight: needs platform cuda")
    assert proc.stdout.count("pre-flight: needs platform cuda") >= 1
    # The document written when no cell was measured says its commit: merge checks it.
    assert doc["commit_info"].get("id")


def test_a_busy_machine_refuses_cells_that_would_boot_not_those_that_cannot(tmp_path):
    """Another vLLM running (a process named as vLLM's engine core names itself): a session
    of cells that would boot here is refused (timings would be disturbed), the GPU example's
    cells, which the pre-flight skips on this machine and which boot nothing, are not."""
    busy = subprocess.Popen(["bash", "-c", "exec -a VLLM::EngineCore sleep 120"])
    try:
        def session(matrix: str, *extra: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider",
                 "--matrix", matrix, "--benchmark-json", str(tmp_path / "out.json"), "-q",
                 *extra], cwd=REPO, capture_output=True, text=True, timeout=120,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)})

        refused = session("smoke", "--collect-only")
        assert refused.returncode == 4, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert "other vLLM process(es) are running" in refused.stderr  # ours, or another
        skipped = session(str(GPU_NODE.relative_to(REPO)))
        assert skipped.returncode == 0, skipped.stdout[-2000:] + skipped.stderr[-2000:]
        assert "16 skipped" in skipped.stdout
    finally:
        busy.kill()
        busy.wait()
