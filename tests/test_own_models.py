"""A user's own models and settings, without a boot: bad matrix files stop ``pytest
benchmarks/`` with exit 2 before anything boots; a hub id reaches vLLM's child as a hub id,
online; the user's exported variables win over the fixture defaults, and say so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.boot import prepare_boot
from harness.spec import BootSpec

REPO = Path(__file__).resolve().parents[1]
HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


def _collect(matrix: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider",
                           "-q", "--collect-only", "--allow-busy-machine", "--matrix", str(matrix)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("body, line, words", [
    ("models: [smollm2-135m]\naxes:\n  max_model_lenn: [512]\n", 3,
     "axes.max_model_lenn: unknown engine argument 'max_model_lenn' for the installed vLLM"),
    ("models: [smollm2-135m]\naxes:\n  loader: [pickle]\n", 3, "unknown loader 'pickle'"),
    ("models: [smollm2-135m]\nbudgets: {ready_s: -1}\n", 2, "budget ready_s: -1.0 s must be"),
    ("models:\n  - path: /no/such/model\n", 2, "model folder /no/such/model does not exist"),
    ("models: [smollm2-135m\n", 2, "YAML"),
    ("models:\n  - smollm2-135m\n  - smollm2-135m\n", 3, "duplicate model 'smollm2-135m'"),
])
def test_a_bad_matrix_file_exits_2_with_one_line_before_any_boot(tmp_path, body, line, words):
    pytest.importorskip("vllm")  # engine-argument names are the installed vLLM's
    matrix = tmp_path / "m.yaml"
    matrix.write_text(body)
    proc = _collect(matrix)
    assert proc.returncode == 2, proc.stdout[-1500:] + proc.stderr[-1500:]
    said = [ln for ln in (proc.stdout + proc.stderr).splitlines() if str(matrix) in ln]
    assert len(said) == 1 and f"{matrix}:{line}: " in said[0] and words in said[0], said
    assert "collected" not in proc.stdout


def test_a_hub_id_reaches_the_child_as_a_hub_id_with_the_hub_online(tmp_path, monkeypatch):
    """This machine cannot download: what vLLM would be given is checked, not the download."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_CPU_KVCACHE_SPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # nothing downloaded here
    spec = BootSpec(model=HUB_ID, hub_id=HUB_ID, revision="main", compile_cache="off",
                    fixture_defaults=False, engine_kwargs={"max_model_len": 2048},
                    provenance={"max_model_len": "axis"}, work_dir=tmp_path / "boot")
    prepared = prepare_boot(spec)
    child = json.loads((prepared.work / "child_spec.json").read_text())
    assert child["model_path"] == HUB_ID
    assert child["engine_kwargs"] == {"seed": 0, "max_model_len": 2048, "revision": "main",
                                      "load_format": "safetensors", "enforce_eager": True}
    # online: no offline switch, and vLLM's own KV-cache default (no fixture default)
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "VLLM_CPU_KVCACHE_SPACE"):
        assert name not in prepared.env
    assert "downloaded by the boot" in prepared.evidence.page_cache.note
    used = prepared.evidence.settings.engine_args
    assert used["max_model_len"].model_dump() == {"value": 2048, "source": "axis"}
    assert used["seed"].model_dump() == {"value": 0, "source": "default"}
    # the serve entrypoint hands the same to `vllm serve` (harness/_child.py's command line)
    import importlib.util

    loader = importlib.util.spec_from_file_location("coldstart_child", REPO / "harness" / "_child.py")
    child_module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(child_module)
    args = child_module._cli_args(child["engine_kwargs"])
    assert args[args.index("--revision") + 1] == "main"


def test_an_exported_variable_wins_over_the_fixture_default_and_says_so(tmp_path, monkeypatch):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    spec = BootSpec(model="m", model_path=model, compile_cache="off")  # a fixture's defaults
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    assert spec.boot_env()["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert spec.settings_used()["env"]["VLLM_CPU_KVCACHE_SPACE"] == {"value": "1",
                                                                     "source": "default"}
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    assert spec.boot_env()["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert spec.settings_used()["env"]["VLLM_CPU_KVCACHE_SPACE"] == {"value": "3",
                                                                     "source": "environment"}
    # a matrix value wins over both
    mine = spec.model_copy(update={"env": {"VLLM_CPU_KVCACHE_SPACE": "2"},
                                   "provenance": {"VLLM_CPU_KVCACHE_SPACE": "matrix model"}})
    assert mine.boot_env()["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert mine.settings_used()["env"]["VLLM_CPU_KVCACHE_SPACE"]["source"] == "matrix model"
    # a user's model gets vLLM's own max_model_len and dtype; a fixture gets the small ones
    assert "max_model_len" in spec.effective_engine_kwargs()
    user = spec.model_copy(update={"fixture_defaults": False})
    assert "max_model_len" not in user.effective_engine_kwargs()
    assert "dtype" not in user.effective_engine_kwargs()


@pytest.mark.slow  # loads the installed vLLM's engine arguments for each file: a minute
def test_the_readme_example_matrices_are_valid_for_the_installed_vllm():
    pytest.importorskip("vllm")
    from benchmarks.matrix.cells import load_plan
    from fixtures.build import ensure_model

    gpu = load_plan(str(REPO / "examples" / "matrices" / "gpu-node.yaml"), check_engine_args=True)
    assert len(gpu.cells) == 16 and gpu.models["llama-3.1-8b"].kind == "hub"
    assert gpu.cells[-1].id.endswith("-tensor_parallel_size=2-max_model_len=32768")
    ensure_model("smollm2-135m")  # the folder the CPU example names
    cpu = load_plan(str(REPO / "examples" / "matrices" / "cpu-own-model.yaml"),
                    check_engine_args=True)
    assert [c.id.rsplit("-", 1)[-1] for c in cpu.cells] == ["max_model_len=512",
                                                             "max_model_len=2048"]
