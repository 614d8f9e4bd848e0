"""Features of a model that explain its start-up phases, read without reading its weights.

Every feature carries its unit in its name (``params``, ``weight_bytes``, ``tokenizer_bytes``,
``layers``, ...). A feature that could not be read and was computed from something else (an
architecture formula, a per-layer average) is listed in ``ModelFeatures.estimated``, so a report
can say which numbers are measured and which are guesses.

Sources, in the order of preference:

- a model folder (``from_model_dir``): ``config.json``, the safetensors headers (the 8-byte
  little-endian header length followed by the JSON header; the tensor data is never read),
  tokenizer files;
- an HF ``config.json`` alone (``from_hf_config``): parameters from the architecture formula;
- the reference study's ``models_config.json`` (``read_study_models_config``);
- a JSON file of ``ModelFeatures`` (``read_features_json``).

Imports without vLLM or torch.
"""

from __future__ import annotations

import ast
import json
import math
import re
import struct
from pathlib import Path
from typing import Annotated, Any

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FEATURE_UNITS",
    "FeatureError",
    "ModelFeatures",
    "boot_features",
    "compiled_graph_bytes_from_cache",
    "default_capture_sizes",
    "feature_value",
    "from_hf_config",
    "from_model_dir",
    "load_features",
    "read_features_json",
    "read_safetensors_header",
    "read_study_models_config",
    "study_entry_features",
    "tokenizer_bytes_in",
]

GIB = 2**30

# Bytes per element of the safetensors dtypes. Only used to cross-check; the byte count of a
# tensor is taken from its data offsets, which is exact even for packed (FP4) dtypes.
_SAFETENSORS_DTYPE_BYTES: dict[str, float] = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8,
    "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "F4": 0.5,
}
_TORCH_DTYPE_BYTES: dict[str, int] = {
    "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8,
}

# Human units for the report and for fitting (coefficients then read as seconds per GiB, per
# billion parameters, ...). Fitting on scaled features also keeps the design matrix well
# conditioned. A product feature ``a_x_b`` takes the product of the scales.
FEATURE_UNITS: dict[str, tuple[float, str]] = {
    "params": (1e9, "B params"),
    "nominal_params": (1e9, "B params (nominal)"),
    "active_params": (1e9, "B active params"),
    "weight_bytes": (GIB, "GiB"),
    "tokenizer_bytes": (1e6, "MB"),
    "compiled_graph_bytes": (2**10, "KiB"),
    "kv_cache_bytes_per_token": (2**10, "KiB/token"),
    "vocab_size": (1e3, "k tokens"),
    "layers": (1.0, "layers"),
    "hidden_size": (1.0, ""),
    "capture_sizes": (1.0, "capture sizes"),
    "max_model_len": (1e3, "k tokens (max_model_len)"),
    "kv_cache_tokens": (1e3, "k KV-cache tokens"),
    "experts": (1.0, "experts"),
    "moe": (1.0, "flag"),
}

# vLLM compiles one piecewise graph per decoder layer (plus the pieces before the first and
# after the last). Without a measured compile cache the size of that code is estimated as
# layers x this many KiB: the median of compiled_graph_sizes / layers over the models of the
# reference study's models_config.json that its predictor may learn from, i.e. all 25 but the
# five it held out (analysis.study.STUDY_HOLDOUT): 20 models, median 32.61 (vLLM 0.10.1.1,
# H100). A constant taken over the held-out models too would carry what they measured into
# every estimate; tests recompute it from the file. Architectures differ by about +-30 %
# around it (MPT 17, OLMoE 36 KiB).
ESTIMATED_COMPILED_KIB_PER_LAYER = 32.6


# Architecture class names (as vLLM resolves them, "Resolved architecture: X", and as HF
# config.json lists them) of models whose layers are not all attention: Mamba / SSM mixers
# alone or interleaved with attention. vLLM builds, traces and loads these layers differently
# (granite4.0-h in the reference study loads about 14x faster per byte), so a line fitted on
# attention models does not describe them. A word-piece rule rather than a list of classes:
# new hybrids keep these names (GraniteMoeHybrid, NemotronH, FalconH1, Zamba2, ...).
HYBRID_ARCHITECTURE_MARKERS = ("Mamba", "Hybrid", "Jamba", "Bamba", "Zamba", "NemotronH",
                               "FalconH1", "Plamo2")


