"""``ModelFeatures``: what a model brings to each start-up phase, and a feature's value and unit.

Every feature carries its unit in its name (``params``, ``weight_bytes``, ``tokenizer_bytes``,
``layers``, ...). A feature that could not be read and was computed from something else (an
architecture formula, a per-layer average) is listed in ``ModelFeatures.estimated``, so a report
can say which numbers are measured and which are guesses.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from document.errors import FeatureError

__all__ = ["FEATURE_UNITS", "GIB", "TRAIT_KINDS", "Count", "ModelFeatures", "feature_parts",
           "feature_unit", "feature_value", "trait_kind"]

GIB = 2**30

# Human units for the report and for fitting (coefficients then read as seconds per GiB, per
# billion parameters, ...). Fitting on scaled features also keeps the design matrix well
# conditioned. A product feature ``a_x_b`` takes the product of the scales, a ratio
# ``a_over_b`` their quotient (``weight_bytes_over_load_bandwidth``: GiB / GiB/s = s).
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
    "load_bandwidth": (GIB, "GiB/s"),
}

# Kinds of model a line fitted on plain dense attention models may not describe.
TRAIT_KINDS = ("MoE", "hybrid Mamba", "quantized")


def trait_kind(trait: str) -> str:
    return next((k for k in TRAIT_KINDS if trait.startswith(k)), trait)


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
    # Bytes per second the boot's weight loading ran at (weight bytes / "Loading weights
    # took"): the storage tier and its page-cache state, a feature of the boot, not of the
    # model (analysis.storage). A prediction gives it as the operator's storage.
    load_bandwidth: Annotated[float, Field(gt=0)] | None = None
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


def feature_parts(name: str) -> list[str]:
    """The ``ModelFeatures`` fields a (product or ratio) feature is made of."""
    return [part for ratio in name.split("_over_") for part in ratio.split("_x_")]


def feature_value(features: ModelFeatures, name: str) -> float | None:
    """The value of a (possibly product or ratio) feature, in base units, or None when unknown.

    ``"a_x_b"`` is the product of features ``a`` and ``b`` (for example
    ``layers_x_capture_sizes``: the number of piecewise graphs captured); ``"a_over_b"`` is
    ``a / b`` (``weight_bytes_over_load_bandwidth``: the seconds the weights take at the
    boot's load bandwidth); ``"constant"`` is 1.
    """
    if name == "constant":
        return 1.0
    if "_over_" in name:
        numerator, _, denominator = name.partition("_over_")
        top, bottom = feature_value(features, numerator), feature_value(features, denominator)
        if top is None or not bottom:
            return None
        return top / bottom
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
    """Scale and unit label of a feature (the product of its factors' for ``a_x_b``, the
    quotient for ``a_over_b``)."""
    if name == "constant":
        return 1.0, ""
    if "_over_" in name:
        numerator, _, denominator = name.partition("_over_")
        (top, top_unit), (bottom, bottom_unit) = feature_unit(numerator), feature_unit(denominator)
        if top == bottom and top_unit + "/s" == bottom_unit:
            return 1.0, "s"
        return top / bottom, f"{top_unit} / {bottom_unit}"
    scale, labels = 1.0, []
    for part in name.split("_x_"):
        s, label = FEATURE_UNITS.get(part, (1.0, part))
        scale *= s
        labels.append(label or part)
    return scale, " x ".join(labels)
