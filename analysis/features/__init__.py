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
