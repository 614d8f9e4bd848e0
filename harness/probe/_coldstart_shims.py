"""Narrow work-arounds for vLLM defects on CPU, applied by the probe inside the boot.

Each shim is keyed by the module whose import triggers it, is switched on by the harness
through COLDSTART_SHIMS (only for the cells and vLLM versions the registry names), and emits
a ``shim.applied`` event each time it actually changes behaviour, so a result says which
shims shaped it. Imported only when COLDSTART_SHIMS is set; standard library + what the
patched vLLM module already imported.
"""


def tensorizer_cpu_post_processing(module, emit):
    """vLLM's TensorizerLoader loads a non-vLLM-tensorized file through
    ``_load_model_serialized_cpu``, which never calls ``process_weights_after_loading``; on CPU
    the linear layers then lack their packed weights ("'QKVParallelLinear' object has no
    attribute 'cpu_linear'" at the first forward). Call the step the default loader calls."""
    cls = module.TensorizerLoader
    original = cls._load_model_serialized_cpu

    def _load_model_serialized_cpu(self, vllm_config, prefix=""):
        model = original(self, vllm_config, prefix)
        device = vllm_config.device_config.device
        if str(device).startswith("cpu"):
            import torch
            from vllm.model_executor.model_loader.utils import process_weights_after_loading

            process_weights_after_loading(model, vllm_config.model_config, torch.device(device))
            emit("shim.applied", "mark", "tensorizer_cpu_post_processing")
        return model

    cls._load_model_serialized_cpu = _load_model_serialized_cpu


# shim name -> (module that triggers it, function)
SHIMS = {
    "tensorizer_cpu_post_processing": ("vllm.model_executor.model_loader.tensorizer_loader",
                                       tensorizer_cpu_post_processing),
}