def is_hybrid_architecture(name: str | None) -> bool:
    """Whether an architecture class name is a Mamba / SSM (hybrid) model."""
    return bool(name) and any(m in str(name) for m in HYBRID_ARCHITECTURE_MARKERS)


# Kinds of model a line fitted on plain dense attention models may not describe.
TRAIT_KINDS = ("MoE", "hybrid Mamba", "quantized")


def trait_kind(trait: str) -> str:
    return next((k for k in TRAIT_KINDS if trait.startswith(k)), trait)


class FeatureError(ValueError):
    """A model folder or feature file that cannot give the features asked for."""


# A count or a size: a negative one is a damaged input, never a feature to extrapolate to.
Count = Annotated[int, Field(ge=0)]


class ModelFeatures(BaseModel):
    """What a model brings to each start-up phase.

    Counts are plain integers, sizes are bytes. ``estimated`` names the fields that were
    computed instead of read (for example ``params`` from the architecture formula).
    """

    model_config = ConfigDict(extra="forbid")

    model: str
    source: str = "unknown"
    params: Count | None = None
    nominal_params: Count | None = None  # the name plate ("7B"), when a source gives one
    active_params: Count | None = None
    weight_bytes: Count | None = None
    params_by_dtype: dict[str, int] = Field(default_factory=dict)
    bytes_by_dtype: dict[str, int] = Field(default_factory=dict)
    layers: Count | None = None
    hidden_size: Count | None = None
    vocab_size: Count | None = None
    attention_heads: Count | None = None
    kv_heads: Count | None = None
    head_dim: Count | None = None
    kv_cache_bytes_per_token: Count | None = None
    tokenizer_bytes: Count | None = None
    moe: bool = False
    experts: Count | None = None
    active_experts: Count | None = None
    hybrid: bool = False  # attention mixed with Mamba / SSM layers
    quantization: str | None = None
    dtype: str | None = None
    capture_sizes: Count | None = None
    # What the boot's engine used, as vLLM reported it (BootResult.engine_config): features of
    # the configuration more than of the model, recorded where a boot has them.
    max_model_len: Count | None = None
    kv_cache_tokens: Count | None = None
    compiled_graph_bytes: Count | None = None
    compiled_graph_method: str | None = None
    estimated: list[str] = Field(default_factory=list)

    def trait_kinds(self) -> list[str]:
        """``traits`` without their details ("quantized mxfp4" -> "quantized")."""
        return [trait_kind(t) for t in self.traits()]

    def traits(self) -> list[str]:
        """Short words a report puts beside a model that sits off a fit line."""
        out = []
        if self.moe:
            out.append("MoE")
        if self.hybrid:
            out.append("hybrid Mamba")
        if self.quantization:
            out.append(f"quantized {self.quantization}")
        return out


def feature_value(features: ModelFeatures, name: str) -> float | None:
    """The value of a (possibly product) feature, in base units, or None when unknown.

    ``"a_x_b"`` is the product of features ``a`` and ``b`` (for example
    ``layers_x_capture_sizes``: the number of piecewise graphs captured); ``"constant"`` is 1.
    """
    if name == "constant":
        return 1.0
    if "_x_" in name:
        total = 1.0
        for part in name.split("_x_"):
            v = feature_value(features, part)
            if v is None:
                return None
            total *= v
        return total
    if name not in ModelFeatures.model_fields:
        raise FeatureError(f"unknown feature {name!r}")
    v = getattr(features, name)
    if v is None or isinstance(v, (dict, list, str)):
        return None
    return float(v)


def feature_unit(name: str) -> tuple[float, str]:
    """Scale and unit label of a feature (the product of its factors' for ``a_x_b``)."""
    if name == "constant":
        return 1.0, ""
    scale, labels = 1.0, []
    for part in name.split("_x_"):
        s, label = FEATURE_UNITS.get(part, (1.0, part))
        scale *= s
        labels.append(label or part)
    return scale, " x ".join(labels)


