"""Features of one model from what it ships: a model folder (``from_model_dir``: its
``config.json``, safetensors headers and tokenizer files), an HF ``config.json`` alone
(``from_hf_config``: parameters from the architecture formula), and the model a boot ran
(``boot_features``). Imports without vLLM or torch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from analysis.features.hf_config import (
    architecture_of,
    dtype_bytes,
    formula_params,
    kv_bytes_per_token,
    read_model_config,
)
from analysis.features.model_features import ModelFeatures
from analysis.features.model_files import (
    compiled_graph_bytes_from_cache,
    estimated_compiled_graph_bytes,
    header_counts,
    read_safetensors_header,
    tokenizer_bytes_in,
)
from document.errors import FeatureError

__all__ = ["OTHER_WEIGHT_PATTERNS", "boot_features", "build_features", "default_capture_sizes",
           "features_of_parts", "from_hf_config", "from_model_dir"]

# Weights vLLM loads besides safetensors: counted by their files' bytes.
OTHER_WEIGHT_PATTERNS = ("*.bin", "*.pt", "*.pth", "*.gguf")


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


def build_features(arch: dict[str, Any], *, model: str, source: str, params: int | None,
                   active_params: int | None, weight_bytes: int | None, estimated: list[str],
                   platform: str | None, vllm_version: str | None, capture_sizes: int | None,
                   compile_cache_dir: str | Path | None, tokenizer_bytes: int | None,
                   params_by_dtype: dict[str, int] | None = None,
                   bytes_by_dtype: dict[str, int] | None = None) -> ModelFeatures:
    """``ModelFeatures`` from an ``architecture_of`` and the counts read beside it: the
    capture sizes by default where not given, the compiled-graph size from the compile cache
    or estimated from the layers (and then listed in ``estimated``)."""
    if capture_sizes is None:
        capture_sizes = default_capture_sizes(platform or "cuda", vllm_version)
    method = None
    if compile_cache_dir is not None:
        compiled, method = compiled_graph_bytes_from_cache(compile_cache_dir)
    else:
        compiled = estimated_compiled_graph_bytes(arch["layers"])
        if compiled is not None:
            method = "estimated"
            estimated.append("compiled_graph_bytes")
    return ModelFeatures(
        model=model, source=source, params=params, active_params=active_params,
        weight_bytes=weight_bytes, params_by_dtype=params_by_dtype or {},
        bytes_by_dtype=bytes_by_dtype or {}, layers=arch["layers"],
        hidden_size=arch["hidden_size"], vocab_size=arch["vocab_size"],
        attention_heads=arch["attention_heads"], kv_heads=arch["kv_heads"],
        head_dim=arch["head_dim"], kv_cache_bytes_per_token=kv_bytes_per_token(arch),
        tokenizer_bytes=tokenizer_bytes, moe=arch["moe"], experts=arch["experts"],
        active_experts=arch["active_experts"], hybrid=arch["hybrid"],
        quantization=arch["quantization"], dtype=arch["dtype"], capture_sizes=capture_sizes,
        compiled_graph_bytes=compiled, compiled_graph_method=method,
        estimated=sorted(set(estimated)),
    )


def from_hf_config(config_path: str | Path, *, model: str | None = None,
                   platform: str | None = None, vllm_version: str | None = None,
                   capture_sizes: int | None = None,
                   compile_cache_dir: str | Path | None = None) -> ModelFeatures:
    """Features from an HF ``config.json`` alone: parameters from the architecture formula.

    ``params``, ``active_params`` and ``weight_bytes`` are marked estimated; the tokenizer
    size is read from the config's folder when its files are there.
    """
    p = Path(config_path)
    cfg = read_model_config(p)
    arch = architecture_of(cfg)
    if not arch["layers"] or not arch["hidden_size"]:
        raise FeatureError(f"{p}: not an HF model config (no layer count or hidden size)")
    counted = formula_params(arch)
    params, active = counted if counted else (None, None)
    weight_bytes = params * dtype_bytes(arch["dtype"]) if params else None
    return build_features(arch, model=model or p.parent.name, source="hf_config",
                          params=params, active_params=active, weight_bytes=weight_bytes,
                          estimated=["params", "active_params", "weight_bytes"],
                          platform=platform, vllm_version=vllm_version,
                          capture_sizes=capture_sizes, compile_cache_dir=compile_cache_dir,
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
    files = sorted(d.glob("*.safetensors"))
    other = [f for pat in OTHER_WEIGHT_PATTERNS for f in sorted(d.glob(pat))]
    return features_of_parts(
        read_model_config(cfg_path) if cfg_path.is_file() else {},
        [(f, read_safetensors_header(f)) for f in files],
        [f.stat().st_size for f in other], where=d, model=model or d.name,
        source="model_dir", tokenizer_bytes=tokenizer_bytes_in(d), platform=platform,
        vllm_version=vllm_version, capture_sizes=capture_sizes,
        compile_cache_dir=compile_cache_dir)


def features_of_parts(cfg: dict[str, Any], headers: list[tuple[Any, Any]],
                      other_weight_sizes: list[int], *, where: Any, model: str, source: str,
                      tokenizer_bytes: int | None, platform: str | None = None,
                      vllm_version: str | None = None, capture_sizes: int | None = None,
                      compile_cache_dir: str | Path | None = None) -> ModelFeatures:
    """A model's features from what its files say: the config, the safetensors headers
    (``(where, header)`` pairs), the sizes of weights in other formats and the tokenizer's
    bytes; a local folder's (``from_model_dir``) or a hub repository's
    (``analysis.features.hub_model``)."""
    arch = architecture_of(cfg)
    estimated: list[str] = []
    if headers:
        params_by_dtype, bytes_by_dtype, expert_params, expert_tensors = header_counts(headers)
        params = sum(params_by_dtype.values())
        weight_bytes = sum(bytes_by_dtype.values())
        if arch["moe"] and arch["experts"] and expert_tensors:
            k = arch["active_experts"] or 1
            # Each token runs k of the experts: only that share of the expert weights is
            # touched by a forward pass.
            active = params - expert_params + expert_params * k // arch["experts"]
        elif arch["moe"]:
            counted = formula_params(arch)
            active = int(params * counted[1] / counted[0]) if counted else None
            estimated.append("active_params")
        else:
            active = params
    else:
        params_by_dtype, bytes_by_dtype = {}, {}
        counted = formula_params(arch)
        params, active = counted if counted else (None, None)
        estimated += ["params", "active_params"]
        if other_weight_sizes:
            weight_bytes = sum(other_weight_sizes)
        else:
            weight_bytes = params * dtype_bytes(arch["dtype"]) if params else None
            estimated.append("weight_bytes")
    if not cfg and not headers:
        raise FeatureError(f"{where}: neither config.json nor *.safetensors: not a model "
                           "folder")
    return build_features(arch, model=model, source=source, params=params,
                          active_params=active, weight_bytes=weight_bytes,
                          estimated=estimated, platform=platform, vllm_version=vllm_version,
                          capture_sizes=capture_sizes, compile_cache_dir=compile_cache_dir,
                          tokenizer_bytes=tokenizer_bytes,
                          params_by_dtype=params_by_dtype, bytes_by_dtype=bytes_by_dtype)


def boot_features(result: Any, read: Callable[..., ModelFeatures] | None = None
                  ) -> ModelFeatures:
    """The features of the model a boot ran: its model folder, and the compile cache the boot
    left where the harness recorded it and it is still there (``evidence.compile_cache_dir``).
    ``read`` reads ``model_path`` in place of ``from_model_dir`` (a hub model's, whose
    ``model_path`` is its hub id: ``analysis.features.hub_model.boot_features``).

    The one path from a ``BootResult`` to features: ``analysis.dataset`` (what a fit uses) and
    ``coldstart features`` (the file ``--features`` takes where the model folders are
    not) both call it, so a fit repeated from that file sees the features the first fit saw.
    """
    if not result.model_path:
        raise FeatureError(f"no features for model {result.model!r}: its results have no "
                           "model_path; give --features FILE")
    cache = result.evidence.compile_cache_dir
    if not (isinstance(cache, str) and Path(cache).is_dir()):
        cache = None
    engine = result.engine_config or {}
    features = (read or from_model_dir)(result.model_path, model=result.model,
                                        platform=result.platform,
                                        vllm_version=result.vllm_version,
                                        compile_cache_dir=cache,
                                        capture_sizes=engine.get("num_capture_sizes"))
    return features.model_copy(update={"max_model_len": engine.get("max_model_len"),
                                       "kv_cache_tokens": engine.get("kv_cache_tokens")})
