"""Wording drift across vLLM releases, CPU logs, failed boots (the installed vLLM's own strings:
tests/test_logs_installed_vllm.py)."""

from __future__ import annotations

import pytest

from document import boot_result
from harness.logs.reader import model_from_filename, read_log
from harness.logs.scan import scan_lines
from harness.study_columns import study_phases

# Lines of upstream vLLM 0.11.0 (no study patch): whole-second graph capture, a process tag.
V0110_LOG = """\
INFO 02-16 16:49:39.754 [__init__.py:216] Automatically detected platform cuda.
INFO 02-16 16:49:41.568 [scheduler.py:205] Chunked prefill is enabled with max_num_batched_tokens=2048.
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:41.680 [core.py:644] Waiting for init message from front-end.
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:41.682 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='../../models/opt-6.7b', enforce_eager=False, device_config=cuda, compilation_config={"level":3}
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:43.675 [gpu_model_runner.py:2602] Starting to load model ../../models/opt-6.7b...
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:46.684 [default_loader.py:267] Loading weights took 2.72 seconds
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:47.104 [gpu_model_runner.py:2653] Model loading took 12.4037 GiB and 2.803353 seconds
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:49.237 [backends.py:559] Dynamo bytecode transform time: 1.93 s
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:50.913 [backends.py:164] Directly load the compiled graph(s) for dynamic shape from the cache, took 1.470 s
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:52.110 [monitor.py:34] torch.compile takes 1.93 s in total
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:54.684 [gpu_model_runner.py:3480] Graph capturing finished in 2 secs, took 0.33 GiB
(EngineCore_DP0 pid=256452) INFO 02-16 16:49:54.693 [core.py:210] init engine (profile, create kv cache, warmup model) took 7.59 seconds
"""

# A cold compile, as the study's "uncached" run and user reports print it (whole seconds,
# a docker-compose prefix before the process tag).
UNCACHED_LOG = """\
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:20 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='/models/yi-9b', device_config=cuda
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:21 [gpu_model_runner.py:2602] Starting to load model /models/yi-9b...
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:25 [gpu_model_runner.py:2653] Model loading took 16.4 GiB and 3.900000 seconds
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:27 [backends.py:708] Dynamo bytecode transform time: 4.81 s
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:31 [backends.py:255] Cache the graph for dynamic shape for later use
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:40 [backends.py:286] Compiling a graph for dynamic shape takes 12.93 s
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:42 [monitor.py:34] torch.compile takes 17.74 s in total
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:47 [gpu_model_runner.py:3480] Graph capturing finished in 2 secs, took 0.33 GiB
vllm-1  | (EngineCore_DP0 pid=100) INFO 11-20 10:10:47 [core.py:210] init engine (profile, create kv cache, warmup model) took 25.00 seconds
"""

# vLLM 0.32 on a GPU: compile ranges, "[tag] " prefixes, a running "took ... in total" per
# compile, the DEBUG memory line, whole-second capture.
V032_GPU_LOG = """\
(APIServer pid=7) INFO 11-29 09:00:00 [__init__.py:291] Automatically detected platform cuda.
(EngineCore pid=9) INFO 11-29 09:00:05 [core.py:134] Initializing a V1 LLM engine (v0.32.0) with config: model='Qwen/Qwen3-0.6B', enforce_eager=False, device_config=cuda
(Worker pid=11) INFO 11-29 09:00:07 [gpu_model_runner.py:5040] Starting to load model Qwen/Qwen3-0.6B...
(Worker pid=11) INFO 11-29 09:00:07 [base_loader.py:83] Initializing model took 0.071000 seconds
(Worker pid=11) INFO 11-29 09:00:08 [default_loader.py:502] Loading weights took 0.80 seconds
(Worker pid=11) INFO 11-29 09:00:08 [gpu_model_runner.py:5150] Model loading took 1.12 GiB memory and 1.020000 seconds
(Worker pid=11) INFO 11-29 09:00:08 [monitor.py:40] [backbone] Starting torch.compile
(Worker pid=11) INFO 11-29 09:00:11 [backends.py:1167] [backbone] Dynamo bytecode transform time: 3.10 s
(Worker pid=11) INFO 11-29 09:00:20 [backends.py:399] [backbone] Compiling a graph for compile range (1, 2048) takes 8.50 s
(Worker pid=11) INFO 11-29 09:00:20 [backends.py:399] [backbone] Compiling a graph for compile range (2049, 8192) takes 0.40 s
(Worker pid=11) INFO 11-29 09:00:21 [monitor.py:62] [backbone] torch.compile took 12.30 s in total
(Worker pid=11) INFO 11-29 09:00:22 [monitor.py:92] [backbone] Initial profiling/warmup run took 0.90 s
(Worker pid=11) DEBUG 11-29 09:00:22 [gpu_worker.py:758] Memory profiling takes 13.60 seconds. Total non KV cache memory: 2.1GiB
(Worker pid=11) INFO 11-29 09:00:26 [gpu_model_runner.py:6582] Graph capturing finished in 3 secs, took 0.40 GiB
(EngineCore pid=9) INFO 11-29 09:00:26 [core.py:396] init engine (profile, create kv cache, warmup model) took 18.10 s (compilation: 12.30 s)
"""

