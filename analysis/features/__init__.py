"""Features of a model (the Hugging Face model a boot loads) that explain its start-up phases, read
without its weights; ``python -m analysis.features RUN.json -o features.json`` (``cli``).

``ModelFeatures`` and a feature's value and unit (``model_features``), the architecture from
``config.json`` (``hf_config``), what a folder's files say (``model_files``), the features of a
folder, a config or a boot's model (``model_folder``), of a hub model (``hub_model``), of the
reference study's models (``study_models``), and features from a file of any kind (``sources``).
Imports without vLLM or torch.
"""

from analysis.features.hf_config import TORCH_DTYPE_BYTES, architecture_of, formula_params
from analysis.features.hub_model import HubClient
from analysis.features.model_features import (
    TRAIT_KINDS,
    ModelFeatures,
    feature_parts,
    feature_unit,
    feature_value,
    trait_kind,
)
from analysis.features.model_files import (
    ESTIMATED_COMPILED_KIB_PER_LAYER,
    compiled_graph_bytes_from_cache,
    estimated_compiled_graph_bytes,
    read_safetensors_header,
    tokenizer_bytes_in,
)
from analysis.features.model_folder import default_capture_sizes, from_hf_config, from_model_dir
from analysis.features.sources import like_training, load_features, read_features_json
from analysis.features.study_models import read_study_models_config, study_entry_features

__all__ = ["ESTIMATED_COMPILED_KIB_PER_LAYER", "TORCH_DTYPE_BYTES", "TRAIT_KINDS", "HubClient",
           "ModelFeatures", "architecture_of", "compiled_graph_bytes_from_cache",
           "default_capture_sizes", "estimated_compiled_graph_bytes", "feature_parts",
           "feature_unit", "feature_value", "formula_params", "from_hf_config", "from_model_dir",
           "like_training", "load_features", "read_features_json", "read_safetensors_header",
           "read_study_models_config", "study_entry_features", "tokenizer_bytes_in", "trait_kind"]
