"""Features of the reference study's models, from its ``models_config.json``: nominal sizes,
tokenizer MB and compiled-graph KiB as the study recorded them (``analysis.study`` reads the
rest of the study). Imports without vLLM or torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.features.hf_config import dtype_bytes, is_hybrid_architecture, read_model_config
from analysis.features.model_features import ModelFeatures
from analysis.features.model_folder import build_features
from document.errors import FeatureError

__all__ = ["read_study_models_config", "study_entry_features"]


def study_entry_features(name: str, entry: dict[str, Any], *, weight_bytes: int | None = None,
                         dtype: str | None = "bfloat16", quantization: str | None = None,
                         capture_sizes: int | None = None,
                         vllm_version: str | None = "0.10.1.1",
                         architecture: str | None = None) -> ModelFeatures:
    """Features of one model of the reference study's ``models_config.json``.

    The study records a nominal size in billions (``size``: Gemma-7B is listed as 7 but has
    8.5 B parameters), the tokenizer size in MB and the compiled-graph size in KiB. When the
    weight bytes are known (the boot log's "Model loading took X GiB" line, what the
    safetensors headers would give), the parameter count is weight bytes / bytes per
    parameter; otherwise the nominal size, marked estimated.

    A checkpoint with fewer than 1.5 bytes per nominal parameter cannot be 16-bit (a nominal
    size is off by tens of percent, not by a factor of two): it is taken as quantized and keeps
    its nominal size (gpt-oss-20b: 13.7 GiB for 21 B parameters, MXFP4 experts).

    ``models_config.json`` does not say which models are hybrid Mamba; the boot log's
    architecture (``architecture``, "Resolved architecture: GraniteMoeHybridForCausalLM")
    does.
    """
    estimated: list[str] = []
    per_param = dtype_bytes(dtype)
    nominal = int(round(float(entry["size"]) * 1e9)) if entry.get("size") is not None else None
    if (quantization is None and weight_bytes is not None and nominal
            and weight_bytes / nominal < 1.5):
        quantization = "sub-16-bit"
    if weight_bytes is not None and not quantization:
        params = int(round(weight_bytes / per_param))
    else:
        params = nominal
        estimated.append("params")
    if weight_bytes is None and nominal is not None:
        weight_bytes = nominal * per_param
        estimated.append("weight_bytes")
    moe = entry.get("moe") or {}
    if moe:
        # The study gives the active size only nominally (billions).
        active = int(round(float(moe["active_size"]) * 1e9))
        estimated.append("active_params")
    else:
        active = params
    # The study gives no head_dim: hidden / heads is wrong for some (Gemma-7B has 256, not
    # 192), so the KV-cache size per token is a guess.
    estimated += ["head_dim", "kv_cache_bytes_per_token"]
    heads = entry.get("num_attention_heads")
    hidden = entry.get("hidden_size")
    arch = {
        "layers": entry.get("layers"), "hidden_size": hidden, "vocab_size": entry.get("vocab_size"),
        "attention_heads": heads, "kv_heads": entry.get("num_key_value_heads") or heads,
        "head_dim": hidden // heads if hidden and heads else None, "moe": bool(moe),
        "experts": moe.get("n_experts"), "active_experts": moe.get("n_active_experts"),
        "hybrid": is_hybrid_architecture(architecture), "quantization": quantization,
        "dtype": dtype,
    }
    cgs = entry.get("compiled_graph_sizes")
    feats = build_features(arch, model=name, source="study", params=params,
                           active_params=active, weight_bytes=weight_bytes,
                           estimated=estimated, platform="cuda", vllm_version=vllm_version,
                           capture_sizes=capture_sizes, compile_cache_dir=None,
                           tokenizer_bytes=int(round(float(entry["tokenizer_size"]) * 1e6))
                           if entry.get("tokenizer_size") is not None else None)
    feats.nominal_params = nominal
    if cgs is not None:
        # Measured by the study from its compile cache (KiB, per piece, see
        # compiled_graph_bytes_from_cache).
        feats.compiled_graph_bytes = int(round(float(cgs) * 1024))
        feats.compiled_graph_method = "study"
        feats.estimated = [e for e in feats.estimated if e != "compiled_graph_bytes"]
    return feats


def read_study_models_config(path: str | Path, **kwargs: Any) -> dict[str, ModelFeatures]:
    """All models of the study's ``models_config.json`` as ``{name: ModelFeatures}``.

    Keyword arguments go to ``study_entry_features`` (the same for every model); use
    ``study_entry_features`` directly for per-model weight bytes.
    """
    p = Path(path)
    cfg = read_model_config(p)
    out = {}
    for name, entry in cfg.items():
        if not isinstance(entry, dict) or "size" not in entry or "layers" not in entry:
            raise FeatureError(f"{p}: entry {name!r} is not a models_config.json model entry")
        out[name] = study_entry_features(name, entry, **kwargs)
    return out