FAILED_LOG = """\
INFO 10-18 09:53:20 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='/m/q', device_config=cuda
INFO 10-18 09:53:22 [gpu_model_runner.py:2602] Starting to load model /m/q...
INFO 10-18 09:53:29 [gpu_model_runner.py:2653] Model loading took 14.2491 GiB and 6.774743 seconds
INFO 10-18 09:53:30 [backends.py:559] Dynamo bytecode transform time: 6.32 s
INFO 10-18 09:53:46 [backends.py:218] Compiling a graph for dynamic shape takes 15.65 s
INFO 10-18 09:54:33 [monitor.py:34] torch.compile takes 21.97 s in total
INFO 10-18 09:54:36 [gpu_worker.py:298] Available KV cache memory: -1.81 GiB
ERROR 10-18 09:54:37 [core.py:708] EngineCore failed to start.
ERROR 10-18 09:54:37 [core.py:708] Traceback (most recent call last):
ValueError: No available memory for the cache blocks.
"""


def test_study_build_with_ms_timestamps(gpu_0101_log: str) -> None:
    result = read_log(gpu_0101_log)
    assert result.state == "measured"
    assert result.phases["tokenizer_init"] == pytest.approx(0.26)
    # first line 09.576 -> "Starting to load model" 17.817, less the 0.26 s tokenizer
    assert result.phases["framework_bootstrap"] == pytest.approx(17.817 - 9.576 - 0.26)
    assert result.subphases["model_loading.model_init"] == pytest.approx(0.10)
    assert result.evidence.facts["cuda_graph_sizes"] == [1, 2, 4]
    assert result.evidence.facts["timestamp_resolution_s"] == 0.001
    # ANSI colours and the "(EngineCore_0 pid=...)" tag are read as the process
    assert {e["process"] for e in result.events} == {"main", "EngineCore_0"}


def test_upstream_0110_has_no_patched_lines() -> None:
    result = read_log(V0110_LOG)
    assert result.vllm_version == "0.11.0"
    assert result.phases["tokenizer_init"] is None
    assert result.phase_notes["tokenizer_init"] == boot_result.NOT_IN_LOG
    assert result.subphases["model_loading.model_init"] is None
    assert result.phases["cuda_graph_capture"] == 2.0
    assert result.phases["torch_compile"] == pytest.approx(1.93 + 1.470)
    assert result.phases["kv_cache_profiling"] == pytest.approx(7.59 - 3.40 - 2.0)
    assert result.phase_notes.get("kv_cache_profiling") is None
    # no DEBUG "Memory profiling" line: the split inside KV profiling is not in this log
    assert "kv_cache_profiling.memory_profiling" not in result.subphases


def test_cold_compile_counts_inductor_not_a_cache_load() -> None:
    result = read_log(UNCACHED_LOG)
    assert result.compile_cache_observed == "miss"
    assert result.phases["torch_compile"] == pytest.approx(17.74)
    assert result.subphases["torch_compile.inductor_compile"] == pytest.approx(12.93)
    assert result.subphases["torch_compile.compiled_graph_load"] == 0.0
    assert result.evidence.facts["timestamp_resolution_s"] == 1.0
    assert result.model == "yi-9b"


