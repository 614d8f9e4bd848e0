"""A model's architecture from its HF ``config.json``: shape, MoE, hybrid, dtype, KV-cache size
per token and the parameter count of the architecture formula.

Counts must be whole positive numbers; a value that is not (a string, 2.7 layers, a list where
one number belongs) is unknown, and so is every feature built from it. Imports without vLLM or
torch.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from document.boot_result import read_json
from document.errors import FeatureError

__all__ = ["HYBRID_ARCHITECTURE_MARKERS", "LAYER_KEYS", "TORCH_DTYPE_BYTES", "architecture_of",
           "dtype_bytes", "formula_params", "is_hybrid_architecture", "kv_bytes_per_token",
           "read_model_config"]

# Bytes per element of a config's torch_dtype.
TORCH_DTYPE_BYTES: dict[str, int] = {
    "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
}

# Architecture class names (as vLLM resolves them, "Resolved architecture: X", and as HF
# config.json lists them) of models whose layers are not all attention: Mamba / SSM mixers
# alone or interleaved with attention. vLLM builds, traces and loads these layers differently
# (granite4.0-h in the reference study loads about 14x faster per byte), so a line fitted on
# attention models does not describe them. A word-piece rule rather than a list of classes:
# new hybrids keep these names (GraniteMoeHybrid, NemotronH, FalconH1, Zamba2, ...).
HYBRID_ARCHITECTURE_MARKERS = ("Mamba", "Hybrid", "Jamba", "Bamba", "Zamba", "NemotronH",
                               "FalconH1", "Plamo2")


# The keys architectures name their decoder-layer count by (Llama, GPT-2, ChatGLM, MPT, ...).
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_transformer_layers")

def is_hybrid_architecture(name: str | None) -> bool:
    """Whether an architecture class name is a Mamba / SSM (hybrid) model."""
    return bool(name) and any(m in str(name) for m in HYBRID_ARCHITECTURE_MARKERS)


def read_model_config(path: Path) -> dict[str, Any]:
    """A model's ``config.json`` (or the study's ``models_config.json``) as a JSON object."""
    cfg = read_json(path, FeatureError)
    if not isinstance(cfg, dict):
        raise FeatureError(f"{path}: not a model config (expected a JSON object)")
    return cfg


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    # Multimodal configs keep the language model's numbers under text_config / llm_config.
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and sub.get("num_hidden_layers"):
            return {**cfg, **sub}
    return cfg


def _first(cfg: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        v = cfg.get(k)
        if v is not None:
            return v
    return None


def _number(v: Any) -> int | None:
    """A whole positive count, or None (a string, a bool, 2.7 layers, 0, inf)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return int(v) if float(v).is_integer() and v > 0 else None


def _scalar(v: Any, *, per_layer: bool = False) -> int | None:
    """One count from a config value; with ``per_layer``, the largest of a per-layer list.

    OpenELM lists its query and KV heads per layer (``num_kv_heads: [3, 3, 4, ...]``),
    Hunyuan its top-k and expert width per layer (``moe_topk: [8, 8, ...]``): the largest is
    the head count a layer can have, the top-k a token can see. A list where one number
    belongs (``num_hidden_layers: [1, 2]``), a string or a nested object is unknown (None),
    and the features built from it stay unknown.
    """
    if isinstance(v, (list, tuple)):
        values = _per_layer(v) if per_layer else None
        return max(values) if values else None
    return _number(v)


def _per_layer(v: Any) -> list[int] | None:
    """A per-layer list of counts, or None when ``v`` is not one."""
    if not isinstance(v, (list, tuple)) or not v:
        return None
    values = [_number(x) for x in v]
    return None if any(x is None for x in values) else values