def default_capture_sizes(platform: str | None, vllm_version: str | None = None,
                          max_num_seqs: int = 256) -> int:
    """How many CUDA-graph capture sizes vLLM uses by default.

    Parameters
    ----------
    platform : ``"cpu"`` (no CUDA graphs: 0) or ``"cuda"``.
    vllm_version : before 0.11 vLLM captured ``[1, 2, 4] + range(8, max + 1, 8)`` with
        ``max = min(max_num_seqs, 512)`` (35 sizes for the default 256 sequences, as the
        reference study's v0.10.1.1 logs show); later releases capture
        ``[1, 2, 4] + range(8, 256, 8) + range(256, max + 1, 16)`` with
        ``max = min(2 * max_num_seqs, 512)`` (51 sizes).
    max_num_seqs : the engine's ``max_num_seqs``.
    """
    if platform == "cpu":
        return 0
    old = False
    if vllm_version:
        try:
            old = Version(Version(vllm_version.split("+")[0]).base_version) < Version("0.11")
        except InvalidVersion:
            old = False
    if old:
        top = min(max_num_seqs, 512)
        return len([1, 2, 4] + list(range(8, top + 1, 8)))
    top = min(2 * max_num_seqs, 512)
    return len([1, 2, 4] + list(range(8, 256, 8)) + list(range(256, top + 1, 16)))


# --------------------------------------------------------------------------- safetensors
def read_safetensors_header(path: str | Path) -> dict[str, Any]:
    """The JSON header of a safetensors file, without reading any tensor data.

    The format is an unsigned 64-bit little-endian header length followed by that many bytes
    of JSON (https://github.com/huggingface/safetensors#format).
    """
    p = Path(path)
    with p.open("rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise FeatureError(f"{p}: too short for a safetensors file")
        (n,) = struct.unpack("<Q", raw)
        if n > 100 * 2**20:  # a header is kilobytes; guard against reading a wrong file whole
            raise FeatureError(f"{p}: header length {n} is not plausible: not a safetensors file")
        try:
            return json.loads(fh.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise FeatureError(f"{p}: safetensors header is not JSON ({exc})") from exc


def _whole(values: list[Any]) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)


# An expert's tensors: ``...experts.3.gate_proj.weight`` or fused ``...experts.gate_up_proj``
# (not ``shared_experts``, which run for every token).
_EXPERT_TENSOR = re.compile(r"(?<!shared_)experts?\.(\d+\.|w[123]|gate_up_proj|down_proj|up_proj)")


def _tensor_counts(files: list[Path]) -> tuple[dict[str, int], dict[str, int], int, int]:
    params_by_dtype: dict[str, int] = {}
    bytes_by_dtype: dict[str, int] = {}
    expert_params = 0
    expert_tensors = 0
    for f in files:
        header = read_safetensors_header(f)
        if not isinstance(header, dict):
            raise FeatureError(f"{f}: safetensors header is not a JSON object")
        for name, info in header.items():
            if name == "__metadata__":
                continue
            shape = info.get("shape") if isinstance(info, dict) else None
            offsets = info.get("data_offsets") if isinstance(info, dict) else None
            if not (isinstance(info, dict) and isinstance(info.get("dtype"), str)
                    and isinstance(shape, list) and _whole(shape)
                    and isinstance(offsets, list) and len(offsets) == 2 and _whole(offsets)
                    and offsets[0] <= offsets[1]):
                raise FeatureError(f"{f}: tensor {name!r}: not a safetensors entry (dtype, "
                                   "shape and data_offsets of whole numbers >= 0)")
            dtype = info["dtype"]
            numel = math.prod(shape)
            begin, end = offsets
            params_by_dtype[dtype] = params_by_dtype.get(dtype, 0) + numel
            bytes_by_dtype[dtype] = bytes_by_dtype.get(dtype, 0) + int(end) - int(begin)
            if _EXPERT_TENSOR.search(name):
                expert_params += numel
                expert_tensors += 1
    return params_by_dtype, bytes_by_dtype, expert_params, expert_tensors


# ------------------------------------------------------------------------------ config.json
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


def _architecture(cfg: dict[str, Any]) -> dict[str, Any]:
    cfg = _text_config(cfg)
    # DBRX keeps attention and MoE settings in nested objects.
    attn_cfg = cfg.get("attn_config") if isinstance(cfg.get("attn_config"), dict) else {}
    ffn_cfg = cfg.get("ffn_config") if isinstance(cfg.get("ffn_config"), dict) else {}
    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers",
                    "num_transformer_layers")
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


def _dtype_bytes(dtype: str | None) -> int:
    # vLLM's dtype="auto" runs float32 checkpoints in half precision, so the cache and the
    # weights on the device are 2 bytes per element unless the checkpoint says otherwise.
    if not dtype:
        return 2
    return min(_TORCH_DTYPE_BYTES.get(dtype.replace("torch.", ""), 2), 2)