def test_v032_gpu_compile_ranges_and_tags() -> None:
    result = read_log(V032_GPU_LOG)
    assert result.vllm_version == "0.32.0"
    assert result.model == "Qwen/Qwen3-0.6B"  # a hub id stays whole
    assert result.log_durations["inductor_compile_s"] == pytest.approx(8.90)
    assert result.evidence.occurrences["inductor_compile_s"] == [8.50, 0.40]
    assert result.phases["torch_compile"] == pytest.approx(12.30)
    assert result.phases["kv_cache_profiling"] == pytest.approx(18.10 - 12.30 - 3.0)
    assert result.subphases["kv_cache_profiling.memory_profiling"] == pytest.approx(13.60 - 12.30)
    assert result.log_durations["init_engine_compilation_s"] == pytest.approx(12.30)
    assert result.evidence.unread == []


def test_v032_cpu_log(cpu_032_log: str) -> None:
    result = read_log(cpu_032_log)
    assert (result.state, result.platform, result.vllm_version) == ("measured", "cpu", "0.32.0")
    assert result.phases["cuda_graph_capture"] is None
    assert result.phase_notes["cuda_graph_capture"].startswith(boot_result.NOT_APPLICABLE_PREFIX)
    # the CPU runner prints no "Model loading took": the phase is its two printed parts
    assert result.phases["model_loading"] == pytest.approx(0.139084 + 0.13)
    assert "Initializing model took" in result.evidence.composition["model_loading"]
    assert result.subphases["model_loading.model_init"] == pytest.approx(0.139084)
    assert result.subphases["model_loading.load_weights"] == pytest.approx(0.13)
    # warm-up start 09:37:25 -> "saved AOT compiled function" 09:38:18 (whole seconds)
    assert result.phases["torch_compile"] == 53.0
    assert result.phases["kv_cache_profiling"] == pytest.approx(61.04 - 53.0)
    assert result.compile_cache_observed == "miss"
    assert result.model == "smollm2-135m"
    assert result.evidence.facts["architecture"] == "LlamaForCausalLM"
    assert {e["process"] for e in result.events} >= {"MainProcess", "EngineCore", "Worker"}


def test_cpu_aot_hit_and_load_failure(cpu_032_log: str) -> None:
    hit = cpu_032_log.replace(
        "saved AOT compiled function to", "Directly load AOT compilation from path")
    assert read_log(hit).compile_cache_observed == "hit"
    saved = "(Worker pid=18978) INFO 11-29 09:38:18 [decorators.py:743] [backbone] saved AOT"
    assert saved in cpu_032_log
    failed = cpu_032_log.replace(
        saved,
        "(Worker pid=18978) WARNING 11-29 09:37:26 [decorators.py:333] [backbone] Compiling model "
        "again due to a load failure from /cache/model, reason: Compile cache file corrupted.\n"
        + saved)
    scan = scan_lines(failed.splitlines())
    assert scan.facts["compile_cache"] == "load_failure"
    assert scan.facts["compile_cache_load_failure"] == "Compile cache file corrupted."


def test_cpu_without_aot_lines_cannot_split_compile(cpu_032_log: str) -> None:
    # VLLM_USE_AOT_COMPILE=0 on CPU: no line separates compile from the first forward.
    log = "\n".join(line for line in cpu_032_log.splitlines() if "AOT" not in line)
    result = read_log(log + "\n")
    assert result.phases["torch_compile"] is None
    assert result.phase_notes["torch_compile"] == boot_result.NOT_IN_LOG
    assert result.phases["kv_cache_profiling"] is None
    assert result.log_durations["init_engine_s"] == pytest.approx(61.04)


def test_failed_boot_keeps_completed_phases() -> None:
    result = read_log(FAILED_LOG)
    assert result.state == "failed"
    assert result.error == "EngineCore failed to start."
    assert result.phases["model_loading"] == pytest.approx(6.774743)
    assert result.phases["torch_compile"] == pytest.approx(21.97)
    # It died sizing the KV cache ("No available memory"): inside KV profiling, after compile.
    assert result.phase_notes["kv_cache_profiling"] == "unfinished: the log ends inside this phase"
    assert result.evidence.facts["unfinished"] == {"phase": "kv_cache_profiling"}
    assert result.phase_notes["cuda_graph_capture"] == "failed before this phase"
    assert "No available memory" in result.log_tail


def test_enforce_eager_has_no_graph_capture(gpu_0101_log: str) -> None:
    log = gpu_0101_log.replace("enforce_eager=False", "enforce_eager=True").replace(
        '"level":3', '"level":0')
    log = "\n".join(line for line in log.splitlines()
                    if "Graph capturing" not in line and "compile" not in line.lower()
                    and "Dynamo" not in line) + "\n"
    result = read_log(log)
    assert result.phase_notes["cuda_graph_capture"].startswith(boot_result.NOT_APPLICABLE_PREFIX)
    assert result.phase_notes["torch_compile"].startswith(boot_result.NOT_APPLICABLE_PREFIX)
    assert result.compile_cache_observed == "not_applicable"
    assert result.phases["kv_cache_profiling"] == pytest.approx(10.61)


