"""Features of a model (the Hugging Face model a boot loads) that explain its start-up phases, read
without its weights; ``coldstart features RUN.json -o features.json`` writes those of a run's
models (``runs``) for a fit.

Every feature carries its unit in its name (``params``, ``weight_bytes``, ``tokenizer_bytes``,
``layers``, ...). A feature that could not be read and was computed from something else (an
architecture formula, a per-layer average) is listed in ``ModelFeatures.estimated``, so a report
can say which numbers are measured and which are guesses. Sources, in the order of preference:
a model folder (``config.json``, the safetensors headers: the 8-byte little-endian header length
followed by the JSON header, the tensor data never read; tokenizer files), an HF
``config.json`` alone (parameters from the architecture formula), the reference study's
``models_config.json``, a JSON file of ``ModelFeatures``.

``ModelFeatures`` and a feature's value and unit (``model_features``), the architecture from
``config.json`` (``hf_config``), what a folder's files say (``model_files``), the features of a
folder, a config or a boot's model (``model_folder``), of a hub model (``hub_model``), of the
reference study's models (``study_models``), of a run's models (``runs``), and features from a
file of any kind (``sources``). Imports without vLLM or torch.
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