def _kv_bytes_per_token(arch: dict[str, Any]) -> int | None:
    # K and V for every layer: 2 x layers x kv_heads x head_dim x bytes per element; with
    # heads given per layer, their sum in place of layers x kv_heads.
    per_layer = arch.get("kv_heads_per_layer")
    if per_layer and arch["head_dim"]:
        return 2 * sum(per_layer) * arch["head_dim"] * _dtype_bytes(arch["dtype"])
    if not (arch["layers"] and arch["kv_heads"] and arch["head_dim"]):
        return None
    return 2 * arch["layers"] * arch["kv_heads"] * arch["head_dim"] * _dtype_bytes(arch["dtype"])


def _formula_params(arch: dict[str, Any]) -> tuple[int, int] | None:
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


# ------------------------------------------------------------------------------- tokenizers
_SLOW_TOKENIZER_FILES = ("tokenizer.model", "vocab.json", "merges.txt", "vocab.txt", "spiece.model")


def tokenizer_bytes_in(folder: str | Path) -> int | None:
    """Bytes of the tokenizer files a model folder ships.

    ``tokenizer.json`` when present (what a fast tokenizer parses; the reference study's
    ``tokenizer_size`` is this file in MB); otherwise the slow tokenizer's files
    (``tokenizer.model``, ``vocab.json`` + ``merges.txt``, ``vocab.txt``, ``*.tiktoken``).
    None when the folder has none.
    """
    d = Path(folder)
    fast = d / "tokenizer.json"
    if fast.is_file():
        return fast.stat().st_size
    files = [d / n for n in _SLOW_TOKENIZER_FILES if (d / n).is_file()]
    files += sorted(d.glob("*.tiktoken"))
    if not files:
        return None
    return sum(f.stat().st_size for f in files)


# ----------------------------------------------------------------------------- compile cache
def compiled_graph_bytes_from_cache(cache_dir: str | Path) -> tuple[int, str]:
    """Size of the compiled graph code a boot loads, from a vLLM compile cache folder.

    With a ``vllm_compile_cache.py`` index (vLLM's piecewise backend: one entry per graph
    piece and shape, pointing at an Inductor artifact), the artifact of every general-shape
    piece is counted once per piece, so shared artifacts count as often as they run: the
    reference study's measure (it summed the first, the last and (layers - 2) x the middle
    piece). Without an index, the bytes of every file under the folder are summed.

    Returns
    -------
    (bytes, method) where method is ``"index"`` or ``"all_files"``.
    """
    root = Path(cache_dir)
    if not root.is_dir():
        raise FeatureError(f"{root}: no such compile cache folder")
    indexes = sorted(root.rglob("vllm_compile_cache.py"))
    by_name = {}
    for f in root.rglob("*"):
        if f.is_file():
            by_name.setdefault(f.name, f)
    for index in indexes:
        try:
            entries = ast.literal_eval(index.read_text())
        except (ValueError, SyntaxError):
            continue
        total, found = 0, 0
        if not isinstance(entries, dict):
            continue
        for key, handle in entries.items():
            shape = key[0] if isinstance(key, tuple) and key else None
            if shape is not None:
                continue  # specialised shapes are extra compiles, not the general graph
            path = handle[1] if isinstance(handle, (tuple, list)) and len(handle) > 1 else None
            if not isinstance(path, str):
                continue
            local = Path(path) if Path(path).is_file() else by_name.get(Path(path).name)
            if local is not None:
                total += local.stat().st_size
                found += 1
        if found:
            return total, "index"
    total = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    if total == 0:
        raise FeatureError(f"{root}: compile cache folder is empty")
    return total, "all_files"


def _estimated_compiled_graph_bytes(layers: int | None) -> int | None:
    if not layers:
        return None
    return int(round(layers * ESTIMATED_COMPILED_KIB_PER_LAYER * 1024))


