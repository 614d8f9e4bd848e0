"""What a start-up log's facts say about the boot: typed fact values, the compile cache's
state, the engine configuration vLLM resolved, and whether CUDA-graph capture applies."""

from __future__ import annotations

import re
from typing import Any

from harness.log_normalise import gib

__all__ = ["fact_value", "compile_disabled", "compile_cache_state", "engine_config",
           "capture_not_applicable"]


def fact_value(key: str, found: re.Match[str]) -> Any:
    value = found.groupdict().get("value")
    if value is None:
        return True
    if key == "cuda_graph_sizes":
        return sorted(int(v) for v in re.findall(r"\d+", value))
    if key in ("weights_gib", "kv_cache_gib"):
        return gib(value, found.groupdict().get("unit"))
    if key in ("cfg_max_model_len", "cfg_tensor_parallel_size", "cfg_pipeline_parallel_size"):
        return int(value)
    if key == "cfg_enable_prefix_caching":
        return value == "True"
    if key == "cfg_quantization" and value == "None":
        return None
    if key == "kv_cache_tokens":
        return int(value.replace(",", ""))
    if key == "enforce_eager":
        return value == "True"
    return value.strip()


def compile_disabled(facts: dict[str, Any]) -> bool:
    return facts.get("compilation_level") == "0" or facts.get("compilation_mode") in ("NONE", "0")


def compile_cache_state(facts: dict[str, Any]) -> str:
    # The most specific observation wins: a disabled cache compiles (a miss) by design, and a
    # load failure is followed by a compile.
    if compile_disabled(facts):
        return "not_applicable"
    for observed in ("disabled", "load_failure", "miss", "hit"):
        if f"compile_cache_{observed}" in facts:
            return observed
    return "unknown"


def engine_config(facts: dict[str, Any]) -> dict[str, Any]:
    """The engine configuration vLLM resolved and reported in its log: max_model_len, dtype,
    quantization, TP / PP size, prefix caching, KV-cache dtype, capture sizes (their number
    is a feature of the study's graph-capture model), KV-cache tokens and GiB."""
    out = {k.removeprefix("cfg_"): v for k, v in facts.items() if k.startswith("cfg_")}
    for key in ("enforce_eager", "kv_cache_tokens", "kv_cache_gib"):
        if key in facts:
            out[key] = facts[key]
    if "cuda_graph_sizes" in facts:
        out["cudagraph_capture_sizes"] = facts["cuda_graph_sizes"]
        out["num_capture_sizes"] = len(facts["cuda_graph_sizes"])
    return out


def capture_not_applicable(facts: dict[str, Any]) -> str | None:
    """Why CUDA-graph capture does not apply to this boot, or None where it does."""
    platform = str(facts.get("platform", "")).lower() or None
    if platform is not None and platform not in ("cuda", "rocm"):
        return f"no CUDA graphs on {platform}"
    if facts.get("enforce_eager") is True:
        return "enforce_eager"
    return None