def test_model_from_study_filename() -> None:
    assert model_from_filename("output_model_qwen-0.5b.txt") == "qwen-0.5b"
    assert model_from_filename(
        "/x/output_model_granite4.0-h-32b_no-enable-prefix-caching_.txt") == "granite4.0-h-32b"
    assert model_from_filename("vllm.log") is None


def test_timestamps_across_new_year() -> None:
    # vLLM's timestamps have no year: a boot running over midnight of 31 December goes on.
    scan = scan_lines([
        "INFO 12-31 23:59:58 [a.py:1] Starting to load model /m/x...",
        "INFO 01-01 00:00:03 [a.py:1] Loading weights took 4.90 seconds",
    ])
    assert scan.marks["load_weights_s"] == [5.0]
    assert scan.facts["timestamp_resolution_s"] == 1.0


def test_study_uncached_run_yi_9b() -> None:
    # Lines of the study's cold-cache boot of yi-9b (figure-rest/uncached, whose log the
    # study did not publish); published: torch.compile 31.64, general shape 23.64, kv profiling 4.99.
    e = "(EngineCore_0 pid=972353) "
    log = "\n".join([
        f"{e}INFO 02-09 17:49:55.010 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with "
        "config: model='../../models/yi-9b', device_config=cuda",
        f"{e}INFO 02-09 17:49:59.374 [backends.py:559] Dynamo bytecode transform time: 8.00 s",
        f"{e}INFO 02-09 17:50:27.205 [backends.py:215] Compiling a graph for dynamic shape takes 23.64 s",
        f"{e}INFO 02-09 17:50:31.017 [monitor.py:34] torch.compile takes 31.64 s in total",
        f"{e}DEBUG 02-09 17:50:31.839 [gpu_worker.py:275] Memory profiling takes 36.63 seconds. "
        "Total non KV cache memory: 16.85GiB",
        f"{e}INFO 02-09 17:50:33.796 [gpu_model_runner.py:2708] Graph capturing finished in 1.61 "
        "secs, took 0.56 GiB",
        f"{e}INFO 02-09 17:50:33.806 [core.py:214] init engine (profile, create kv cache, warmup "
        "model) took 38.79 seconds",
    ]) + "\n"
    result = read_log(log)
    study = study_phases(result)
    assert study["kv_cache_profiling"] == pytest.approx(4.99)
    assert study["graph_compile_general_shape"] == pytest.approx(23.64)
    assert study["graph_compile_cached"] is None
    assert result.compile_cache_observed == "miss"
    assert result.phases["torch_compile"] == pytest.approx(31.64)
    assert result.phases["kv_cache_profiling"] == pytest.approx(38.79 - 31.64 - 1.61)


def test_study_load_weights_fallback(gpu_0101_log: str) -> None:
    # A loader that prints no "Loading weights took" (bitsandbytes): the study takes
    # model_loading - model_init; our subphase stays not in the log.
    result = read_log("\n".join(line for line in gpu_0101_log.splitlines()
                                if "Loading weights" not in line) + "\n")
    assert study_phases(result)["load_weights"] == pytest.approx(1.810252 - 0.10)
    assert result.subphases["model_loading.load_weights"] is None


# --------------------------------------------------- the V0 engine's logs (vLLM 0.3 .. 0.7)
# Each log below is written from its release's format strings, read in that release's wheel
# (vllm-<v>-*.whl, vllm/...; the file and phrase of each line are in V0_SOURCE_PHRASES, and
# test_v0_phrases_are_in_the_release_source checks them where the unpacked wheels are at hand).
# The V0 logger writes "LEVEL MM-DD HH:MM:SS file.py:123] message", whole seconds.
_CONFIG_031 = ("model='/models/opt-125m', tokenizer='/models/opt-125m', tokenizer_mode=auto, "
               "revision=None, tokenizer_revision=None, trust_remote_code=False, "
               "dtype=torch.float16, max_seq_len=2048, download_dir=None, load_format=auto, "
               "tensor_parallel_size=1, disable_custom_all_reduce=False, quantization=None, "
               "enforce_eager={eager}, kv_cache_dtype=auto, device_config={device}, seed=0)")
