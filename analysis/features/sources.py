"""Features from a file or folder of any kind (``load_features``: a model folder, an HF
``config.json`` or a features JSON file), and ``{name: ModelFeatures}`` from a features JSON
file (``read_features_json``: what ``coldstart features`` writes and ``--features``
takes). Imports without vLLM or torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.features.hf_config import LAYER_KEYS
from analysis.features.model_features import ModelFeatures
from analysis.features.model_files import (
    compiled_graph_bytes_from_cache,
    estimated_compiled_graph_bytes,
)
from analysis.features.model_folder import default_capture_sizes, from_hf_config, from_model_dir
from analysis.features.study_models import study_entry_features
from document.boot_result import read_json, validation_summary
from document.errors import FeatureError

if TYPE_CHECKING:  # for the annotation only: analysis.predictor_file imports this package
    from analysis.predictor_file import PredictorGroup

__all__ = ["load_features", "read_features_json"]


def read_features_json(path: str | Path) -> dict[str, ModelFeatures]:
    """``{name: ModelFeatures}`` from a JSON file of features.

    Accepts one ``ModelFeatures`` object, a list of them, a ``{name: ModelFeatures}`` mapping
    (an entry may leave out ``model``; where it has one it must be its key), or the study's
    ``models_config.json``. A name given twice, or an entry whose ``model`` differs from its
    key, is a ``FeatureError``: whichever name won, one model would get no features.
    """
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
                  model: str | None = None, revision: str | None = None) -> ModelFeatures:
    """Features of a model folder, an HF ``config.json``, a features JSON file or a hub id
    (``ORG/NAME`` at ``revision``: its config, safetensors headers and file sizes, fetched
    without the weights; ``analysis.features.hub_model``).

    The keyword arguments are those of ``from_model_dir``; for a features file they override
    what the file says (the capture sizes, the compiled-graph size from a cache folder).
    """
    p = Path(target)
    kwargs = {"platform": platform, "vllm_version": vllm_version,
              "capture_sizes": capture_sizes, "compile_cache_dir": compile_cache_dir,
              "model": model}
    if p.is_dir():
        return from_model_dir(p, **kwargs)
    if not p.exists():
        from analysis.features.hub_model import from_hub, is_hub_id

        if is_hub_id(target):
            return from_hub(str(target), revision=revision, **kwargs)
        raise FeatureError(f"{p}: no such model folder or file (a hub id is ORG/NAME; a "
                           "fixture's folder is printed by `coldstart fixtures path NAME`)")
    if not p.is_file():
        raise FeatureError(f"{p}: not a model folder, file or hub id")
    cfg = read_json(p, FeatureError)
    # A features file maps model names to objects; a Hugging Face config says what it is by
    # any of these (MPT's says "n_layers", ChatGLM's "num_layers", some only "model_type").
    if isinstance(cfg, dict) and (p.name == "config.json" or any(
            k in cfg for k in (*LAYER_KEYS, "model_type", "text_config", "architectures"))):
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


def like_training(features: ModelFeatures, group: PredictorGroup
                  ) -> tuple[ModelFeatures, str | None]:
    """``features`` made as the predictor's training models' were, where there is more than
    one way (``PredictorGroup.feature_methods``), and a line saying what was done or what
    differs; None when nothing does.

    A compile cache's files (``all_files``) weigh 8 to 19x the estimate from the layers that
    the committed CPU scaling run's training models got: a line fitted on the one, given the
    other, predicts an unseen shape minutes off. A measured size where the lines were fitted
    on estimates becomes the estimate; an estimate where they were fitted on measured sizes
    is said, as it cannot be measured here.
    """
    trained = (group.feature_methods or {}).get("compiled_graph_bytes")
    have = features.compiled_graph_method
    if trained is None or have is None or have == trained:
        return features, None
    if trained == "estimated" and features.layers:
        estimate = estimated_compiled_graph_bytes(features.layers)
        return features.model_copy(update={
            "compiled_graph_bytes": estimate, "compiled_graph_method": "estimated",
            "estimated": sorted({*features.estimated, "compiled_graph_bytes"})}), (
            f"compiled_graph_bytes: {estimate} estimated from the {features.layers} layers, as "
            f"the training models' were (the compile cache's {have!r} measure gave "
            f"{features.compiled_graph_bytes})")
    return features, (f"compiled_graph_bytes measured by {have!r}; the lines were fitted on "
                      f"{trained!r} sizes: the compile phases may be off")