# --------------------------------------------------------------------------------- builders
def _finish(arch: dict[str, Any], *, model: str, source: str, params: int | None,
            active_params: int | None, weight_bytes: int | None, estimated: list[str],
            platform: str | None, vllm_version: str | None, capture_sizes: int | None,
            compile_cache_dir: str | Path | None, tokenizer_bytes: int | None,
            params_by_dtype: dict[str, int] | None = None,
            bytes_by_dtype: dict[str, int] | None = None) -> ModelFeatures:
    if capture_sizes is None:
        capture_sizes = default_capture_sizes(platform or "cuda", vllm_version)
    method = None
    if compile_cache_dir is not None:
        compiled, method = compiled_graph_bytes_from_cache(compile_cache_dir)
    else:
        compiled = _estimated_compiled_graph_bytes(arch["layers"])
        if compiled is not None:
            method = "estimated"
            estimated.append("compiled_graph_bytes")
    return ModelFeatures(
        model=model, source=source, params=params, active_params=active_params,
        weight_bytes=weight_bytes, params_by_dtype=params_by_dtype or {},
        bytes_by_dtype=bytes_by_dtype or {}, layers=arch["layers"],
        hidden_size=arch["hidden_size"], vocab_size=arch["vocab_size"],
        attention_heads=arch["attention_heads"], kv_heads=arch["kv_heads"],
        head_dim=arch["head_dim"], kv_cache_bytes_per_token=_kv_bytes_per_token(arch),
        tokenizer_bytes=tokenizer_bytes, moe=arch["moe"], experts=arch["experts"],
        active_experts=arch["active_experts"], hybrid=arch["hybrid"],
        quantization=arch["quantization"], dtype=arch["dtype"], capture_sizes=capture_sizes,
        compiled_graph_bytes=compiled, compiled_graph_method=method,
        estimated=sorted(set(estimated)),
    )


def _read_config(path: Path) -> dict[str, Any]:
    from harness.schema import read_json

    cfg = read_json(path, FeatureError)
    if not isinstance(cfg, dict):
        raise FeatureError(f"{path}: not a model config (expected a JSON object)")
    return cfg


def from_hf_config(config_path: str | Path, *, model: str | None = None,
                   platform: str | None = None, vllm_version: str | None = None,
                   capture_sizes: int | None = None,
                   compile_cache_dir: str | Path | None = None) -> ModelFeatures:
    """Features from an HF ``config.json`` alone: parameters from the architecture formula.

    ``params``, ``active_params`` and ``weight_bytes`` are marked estimated; the tokenizer
    size is read from the config's folder when its files are there.
    """
    p = Path(config_path)
    cfg = _read_config(p)
    arch = _architecture(cfg)
    if not arch["layers"] or not arch["hidden_size"]:
        raise FeatureError(f"{p}: not an HF model config (no layer count or hidden size)")
    counted = _formula_params(arch)
    params, active = counted if counted else (None, None)
    weight_bytes = params * _dtype_bytes(arch["dtype"]) if params else None
    return _finish(arch, model=model or p.parent.name, source="hf_config", params=params,
                   active_params=active, weight_bytes=weight_bytes,
                   estimated=["params", "active_params", "weight_bytes"],
                   platform=platform, vllm_version=vllm_version, capture_sizes=capture_sizes,
                   compile_cache_dir=compile_cache_dir,
                   tokenizer_bytes=tokenizer_bytes_in(p.parent))