_CAPTURE = ("Capturing the model for CUDA graphs. This may lead to unexpected consequences if "
            "the model is not static. To run the model in eager mode, set 'enforce_eager=True' "
            "or use '--enforce-eager' in the CLI.")
_CAPTURE_MEMORY = ("CUDA graphs can take additional 1~3 GiB memory per GPU. If you are running "
                   "out of memory, consider decreasing `gpu_memory_utilization` or enforcing "
                   "eager mode. You can also reduce the `max_num_seqs` as needed to decrease "
                   "memory usage.")

V031_LOG = f"""\
INFO 03-01 10:00:00 llm_engine.py:79] Initializing an LLM engine with config: {_CONFIG_031.format(eager=False, device="cuda")}
INFO 03-01 10:00:09 llm_engine.py:337] # GPU blocks: 9033, # CPU blocks: 512
INFO 03-01 10:00:11 model_runner.py:666] {_CAPTURE}
INFO 03-01 10:00:11 model_runner.py:670] {_CAPTURE_MEMORY}
INFO 03-01 10:00:20 model_runner.py:738] Graph capturing finished in 9 secs.
"""

V041_LOG = f"""\
INFO 04-25 10:00:00 llm_engine.py:98] Initializing an LLM engine (v0.4.1) with config: {_CONFIG_031.format(eager=False, device="cuda")}
INFO 04-25 10:00:05 model_runner.py:173] Loading model weights took 0.2389 GB
INFO 04-25 10:00:07 gpu_executor.py:119] # GPU blocks: 9033, # CPU blocks: 7281
INFO 04-25 10:00:09 model_runner.py:976] {_CAPTURE}
INFO 04-25 10:00:09 model_runner.py:980] {_CAPTURE_MEMORY}
INFO 04-25 10:00:18 model_runner.py:1057] Graph capturing finished in 9 secs.
"""

# 0.5.0, eager: no capture, and the log ends at the KV-cache size.
V050_EAGER_LOG = f"""\
INFO 06-12 10:00:00 llm_engine.py:161] Initializing an LLM engine (v0.5.0) with config: {_CONFIG_031.format(eager=True, device="cuda")}
INFO 06-12 10:00:04 model_runner.py:159] Loading model weights took 0.2389 GB
INFO 06-12 10:00:06 gpu_executor.py:83] # GPU blocks: 9033, # CPU blocks: 7281
"""

V060_LOG = f"""\
INFO 09-05 10:00:00 llm_engine.py:213] Initializing an LLM engine (v0.6.0) with config: {_CONFIG_031.format(eager=False, device="cuda")}
INFO 09-05 10:00:03 model_runner.py:915] Starting to load model /models/opt-125m...
INFO 09-05 10:00:05 model_runner.py:926] Loading model weights took 0.2389 GB
INFO 09-05 10:00:07 gpu_executor.py:122] # GPU blocks: 9033, # CPU blocks: 7281
INFO 09-05 10:00:08 model_runner.py:1217] {_CAPTURE}
INFO 09-05 10:00:08 model_runner.py:1221] {_CAPTURE_MEMORY}
INFO 09-05 10:00:17 model_runner.py:1335] Graph capturing finished in 9 secs.
"""