def architecture_of(cfg: dict[str, Any]) -> dict[str, Any]:
    """The shape, kind and dtype of the model an HF config describes, under the names the
    features use (``layers``, ``kv_heads``, ``experts``, ...; None where unknown), plus what
    only the parameter formula needs (``ffn``, ``moe_ffn``, ``tied``, ``kv_heads_per_layer``).
    """
    cfg = _text_config(cfg)
    # DBRX keeps attention and MoE settings in nested objects.
    attn_cfg = cfg.get("attn_config") if isinstance(cfg.get("attn_config"), dict) else {}
    ffn_cfg = cfg.get("ffn_config") if isinstance(cfg.get("ffn_config"), dict) else {}
    layers = _first(cfg, *LAYER_KEYS)
    hidden = _first(cfg, "hidden_size", "d_model", "n_embd", "model_dim")
    heads = _first(cfg, "num_attention_heads", "n_head", "num_heads", "n_heads",
                   "num_query_heads")
    kv_heads = _first(cfg, "num_key_value_heads", "n_head_kv", "num_kv_heads",
                      "multi_query_group_num") or attn_cfg.get("kv_n_heads")
    if kv_heads is None and cfg.get("multi_query"):
        kv_heads = 1  # Falcon-7B style multi-query attention
    if kv_heads is None:
        kv_heads = heads
    # Per-layer head counts (OpenELM): the KV cache is the sum over layers; the parameter
    # formula assumes one shape for every layer and is not used.
    kv_per_layer = _per_layer(kv_heads)
    varies = any(isinstance(v, (list, tuple)) for v in (heads, kv_heads))
    layers, hidden = _scalar(layers), _scalar(hidden)
    heads, kv_heads = _scalar(heads, per_layer=True), _scalar(kv_heads, per_layer=True)
    if kv_per_layer and len(kv_per_layer) != layers:
        kv_per_layer = None  # not one entry per layer: the KV cache size stays unknown
        kv_heads = None
    head_dim = _scalar(cfg.get("head_dim"))
    if head_dim is None and hidden and heads:
        head_dim = hidden // heads
    experts = _scalar(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts",
                             "moe_num_experts") or ffn_cfg.get("moe_num_experts"),
                      per_layer=True)
    active = _scalar(_first(cfg, "num_experts_per_tok", "moe_topk", "num_selected_experts",
                            "top_k", "experts_per_token") or ffn_cfg.get("moe_top_k"),
                     per_layer=True)
    moe = bool(experts and experts > 1)
    text = json.dumps(cfg).lower()
    archs = cfg.get("architectures") or []
    archs = [archs] if isinstance(archs, str) else archs  # one name instead of a list
    hybrid = ("mamba" in text or "ssm_state" in text or '"ssm' in text
              or any(is_hybrid_architecture(a) for a in archs if isinstance(a, str)))
    quant = cfg.get("quantization_config")
    quant_method = None
    if isinstance(quant, dict):
        quant_method = str(quant.get("quant_method") or quant.get("quant_algo") or "quantized")
    elif isinstance(quant, str) and quant:
        quant_method = quant
    ffn_raw = (_first(cfg, "intermediate_size", "ffn_dim", "ffn_hidden_size", "n_inner")
               or ffn_cfg.get("ffn_hidden_size"))
    moe_ffn_raw = _first(cfg, "moe_intermediate_size", "expert_intermediate_size") or ffn_raw
    varies = varies or any(isinstance(v, (list, tuple)) for v in (ffn_raw, moe_ffn_raw))
    dtype = _first(cfg, "torch_dtype", "dtype")
    return {
        "layers": layers,
        "hidden_size": hidden,
        "vocab_size": _scalar(cfg.get("vocab_size")),
        "attention_heads": heads,
        "kv_heads": kv_heads,
        "kv_heads_per_layer": kv_per_layer,
        "head_dim": head_dim,
        "moe": moe,
        "experts": experts if moe else None,
        "active_experts": active if moe and active else None,
        "hybrid": hybrid,
        "quantization": quant_method,
        "dtype": str(dtype) if isinstance(dtype, str) and dtype else None,
        # the parameter formula assumes one shape for every layer
        "ffn": None if varies else _scalar(ffn_raw),
        "moe_ffn": None if varies else _scalar(moe_ffn_raw),
        "tied": bool(cfg.get("tie_word_embeddings", False)),
    }


def dtype_bytes(dtype: str | None) -> int:
    """Bytes per element a model's weights and KV cache take on the device."""
    # vLLM's dtype="auto" runs float32 checkpoints in half precision, so the cache and the
    # weights on the device are 2 bytes per element unless the checkpoint says otherwise.
    if not dtype:
        return 2
    return min(TORCH_DTYPE_BYTES.get(dtype.replace("torch.", ""), 2), 2)


def kv_bytes_per_token(arch: dict[str, Any]) -> int | None:
    """KV-cache bytes one token takes, from an ``architecture_of`` (None where unknown)."""
    # K and V for every layer: 2 x layers x kv_heads x head_dim x bytes per element; with
    # heads given per layer, their sum in place of layers x kv_heads.
    per_layer = arch.get("kv_heads_per_layer")
    if per_layer and arch["head_dim"]:
        return 2 * sum(per_layer) * arch["head_dim"] * dtype_bytes(arch["dtype"])
    if not (arch["layers"] and arch["kv_heads"] and arch["head_dim"]):
        return None
    return 2 * arch["layers"] * arch["kv_heads"] * arch["head_dim"] * dtype_bytes(arch["dtype"])


def formula_params(arch: dict[str, Any]) -> tuple[int, int] | None:
    """(total, active) parameters of a decoder-only transformer from its shape.

    Embedding (plus an untied LM head) + per layer: attention projections (q and o of
    heads x head_dim, k and v of kv_heads x head_dim) and a gated MLP (three hidden x ffn
    matrices; per expert for MoE). Norms and biases are left out (under 0.1 %).
    """
    h, L, V = arch["hidden_size"], arch["layers"], arch["vocab_size"]
    if not (h and L and V and arch["attention_heads"] and arch["head_dim"] and arch["ffn"]):
        return None
    hd = arch["head_dim"]
    attn = h * arch["attention_heads"] * hd * 2 + h * arch["kv_heads"] * hd * 2
    embed = V * h * (1 if arch["tied"] else 2)
    if arch["moe"] and arch["experts"]:
        expert = 3 * h * arch["moe_ffn"]
        k = arch["active_experts"] or 1
        total = embed + L * (attn + arch["experts"] * expert + h * arch["experts"])
        active = embed + L * (attn + k * expert + h * arch["experts"])
        return total, active
    total = embed + L * (attn + 3 * h * arch["ffn"])
    return total, total