def from_model_dir(model_dir: str | Path, *, model: str | None = None,
                   platform: str | None = None, vllm_version: str | None = None,
                   capture_sizes: int | None = None,
                   compile_cache_dir: str | Path | None = None) -> ModelFeatures:
    """Features of a model folder, from its config, safetensors headers and tokenizer files.

    Parameters
    ----------
    model_dir : the folder vLLM is given as ``model``.
    model : the name to record (default: the folder name).
    platform, vllm_version : choose the default number of CUDA-graph capture sizes
        (0 on CPU); see ``default_capture_sizes``.
    capture_sizes : the number of capture sizes, when the boot sets its own.
    compile_cache_dir : a measured boot's compile cache (``VLLM_CACHE_ROOT/torch_compile_cache``
        or one of its hash folders); without it the compiled-graph size is estimated from the
        layer count and marked estimated.
    """
    d = Path(model_dir)
    if not d.is_dir():
        raise FeatureError(f"{d}: no such model folder")
    cfg_path = d / "config.json"
    cfg = _read_config(cfg_path) if cfg_path.is_file() else {}
    arch = _architecture(cfg)
    files = sorted(d.glob("*.safetensors"))
    estimated: list[str] = []
    if files:
        params_by_dtype, bytes_by_dtype, expert_params, expert_tensors = _tensor_counts(files)
        params = sum(params_by_dtype.values())
        weight_bytes = sum(bytes_by_dtype.values())
        if arch["moe"] and arch["experts"] and expert_tensors:
            k = arch["active_experts"] or 1
            # Each token runs k of the experts: only that share of the expert weights is
            # touched by a forward pass.
            active = params - expert_params + expert_params * k // arch["experts"]
        elif arch["moe"]:
            counted = _formula_params(arch)
            active = int(params * counted[1] / counted[0]) if counted else None
            estimated.append("active_params")
        else:
            active = params
    else:
        params_by_dtype, bytes_by_dtype = {}, {}
        other = [f for pat in ("*.bin", "*.pt", "*.pth", "*.gguf") for f in sorted(d.glob(pat))]
        counted = _formula_params(arch)
        params, active = counted if counted else (None, None)
        estimated += ["params", "active_params"]
        if other:
            weight_bytes = sum(f.stat().st_size for f in other)
        else:
            weight_bytes = params * _dtype_bytes(arch["dtype"]) if params else None
            estimated.append("weight_bytes")
    if not cfg and not files:
        raise FeatureError(f"{d}: neither config.json nor *.safetensors: not a model folder")
    return _finish(arch, model=model or d.name, source="model_dir", params=params,
                   active_params=active, weight_bytes=weight_bytes, estimated=estimated,
                   platform=platform, vllm_version=vllm_version, capture_sizes=capture_sizes,
                   compile_cache_dir=compile_cache_dir, tokenizer_bytes=tokenizer_bytes_in(d),
                   params_by_dtype=params_by_dtype, bytes_by_dtype=bytes_by_dtype)


def boot_features(result: Any) -> ModelFeatures:
    """The features of the model a boot ran: its model folder, and the compile cache the boot
    left where the harness recorded it and it is still there (``evidence.compile_cache_dir``).

    The one path from a ``BootResult`` to features: ``analysis.dataset`` (what a fit uses) and
    ``python -m analysis.features`` (the file ``--features`` takes where the model folders are
    not) both call it, so a fit repeated from that file sees the features the first fit saw.
    """
    if not result.model_path:
        raise FeatureError(f"no features for model {result.model!r}: its results have no "
                           "model_path; give --features FILE")
    cache = (result.evidence or {}).get("compile_cache_dir")
    if not (isinstance(cache, str) and Path(cache).is_dir()):
        cache = None
    engine = result.engine_config or {}
    features = from_model_dir(result.model_path, model=result.model, platform=result.platform,
                              vllm_version=result.vllm_version, compile_cache_dir=cache,
                              capture_sizes=engine.get("num_capture_sizes"))
    return features.model_copy(update={"max_model_len": engine.get("max_model_len"),
                                       "kv_cache_tokens": engine.get("kv_cache_tokens")})