# 0.7.0: "Memory profiling takes" spans lines (NewLineFormatter repeats the header on each,
# after "\r\n"), the executor names the platform's blocks, and "init engine ... took".
_H070 = "INFO 01-28 10:00:07 worker.py:266] "
V070_LOG = (
    "INFO 01-28 10:00:00 llm_engine.py:232] Initializing an LLM engine (v0.7.0) with config: "
    "model='/models/opt-125m', speculative_config=None, tokenizer='/models/opt-125m', "
    "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, override_neuron_config=None, "
    "tokenizer_revision=None, trust_remote_code=False, dtype=torch.float16, max_seq_len=2048, "
    "download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=1, "
    "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, "
    "enforce_eager=False, kv_cache_dtype=auto,  device_config=cuda, "
    "decoding_config=DecodingConfig(guided_decoding_backend='xgrammar'), seed=0, "
    "served_model_name=/models/opt-125m, num_scheduler_steps=1, enable_prefix_caching=False, "
    'use_async_output_proc=True, compilation_config={"splitting_ops":[],"compile_sizes":[],'
    '"cudagraph_capture_sizes":[4,2,1],"max_capture_size":4}, use_cached_outputs=False, \n'
    "INFO 01-28 10:00:03 model_runner.py:1110] Starting to load model /models/opt-125m...\n"
    "INFO 01-28 10:00:05 model_runner.py:1115] Loading model weights took 0.2389 GB\n"
    f"{_H070}Memory profiling takes 0.91 seconds\r\n"
    f"{_H070}the current vLLM instance can use total_gpu_memory (79.10GiB) x "
    "gpu_memory_utilization (0.90) = 71.19GiB\r\n"
    f"{_H070}model weights take 0.24GiB; non_torch_memory takes 0.14GiB; PyTorch activation "
    "peak memory takes 0.47GiB; the rest of the memory reserved for KV Cache is 70.34GiB.\n"
    "INFO 01-28 10:00:07 executor_base.py:108] # cuda blocks: 128053, # CPU blocks: 7281\n"
    "INFO 01-28 10:00:08 model_runner.py:1430] Capturing cudagraphs for decoding. This may "
    "lead to unexpected consequences if the model is not static. To run the model in eager "
    "mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI. If out-of-memory error "
    "occurs during cudagraph capture, consider decreasing `gpu_memory_utilization` or switching "
    "to eager mode. You can also reduce the `max_num_seqs` as needed to decrease memory usage.\n"
    f"INFO 01-28 10:00:17 model_runner.py:1558] Graph capturing finished in 9 secs, took 0.31 GiB\n"
    "INFO 01-28 10:00:17 llm_engine.py:429] init engine (profile, create kv cache, warmup "
    "model) took 11.52 seconds\n"
)

# release -> (file in the wheel, phrase) of every timing line the logs above print
V0_SOURCE_PHRASES: dict[str, tuple[tuple[str, str], ...]] = {
    "0.3.1": (("engine/llm_engine.py", "Initializing an LLM engine with config: "),
              ("engine/llm_engine.py", "# GPU blocks: "),
              ("worker/model_runner.py", "Capturing the model for CUDA graphs"),
              ("worker/model_runner.py", "Graph capturing finished in ")),
    "0.4.1": (("engine/llm_engine.py", "Initializing an LLM engine (v"),
              ("worker/model_runner.py", "Loading model weights took "),
              ("executor/gpu_executor.py", "# GPU blocks: "),
              ("worker/model_runner.py", "Capturing the model for CUDA graphs"),
              ("worker/model_runner.py", "Graph capturing finished in ")),
    "0.5.0": (("engine/llm_engine.py", "Initializing an LLM engine (v%s) with config: "),
              ("worker/model_runner.py", "Loading model weights took %.4f GB"),
              ("executor/gpu_executor.py", "# GPU blocks: %d, # CPU blocks: %d")),
    "0.6.0": (("engine/llm_engine.py", "Initializing an LLM engine (v%s) with config: "),
              ("worker/model_runner.py", "Starting to load model %s..."),
              ("worker/model_runner.py", "Loading model weights took %.4f GB"),
              ("executor/gpu_executor.py", "# GPU blocks: %d, # CPU blocks: %d"),
              ("worker/model_runner.py", "Capturing the model for CUDA graphs"),
              ("worker/model_runner.py", "Graph capturing finished in %.0f secs.")),
    "0.7.0": (("engine/llm_engine.py", "Initializing an LLM engine (v%s) with config: %s, "),
              ("worker/model_runner.py", "Starting to load model %s..."),
              ("worker/model_runner.py", "Loading model weights took %.4f GB"),
              ("worker/worker.py", "Memory profiling takes "),
              ("executor/executor_base.py", "# %s blocks: %d, # CPU blocks: %d"),
              ("worker/model_runner.py", "Capturing cudagraphs for decoding"),
              ("worker/model_runner.py", "Graph capturing finished in %.0f secs, took %.2f GiB"),
              ("engine/llm_engine.py", "warmup model) took %.2f seconds")),
}


def _only_not_in_log(result, names) -> None:
    for name in names:
        assert result.phases[name] is None, name
        assert result.phase_notes[name] == boot_result.NOT_IN_LOG, name


