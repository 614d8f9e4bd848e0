"""What a model folder's files say without reading its weights: the safetensors headers
(parameter and byte counts per dtype, the experts' share), the tokenizer files' bytes, and the
size of the compiled graph code a boot's compile cache holds (or its estimate from the layers).

Imports without vLLM or torch.
"""

from __future__ import annotations

import ast
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from document.errors import FeatureError

__all__ = ["ESTIMATED_COMPILED_KIB_PER_LAYER", "SAFETENSORS_DTYPE_BYTES",
           "compiled_graph_bytes_from_cache", "estimated_compiled_graph_bytes",
           "header_counts", "read_safetensors_header", "safetensors_counts",
           "tokenizer_bytes_in", "tokenizer_bytes_of"]

# Bytes per element of the safetensors dtypes. Only used to cross-check; the byte count of a
# tensor is taken from its data offsets, which is exact even for packed (FP4) dtypes.
SAFETENSORS_DTYPE_BYTES: dict[str, float] = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8,
    "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "F4": 0.5,
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


def safetensors_counts(files: list[Path]) -> tuple[dict[str, int], dict[str, int], int, int]:
    """(parameters by dtype, bytes by dtype, expert parameters, expert tensors) of the
    safetensors files, from their headers alone."""
    return header_counts((f, read_safetensors_header(f)) for f in files)


def header_counts(headers: Iterable[tuple[Any, Any]]
                  ) -> tuple[dict[str, int], dict[str, int], int, int]:
    """``safetensors_counts`` of ``(where, header)`` pairs: a local file's header, or one a
    hub serves (``analysis.features.hub_model``)."""
    params_by_dtype: dict[str, int] = {}
    bytes_by_dtype: dict[str, int] = {}
    expert_params = 0
    expert_tensors = 0
    for f, header in headers:
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
    return tokenizer_bytes_of({f.name: f.stat().st_size for f in d.iterdir() if f.is_file()}
                              if d.is_dir() else {})


def tokenizer_bytes_of(sizes: Mapping[str, int]) -> int | None:
    """``tokenizer_bytes_in`` of a listing: file name -> bytes (a folder's, or a hub repo's)."""
    if "tokenizer.json" in sizes:
        return sizes["tokenizer.json"]
    names = [n for n in _SLOW_TOKENIZER_FILES if n in sizes]
    names += sorted(n for n in sizes if n.endswith(".tiktoken"))
    if not names:
        return None
    return sum(sizes[n] for n in names)


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


def estimated_compiled_graph_bytes(layers: int | None) -> int | None:
    """The compiled graph code of a model of ``layers`` layers, by the study's median per
    layer (``ESTIMATED_COMPILED_KIB_PER_LAYER``); None without a layer count."""
    if not layers:
        return None
    return int(round(layers * ESTIMATED_COMPILED_KIB_PER_LAYER * 1024))