# ---------------------------------------------------------------------- the reference study
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
    per_param = _dtype_bytes(dtype)
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
    feats = _finish(arch, model=name, source="study", params=params, active_params=active,
                    weight_bytes=weight_bytes, estimated=estimated, platform="cuda",
                    vllm_version=vllm_version, capture_sizes=capture_sizes,
                    compile_cache_dir=None,
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
    cfg = _read_config(p)
    out = {}
    for name, entry in cfg.items():
        if not isinstance(entry, dict) or "size" not in entry or "layers" not in entry:
            raise FeatureError(f"{p}: entry {name!r} is not a models_config.json model entry")
        out[name] = study_entry_features(name, entry, **kwargs)
    return out


# ------------------------------------------------------------------------ features as JSON
def read_features_json(path: str | Path) -> dict[str, ModelFeatures]:
    """``{name: ModelFeatures}`` from a JSON file of features.

    Accepts one ``ModelFeatures`` object, a list of them, a ``{name: ModelFeatures}`` mapping
    (an entry may leave out ``model``; where it has one it must be its key), or the study's
    ``models_config.json``. A name given twice, or an entry whose ``model`` differs from its
    key, is a ``FeatureError``: whichever name won, one model would get no features.
    """
    from harness.schema import read_json

    p = Path(path)
    data = read_json(p, FeatureError)

    def one(name: str | None, d: Any) -> ModelFeatures:
        if not isinstance(d, dict):
            raise FeatureError(f"{p}: entry {name!r} is not an object")
        if name is not None and "model" in d and d["model"] != name:
            raise FeatureError(f"{p}: entry {name!r} names model {d['model']!r}: the key and "
                               "the model name must agree")
        if "size" in d and "layers" in d and "model" not in d:
            return study_entry_features(name or "?", d)
        try:
            return ModelFeatures.model_validate({**d, "model": name} if name else d)
        except Exception as exc:
            from harness.schema import validation_summary

            what = f"entry {name!r}" if name is not None else "the features"
            raise FeatureError(f"{p}: {what}: not ModelFeatures: "
                               f"{validation_summary(exc)}") from exc

    if isinstance(data, list):
        out: dict[str, ModelFeatures] = {}
        for i, d in enumerate(data):
            if not isinstance(d, dict) or not isinstance(d.get("model"), str):
                raise FeatureError(f"{p}: item {i} is not ModelFeatures with a model name")
            f = one(None, d)
            if f.model in out:
                raise FeatureError(f"{p}: model {f.model!r} is given twice")
            out[f.model] = f
        return out
    if not isinstance(data, dict):
        raise FeatureError(f"{p}: not a features file (expected an object or a list)")
    if "model" in data and isinstance(data.get("model"), str):
        f = one(None, data)
        return {f.model: f}
    return {name: one(name, d) for name, d in data.items()}


def load_features(target: str | Path, *, platform: str | None = None,
                  vllm_version: str | None = None, capture_sizes: int | None = None,
                  compile_cache_dir: str | Path | None = None,
                  model: str | None = None) -> ModelFeatures:
    """Features of a model folder, an HF ``config.json`` or a features JSON file.

    The keyword arguments are those of ``from_model_dir``; for a features file they override
    what the file says (the capture sizes, the compiled-graph size from a cache folder).
    """
    p = Path(target)
    kwargs = {"platform": platform, "vllm_version": vllm_version,
              "capture_sizes": capture_sizes, "compile_cache_dir": compile_cache_dir,
              "model": model}
    if p.is_dir():
        return from_model_dir(p, **kwargs)
    if not p.is_file():
        raise FeatureError(f"{p}: no such model folder or file")
    from harness.schema import read_json

    cfg = read_json(p, FeatureError)
    if isinstance(cfg, dict) and any(k in cfg for k in ("num_hidden_layers", "n_layer",
                                                        "text_config", "architectures")):
        return from_hf_config(p, **kwargs)
    found = read_features_json(p)
    if len(found) != 1:
        raise FeatureError(f"{p}: holds {len(found)} models; give a file with one")
    feats = next(iter(found.values()))
    if model:
        feats.model = model
    if capture_sizes is not None:
        feats.capture_sizes = capture_sizes
    elif feats.capture_sizes is None:
        feats.capture_sizes = default_capture_sizes(platform or "cuda", vllm_version)
    if compile_cache_dir is not None:
        feats.compiled_graph_bytes, feats.compiled_graph_method = \
            compiled_graph_bytes_from_cache(compile_cache_dir)
        feats.estimated = [e for e in feats.estimated if e != "compiled_graph_bytes"]
    return feats


def main(argv: list[str] | None = None) -> int:
    """``python -m analysis.features RESULT.json ... -o features.json``: the features of every
    model in the result files, read from their model folders, as a file ``--features`` takes
    (so a fit can be repeated where the model folders are not)."""
    from analysis._cli import ArgumentParser  # _cli imports this module
    from harness.schema import read_results

    ap = ArgumentParser(prog="python -m analysis.features", description=main.__doc__)
    ap.add_argument("results", nargs="+")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args(argv)
    out: dict[str, Any] = {}
    for path in args.results:
        for r in read_results(path):
            if r.model in out or r.state != "measured" or not r.model_path:
                continue
            out[r.model] = boot_features(r).model_dump(mode="json")
    if not out:
        raise FeatureError("no measured boot with a model folder in "
                           f"{', '.join(args.results)}: no features to write")
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"features of {len(out)} models -> {args.out}")
    return 0


if __name__ == "__main__":
    import sys

    # Run as a script this module is __main__, and its FeatureError is not the class run_cli
    # catches (analysis.features.FeatureError): run the imported module's main instead.
    from analysis._cli import run_cli
    from analysis.features import main as imported_main

    sys.exit(run_cli("analysis.features", imported_main))