def test_v031_prints_only_blocks_and_capture() -> None:
    result = read_log(V031_LOG)
    assert (result.state, result.platform, result.vllm_version) == ("measured", "cuda", None)
    assert result.phases["cuda_graph_capture"] == 9.0
    # no load start, no weights line, no version: the rest is not in this release's log
    _only_not_in_log(result, ("framework_bootstrap", "tokenizer_init", "model_loading",
                              "torch_compile", "kv_cache_profiling"))
    assert result.model == "opt-125m"
    assert result.evidence.unread == []


def test_v041_weights_line_ends_loading_and_starts_profiling() -> None:
    result = read_log(V041_LOG)
    assert (result.state, result.vllm_version) == ("measured", "0.4.1")
    assert result.evidence.facts["weights_gib"] == pytest.approx(0.2389)
    # 'Loading model weights took' 05 -> 'Capturing the model' 09; '# GPU blocks' at 07
    assert result.phases["kv_cache_profiling"] == 4.0
    assert result.subphases["kv_cache_profiling.memory_profiling"] == 2.0
    assert result.phases["cuda_graph_capture"] == 9.0
    # loading's start is not logged before 0.6: neither it nor bootstrap is in the log
    _only_not_in_log(result, ("framework_bootstrap", "model_loading", "torch_compile"))


def test_v050_eager_ends_at_the_kv_cache_size() -> None:
    result = read_log(V050_EAGER_LOG)
    assert (result.state, result.vllm_version) == ("measured", "0.5.0")
    assert result.phase_notes["cuda_graph_capture"] == f"{boot_result.NOT_APPLICABLE_PREFIX}: enforce_eager"
    assert result.phases["kv_cache_profiling"] == 2.0
    assert "not in the log" in result.evidence.composition["kv_cache_profiling"]


def test_v060_has_every_span_but_the_tokenizer() -> None:
    result = read_log(V060_LOG)
    assert (result.state, result.vllm_version) == ("measured", "0.6.0")
    assert result.phases["framework_bootstrap"] == 3.0
    assert result.phases["model_loading"] == 2.0
    assert result.phases["kv_cache_profiling"] == 3.0
    assert result.subphases["kv_cache_profiling.memory_profiling"] == 2.0
    assert result.phases["cuda_graph_capture"] == 9.0
    _only_not_in_log(result, ("tokenizer_init", "torch_compile"))
    assert result.evidence.unread == []


def test_v070_init_engine_and_memory_profiling() -> None:
    result = read_log(V070_LOG)
    assert (result.state, result.vllm_version) == ("measured", "0.7.0")
    assert result.phases["model_loading"] == 2.0
    assert result.phases["cuda_graph_capture"] == 9.0
    assert result.phases["kv_cache_profiling"] == pytest.approx(11.52 - 9.0)
    assert result.subphases["kv_cache_profiling.memory_profiling"] == pytest.approx(0.91)
    assert result.evidence.facts["cuda_graph_sizes"] == [1, 2, 4]
    _only_not_in_log(result, ("tokenizer_init", "torch_compile"))
    assert result.evidence.unread == []


def test_v0_cut_inside_graph_capture_is_failed_with_a_lower_bound() -> None:
    cut = V060_LOG.split("Graph capturing finished")[0].rsplit("\n", 1)[0] + "\n"
    result = read_log(cut)
    assert result.state == "failed"
    assert result.phases["kv_cache_profiling"] == 3.0
    assert result.phase_notes["cuda_graph_capture"].startswith(boot_result.UNFINISHED_PREFIX)
    # 'Capturing the model' at 08, the log's last line at 08
    assert result.evidence.facts["unfinished"] == {"phase": "cuda_graph_capture",
                                                      "at_least_s": 0.0}


def test_v0_cpu_log_is_done_at_its_block_count() -> None:
    log = V041_LOG.replace("device_config=cuda", "device_config=cpu").splitlines()[:2]
    log.append("INFO 04-25 10:00:07 cpu_executor.py:72] # CPU blocks: 2340")
    result = read_log("\n".join(log) + "\n")
    assert (result.state, result.platform) == ("measured", "cpu")
    assert result.phase_notes["cuda_graph_capture"].startswith(boot_result.NOT_APPLICABLE_PREFIX)
    assert result.phases["kv_cache_profiling"] == 2.0


def test_v0_restarted_pod_splits_even_without_a_version() -> None:
    from harness.logs.reader import log_boots

    boots = log_boots(V031_LOG + V031_LOG.replace("03-01 10:", "03-01 11:"))
    assert [b.phases["cuda_graph_capture"] for b in boots] == [9.0, 9.0]
