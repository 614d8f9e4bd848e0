"""What the log reader reads about a boot beyond its phases (issue 27): the release, the
platform, the model and the parallel sizes from the lines that say them; a record that
times no phase is never "measured"; a crash is placed in the phase that was running when
the first error line appeared; model loading from "Loading weights took" where no "Model
loading took" line exists.

Every line below is a real recorded line: from the logs under ``tests/data`` (file named),
else copied from the public thread whose URL is given beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from document import boot_result
from harness.logs.reader import log_boots, not_a_log, read_log

DATA = Path(__file__).resolve().parent / "data"
PUBLIC = DATA / "logs" / "public"
MANIFEST = json.loads((PUBLIC / "manifest.json").read_text(encoding="utf-8"))["logs"]


def _logs_under_data() -> list[Path]:
    # Every file of tests/data the reader takes for a vLLM log (the matrix id lists and
    # JSON documents beside them are not logs).
    out = []
    for path in sorted(DATA.rglob("*")):
        if path.suffix in (".log", ".txt") and path.is_file():
            if not_a_log(path.read_text(encoding="utf-8", errors="replace")) is None:
                out.append(path)
    return out


def _read(lines: str) -> boot_result.BootResult:
    return read_log(lines.strip("\n") + "\n")


# ---------------------------------------------------------------- 1. no zero-phase "measured"
def test_no_log_under_data_is_measured_with_zero_phases() -> None:
    logs = _logs_under_data()
    assert len(logs) >= 60  # the public corpus, the study's sweep, the CPU boot's log
    wrong = []
    for path in logs:
        for boot in log_boots(path):
            if boot.state == "measured" and all(v is None for v in boot.phases.values()):
                wrong.append(str(path.relative_to(DATA)))
    assert not wrong, wrong


def _measured_records(node, where: str):  # noqa: ANN001, ANN202
    """Every record of a JSON document that says it is measured and carries phases."""
    if isinstance(node, dict):
        if node.get("state") == "measured" and isinstance(node.get("phases"), dict):
            yield where, node["phases"]
        for key, value in node.items():
            yield from _measured_records(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _measured_records(value, f"{where}[{i}]")


def test_no_result_under_data_is_measured_with_zero_phases() -> None:
    # The recorded runs (boot, events, scaling, cross-version, merged shards): each "measured"
    # record times at least one phase.
    seen, wrong = 0, []
    for path in sorted(DATA.rglob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        for where, phases in _measured_records(document, path.relative_to(DATA).as_posix()):
            seen += 1
            if all(v is None for v in phases.values()):
                wrong.append(where)
    assert seen >= 50
    assert not wrong, wrong


# https://github.com/vllm-project/vllm/pull/20707 (turn 14): an eager boot's end, the
# printed total and no line timing a phase.
INIT_TOTAL_ONLY = """
(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [gpu_worker.py:277] Available KV cache memory: 112.61 GiB
(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [kv_cache_utils.py:849] GPU KV cache size: 922,496 tokens
(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [kv_cache_utils.py:853] Maximum concurrency for 40,000 tokens per request: 23.06x
(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [core.py:215] init engine (profile, create kv cache, warmup model) took 1.06 seconds
(EngineCore_0 pid=1399537) INFO 08-19 14:58:41 [__init__.py:3575] Cudagraph is disabled under eager mode
"""


def test_a_printed_total_alone_is_skipped_with_the_total_kept() -> None:
    result = _read(INIT_TOTAL_ONLY)
    assert result.state == "skipped"
    assert all(v is None for v in result.phases.values())
    assert result.printed_total_s == pytest.approx(1.06)
    assert result.skip_reason.startswith("0 of 6 phases in the log")
    # the phases inside the total say so; the ones before it are simply not in the log
    assert "inside the printed total" in result.phase_notes["kv_cache_profiling"]
    assert result.phase_notes["kv_cache_profiling"].startswith(boot_result.NOT_IN_LOG)
    assert result.phase_notes["model_loading"] == boot_result.NOT_IN_LOG


def test_a_skipped_log_record_is_never_fitted_or_entered_as_measured(tmp_path: Path) -> None:
    from analysis.ingest import ingest

    log = tmp_path / "total-only.log"
    log.write_text(INIT_TOTAL_ONLY.lstrip("\n"), encoding="utf-8")
    document = ingest([log])
    assert document["benchmarks"] == []
    (kept,) = document["coldstart"]["unrecorded"]
    assert kept["state"] == "skipped" and kept["printed_total_s"] == pytest.approx(1.06)


# ---------------------------------------------------------------- 2. the release
# A public GitHub file the code index holds without naming its repository (a docker-compose
# note, "# vllm crash"): vLLM 0.19.2rc1's serve banner and the engine line after it.
BANNER = """
2026-04-19 12:58:51.742 | (APIServer pid=1) INFO 04-19 10:58:51 [utils.py:299]        █     █     █▄   ▄█
2026-04-19 12:58:51.742 | (APIServer pid=1) INFO 04-19 10:58:51 [utils.py:299]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.19.2rc1.dev8+g4b7f5ea1a
2026-04-19 12:58:51.742 | (APIServer pid=1) INFO 04-19 10:58:51 [utils.py:299]   █▄█▀ █     █     █     █  model   RedHatAI/gemma-4-26B-A4B-it-NVFP4
2026-04-19 12:58:51.742 | (APIServer pid=1) INFO 04-19 10:58:51 [utils.py:299]    ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀
"""


def test_the_banner_names_the_release_and_the_model() -> None:
    result = _read(BANNER)
    assert result.vllm_version == "0.19.2rc1.dev8+g4b7f5ea1a"
    assert "banner" in result.vllm_version_source
    assert result.model_path == "RedHatAI/gemma-4-26B-A4B-it-NVFP4"
    assert result.vllm_version_range is None


# https://github.com/vllm-project/vllm/pull/24162 (turn 0)
SERVER_LINES = """
INFO 09-03 16:28:08 [__init__.py:241] Automatically detected platform cuda.
INFO 09-03 16:28:10 [api_server.py:1882] vLLM API server version 0.10.2.dev378+g4d7fe40fc.d20250829
INFO 09-03 16:28:10 [utils.py:328] non-default args: {'model_tag': '/data/datasets/models-hf/Qwen2.5-0.5B/', 'model': '/data/datasets/models-hf/Qwen2.5-0.5B/', 'tensor_parallel_size': 2}
"""


def test_the_server_line_and_non_default_args() -> None:
    result = _read(SERVER_LINES)
    assert result.vllm_version == "0.10.2.dev378+g4d7fe40fc.d20250829"
    assert "API server version" in result.vllm_version_source
    assert result.platform == "cuda"
    assert result.model == "Qwen2.5-0.5B" and result.model_path.endswith("Qwen2.5-0.5B/")
    assert result.engine_config["tensor_parallel_size"] == 2


def test_without_a_version_line_the_release_is_inferred_and_marked_so() -> None:
    # 001: "[file.py:123]" tags (0.8+) and "torch.compile takes ... in total" (up to 0.11)
    result = read_log(PUBLIC / "001-runai-streamer-v1-serve.log")
    assert result.vllm_version is None
    assert result.vllm_version_range == ">=0.8,<0.12"
    assert result.vllm_version_source.startswith("inferred: ")
    # 022 is 0.6.4.post1 (its thread's title): "# GPU blocks" and the V0 capture wording
    result = read_log(PUBLIC / "022-v0-064-quoted-memory-profiling.log")
    assert result.vllm_version_range == "<0.7"


def test_every_inferred_range_holds_the_release_the_manifest_states() -> None:
    from packaging.specifiers import SpecifierSet

    for entry in MANIFEST:
        # a vllm-ascend release (the plugin's own numbering) says nothing of vLLM's
        if not entry["version"] or "vllm-ascend" in entry["version"]:
            continue
        result = log_boots(PUBLIC / entry["file"])[-1]
        stated = entry["version"].split()[0]
        if result.vllm_version is not None:
            assert result.vllm_version == stated, entry["file"]
        elif result.vllm_version_range is not None:
            assert SpecifierSet(result.vllm_version_range).contains(stated), entry["file"]


# ---------------------------------------------------------------- 2. the platform
@pytest.mark.parametrize("line, platform", [
    # https://github.com/vllm-project/vllm-ascend/issues/644 (turn 9)
    ("INFO 04-30 07:45:43 __init__.py:198] Platform plugin ascend is activated", "npu"),
    # https://github.com/vllm-project/vllm-ascend/issues/622 (turn 0), the config line
    ("INFO 04-22 11:24:16 [llm_engine.py:243] Initializing a V0 LLM engine (v0.8.4) with "
     "config: model='/share/model/Qwen/Qwen2.5-VL-72B-Instruct', tensor_parallel_size=8, "
     "pipeline_parallel_size=1, device_config=npu, seed=None", "npu"),
    # https://github.com/HabanaAI/vllm-fork/issues/776 (turn 0)
    ("INFO 02-04 12:34:57 __init__.py:192] Automatically detected platform hpu.", "hpu"),
    # https://github.com/vllm-project/vllm/pull/14612
    ("INFO 03-13 10:36:11 [__init__.py:256] Automatically detected platform xpu.", "xpu"),
])
def test_the_platform_from_the_line_that_says_it(line: str, platform: str) -> None:
    assert _read(line).platform == platform


def test_the_platform_from_the_lines_that_name_it() -> None:
    # 006: ROCm's aiter kernels ("[aiter] import [module_aiter_enum] under ...")
    assert read_log(PUBLIC / "006-rocm-0111-aiter.log").platform == "rocm"
    # https://github.com/vllm-project/vllm-ascend/issues/19 (turn 13): a traceback through
    # vllm_ascend's worker, no platform line kept
    result = _read('(VllmWorkerProcess pid=25847) ERROR 03-06 01:17:36 multiproc_worker_utils.py:240]'
                   '   File "/usr/local/python3.10/lib/python3.10/site-packages/vllm_ascend/'
                   'worker.py", line 188, in load_model')
    assert result.platform == "npu"
    assert result.evidence.facts["platform_from"].startswith("the lines that name it")


def test_flashinfer_s_jit_is_cuda_and_the_v0_fallback_is_v0() -> None:
    # https://github.com/vllm-project/vllm/pull/35289 (review): FlashInfer is built for CUDA
    # alone; no platform line kept
    flashinfer = _read("(EngineCore_DP0 pid=1329822) 2026-02-26 05:55:51,756 - INFO - "
                       "autotuner.py:256 - flashinfer.jit: [Autotuner]: Autotuning process "
                       "starts ...")
    assert flashinfer.platform == "cuda"
    # https://github.com/vllm-project/vllm/issues/20104 (comment): the V1 engine refuses the
    # device and V0 is built instead
    fallback = _read("""
INFO 06-25 17:38:01 [__init__.py:239] Automatically detected platform cpu.
WARNING 06-25 17:38:13 [arg_utils.py:1684] device type=cpu is not supported by the V1 Engine. Falling back to V0.
""")
    assert fallback.evidence.facts["engine"] == "v0"


def test_rocm_from_torch_s_hip_sources_and_xpu_from_its_kernels() -> None:
    # https://github.com/vllm-project/vllm/issues/27706 (turn 9): a warning raised in torch's
    # HIP sources, no platform line kept
    rocm = _read("(EngineCore_DP0 pid=90) /usr/local/lib/python3.12/dist-packages/vllm/"
                 "model_executor/layers/conv.py:220: UserWarning: Failed validator: GCN_ARCH_NAME "
                 "(Triggered internally at /app/pytorch/aten/src/ATen/hip/tunable/Tunable.cpp:364.)")
    assert rocm.platform == "rocm"
    # https://github.com/SergiioB/intel-arc-pro-b70-inference-cookbook/issues/4 (turn 0)
    xpu = _read("(EngineCore pid=316) WARNING 08-21 18:37:41 [topk_topp_sampler.py:300] xpu "
                "kernel topk_topp_sampler does not support per-request generators. Falling back "
                "to PyTorch-native implementation.")
    assert xpu.platform == "xpu"


def test_a_unit_with_a_progress_bar_glued_to_it() -> None:
    # https://github.com/vllm-project/vllm/pull/36734 (turn 0): the bar's tail drawn over the
    # end of the line
    result = _read("(Worker_TP1 pid=149883) INFO 03-17 11:37:49 [weight_utils.py:574] Time spent "
                   "downloading weights for Qwen/Qwen3.5-122B-A10B-GPTQ-Int4: 152.912391 "
                   "seconds40G [00:20<00:00, 295MB/s]")
    assert result.log_durations["download_weights_s"] == pytest.approx(152.912391)


def test_a_vllm_frame_names_its_platform_as_a_tag_does() -> None:
    # https://github.com/vllm-project/vllm/issues/8660 (turn 0): the worker's traceback runs
    # through vllm/worker/cpu_worker.py; no platform line kept
    result = _read("""
(VllmWorkerProcess pid=143) ERROR 09-20 08:05:48 multiproc_worker_utils.py:226] Exception in worker VllmWorkerProcess while processing method load_model: Torch SPDA does not support logits soft cap., Traceback (most recent call last):
(VllmWorkerProcess pid=143) ERROR 09-20 08:05:48 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.10/dist-packages/vllm/executor/multiproc_worker_utils.py", line 223, in _run_worker_process
(VllmWorkerProcess pid=143) ERROR 09-20 08:05:48 multiproc_worker_utils.py:226]     output = executor(*args, **kwargs)
(VllmWorkerProcess pid=143) ERROR 09-20 08:05:48 multiproc_worker_utils.py:226]   File "/usr/local/lib/python3.10/dist-packages/vllm/worker/cpu_worker.py", line 217, in load_model
""")
    assert result.platform == "cpu"
    # torch's own file of a platform's name is not vLLM's
    torch_frame = _read('ERROR 09-20 08:05:48 [core.py:1]   File "/usr/lib/python3/dist-packages/'
                        'torch/cuda/cpu.py", line 1, in f')
    assert torch_frame.platform is None


def test_a_level_cut_by_the_paste_still_heads_its_line() -> None:
    # https://github.com/vllm-project/vllm/issues/8031 (comment of 2025-04-11): the paste
    # begins inside "INFO"
    result = _read("O 04-11 12:37:49 [llm_engine.py:242] Initializing a V0 LLM engine (v0.8.3) "
                   "with config: model='OPEA/Mistral-Small-3.1-24B-Instruct-2503-int4-AutoRound-"
                   "awq-sym', speculative_config=None")
    assert result.evidence.facts["engine"] == "v0"
    assert result.vllm_version == "0.8.3"


def test_v1_s_first_releases_keep_v0_s_wording_in_their_own_files() -> None:
    # https://github.com/vllm-project/vllm/pull/12569 (description): V1 of 0.7, its runner's
    # "Loading model weights took X GB" and its KV-cache manager's "# GPU blocks"
    result = _read("""
INFO 01-30 03:18:12 gpu_model_runner.py:848] Loading model weights took 67.7229 GB
INFO 01-30 03:19:13 monitor.py:31] torch.compile takes 54.73 s in total
INFO 01-30 03:19:14 kv_cache_utils.py:395] # GPU blocks: 1381
""")
    assert result.evidence.facts["engine"] == "v1"
    assert result.vllm_version_range == "<0.12"  # not "<0.7": the V0 wording is no clue here


def test_a_line_read_as_the_release_its_clues_allow() -> None:
    # https://github.com/vllm-project/speculators/pull/166 (turn 0): a model and its drafter
    # compiled; up to 0.11 "torch.compile takes X s in total" is a running total (5.71, then
    # 6.25 with the drafter's), from 0.12 each line one compile's: the 'dynamic shape'
    # wording (0.11 and older) says which
    result = _read("""
    (EngineCore_DP0 pid=774560) INFO 10-30 14:21:03 [backends.py:634] Dynamo bytecode transform time: 3.38 s
    (EngineCore_DP0 pid=774560) INFO 10-30 14:21:05 [backends.py:279] Compiling a graph for dynamic shape takes 2.33 s
    (EngineCore_DP0 pid=774560) INFO 10-30 14:21:06 [monitor.py:34] torch.compile takes 5.71 s in total
    (EngineCore_DP0 pid=774560) INFO 10-30 14:21:06 [backends.py:634] Dynamo bytecode transform time: 0.39 s
    (EngineCore_DP0 pid=774560) INFO 10-30 14:21:06 [backends.py:279] Compiling a graph for dynamic shape takes 0.14 s
    (EngineCore_DP0 pid=774560) INFO 10-30 14:21:07 [monitor.py:34] torch.compile takes 6.25 s in total
""")
    assert result.phases["torch_compile"] == pytest.approx(6.25)
    assert "torch_compile_total_s" in result.evidence.facts["durations_of_other_releases"]


def test_the_engine_line_s_compilation_is_torch_compile() -> None:
    # https://github.com/vllm-project/vllm/issues/41789 (turn 0): 2026's engine line carries
    # the compile time; the profiling is what is left of it
    result = _read("""
(EngineCore pid=129) INFO 05-06 06:08:29 [gpu_model_runner.py:6204] Graph capturing finished in 9 secs, took 0.46 GiB
(EngineCore pid=129) INFO 05-06 06:08:29 [core.py:299] init engine (profile, create kv cache, warmup model) took 153.19 s (compilation: 92.51 s)
""")
    assert result.phases["torch_compile"] == pytest.approx(92.51)
    assert result.phases["kv_cache_profiling"] == pytest.approx(153.19 - 92.51 - 9)


def test_records_a_host_logged_again_in_its_tracing_format() -> None:
    # https://github.com/ai-dynamo/dynamo/pull/839 (turn 4): NVIDIA Dynamo relogs vLLM's
    # records as "<RFC 3339>  LEVEL module.function: message"; the module is vLLM's file
    result = _read("""
2025-04-28T20:48:37.674Z  INFO cuda.get_attn_backend_cls: Using Flash Attention backend.   
2025-04-28T20:48:38.267Z  INFO parallel_state.initialize_model_parallel: rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0   
2025-04-28T20:48:38.267Z  INFO model_runner.load_model: Starting to load model deepseek-ai/DeepSeek-R1-Distill-Llama-8B...   
2025-04-28T20:48:40.748Z  INFO weight_utils.download_weights_from_hf: Using model weights format ['*.safetensors']   
""")
    assert result.platform == "cuda"  # cuda.py, as a "[cuda.py:N]" tag names it
    assert result.evidence.facts["engine"] == "v0"  # V0's backend line; the format is no clue
    assert result.engine_config["tensor_parallel_size"] == 1
    # its instants are the records' own, not a Kubernetes prefix taken off
    assert result.evidence.facts["log_span_s"] == pytest.approx(3.074)


def test_the_journal_s_prefix_comes_off_in_the_machine_s_language() -> None:
    # https://github.com/1CatAI/1Cat-vLLM/issues/237 (turn 0): journalctl, a Russian month;
    # taken off, a terminal's hard wrap of these lines is undone as of any other
    from harness.logs.normalise import normalise

    pasted = ("авг 18 14:15:02 llm python3[28147]: (Worker_TP2 pid=28147) INFO 08-18 14:15:02 "
              "[awq_sm70_warmup.py:828] Warming up SM70 TurboMind accepted routes")
    assert normalise(pasted) == [pasted.split(": ", 1)[1]]
    wrapped = "\n".join(pasted[i:i + 80] for i in range(0, len(pasted), 80))
    assert normalise(wrapped) == normalise(pasted)


def test_the_ranks_an_assignment_line_names() -> None:
    # https://github.com/vllm-project/vllm/issues/16692 (turn 0): rank 5's line, TP rank 5
    result = _read("\x1b[36m(RayWorkerWrapper pid=861)\x1b[0m INFO 04-16 10:28:07 "
                   "[parallel_state.py:959] rank 5 in world size 16 is assigned as DP rank 0, "
                   "PP rank 0, TP rank 5")
    assert result.engine_config["tensor_parallel_size_at_least"] == 6
    assert "pipeline_parallel_size_at_least" not in result.engine_config  # rank 0: one or more


def test_cuda_s_allocator_names_cuda() -> None:
    # https://github.com/vllm-project/vllm/issues/31273 (turn 0): a ROCm build says "HIP out
    # of memory"
    result = _read("(EngineCore_DP0 pid=556790) torch.OutOfMemoryError: CUDA out of memory. "
                   "Tried to allocate 80.00 MiB. GPU 0 has a total capacity of 139.72 GiB")
    assert result.platform == "cuda"


def test_a_platform_ruled_out_is_not_the_platform() -> None:
    # https://github.com/vllm-project/vllm/issues/17676: vLLM's DEBUG probe names each
    # platform it rules out
    result = _read("""
DEBUG 05-15 10:52:32 [__init__.py:72] Confirmed CUDA platform is available.
DEBUG 05-15 10:52:32 [__init__.py:129] HPU platform is not available because habana_frameworks is not found.
DEBUG 05-15 10:52:32 [__init__.py:150] XPU platform is not available because: No module named 'intel_extension_for_pytorch'
""")
    assert result.platform == "cuda"


# ---------------------------------------------------------------- 2. parallel sizes
def test_tensor_parallel_at_least_from_rank_tags() -> None:
    # 016: Worker_TP0 .. Worker_TP7 (vLLM adds _TPn only when TP > 1)
    result = read_log(PUBLIC / "016-genesis-tp8-hybrid.log")
    assert result.engine_config["tensor_parallel_size_at_least"] == 8
    # 005: Worker_TP0 alone still says TP > 1
    assert read_log(PUBLIC / "005-qwen-vl-worker-tp0.log").engine_config[
        "tensor_parallel_size_at_least"] == 2
    # 032: "(VllmWorker rank=5 pid=3073)": six ranks at least (its thread: TP 8)
    assert read_log(PUBLIC / "032-v1-traceback-only-load.log").engine_config[
        "world_size_at_least"] == 6


def test_rank_tags_with_more_parts_and_a_world_of_one() -> None:
    # https://github.com/vllm-project/vllm/pull/27521 (turn 3): data, tensor and expert
    # parallel ranks in one tag; the TP number ends at the next part, not at a word boundary
    tagged = _read("\n".join(
        f"(Worker_DP0_TP{n}_EP{n} pid={5015 + n}) INFO 10-24 13:23:34 [custom_all_reduce.py:216] "
        "Registering 4355 cuda graph addresses" for n in (5, 2, 0, 7, 1)))
    assert tagged.engine_config["tensor_parallel_size_at_least"] == 8
    # https://github.com/vllm-project/vllm/pull/31740 (turn 9): a world of one rank
    alone = _read("(EngineCore_DP0 pid=120) INFO 01-28 06:35:56 [parallel_state.py:1445] rank 0 "
                  "in world size 1 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, "
                  "EP rank 0")
    assert alone.engine_config["tensor_parallel_size"] == 1
    assert alone.engine_config["pipeline_parallel_size"] == 1
    # https://github.com/pytorch/pytorch/issues/170563 (turn 2): a world of two, two
    # data-parallel engines: one TP rank each
    dp = _read("""
(EngineCore_DP0 pid=1078) INFO 12-23 07:36:32 [parallel_state.py:1418] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, EP rank 0
(EngineCore_DP1 pid=1081) WARNING 12-23 07:36:33 [__init__.py:204] min_p, logit_bias, and min_tokens parameters won't currently work with speculative decoding enabled.
""")
    assert dp.engine_config["tensor_parallel_size"] == 1
    # a world of two says nothing of how it is split
    two = _read("(EngineCore_DP0 pid=120) INFO 01-28 06:35:56 [parallel_state.py:1445] rank 0 "
                "in world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, "
                "EP rank 0")
    assert "tensor_parallel_size" not in two.engine_config


def test_the_manifest_parallel_sizes_hold() -> None:
    for entry in MANIFEST:
        if not entry["tensor_parallel"]:
            continue
        config = log_boots(PUBLIC / entry["file"])[-1].engine_config
        exact = config.get("tensor_parallel_size")
        floor = config.get("tensor_parallel_size_at_least", config.get("world_size_at_least"))
        assert exact in (None, entry["tensor_parallel"]), entry["file"]
        assert floor is None or floor <= entry["tensor_parallel"], entry["file"]


# ---------------------------------------------------------------- 3. where a crash happened
# https://github.com/vllm-project/vllm/pull/51910 (turn 0): a rank dies while the checkpoint
# loads; the excerpt keeps the progress bar and the error, not the frame that loads.
CRASH_IN_LOADING = """
Loading safetensors checkpoint shards:  80% Completed | 39/49 [01:06<00:12,  1.20s/it]
Loading safetensors checkpoint shards:  82% Completed | 40/49 [01:08<00:12,  1.40s/it]
Loading safetensors checkpoint shards:  84% Completed | 41/49 [01:10<00:11,  1.44s/it]
(Worker_TP1 pid=56679) ERROR 08-14 02:42:27 [multiproc_executor.py:923] WorkerProc failed to start.
(Worker_TP1 pid=56679) ERROR 08-14 02:42:27 [multiproc_executor.py:923] Traceback (most recent call last):
(Worker_TP1 pid=56679) ERROR 08-14 02:42:27 [multiproc_executor.py:923]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 890, in worker_main
(Worker_TP1 pid=56679) ERROR 08-14 02:42:27 [multiproc_executor.py:923]     worker = WorkerProc(*args, **kwargs)
"""


def test_a_crash_while_weights_load_is_in_model_loading() -> None:
    result = _read(CRASH_IN_LOADING)
    assert result.state == "failed"
    running = [n for n, note in result.phase_notes.items()
               if note.startswith(boot_result.UNFINISHED_PREFIX)]
    assert running == ["model_loading"]
    assert result.phase_notes["framework_bootstrap"] == boot_result.NOT_IN_LOG


def test_a_crash_after_dynamo_s_transform_is_in_torch_compile() -> None:
    # https://github.com/vllm-project/vllm/issues/15329 (turn 0): V1 compiles inside the
    # profiling run, so the frame (_initialize_kv_caches) does not tell the two apart; the
    # compile had begun (Dynamo's transform) and no Inductor or total line ended it
    result = _read("""
INFO 03-22 09:49:56 [gpu_model_runner.py:1176] Model loading took 14.2717 GB and 3.493209 seconds
INFO 03-22 09:50:03 [backends.py:409] Using cache directory: /root/.cache/vllm/torch_compile_cache/2bfc329985/rank_0_0 for vLLM's torch.compile
INFO 03-22 09:50:03 [backends.py:419] Dynamo bytecode transform time: 7.09 s
ERROR 03-22 09:50:04 [core.py:340] EngineCore hit an exception: Traceback (most recent call last):
ERROR 03-22 09:50:04 [core.py:340]   File "/opt/conda/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 62, in __init__
ERROR 03-22 09:50:04 [core.py:340]     num_gpu_blocks, num_cpu_blocks = self._initialize_kv_caches(
ERROR 03-22 09:50:04 [core.py:340]   File "/opt/conda/lib/python3.10/site-packages/vllm/v1/engine/core.py", line 121, in _initialize_kv_caches
""")
    assert result.state == "failed"
    assert result.evidence.facts["unfinished"]["phase"] == "torch_compile"


def test_what_other_ranks_print_after_the_first_error_does_not_move_it() -> None:
    # The same crash, then (as TP ranks do) another rank's weights line from 012
    # (012-gptq-marlin-tp2-nested.log, line 9): the boot died where the first error was.
    later = ("(EngineCore_0 pid=3933741) (VllmWorker TP0 pid=3933747) INFO 08-17 22:48:21 "
             "[default_loader.py:262] Loading weights took 2.63 seconds")
    result = _read(CRASH_IN_LOADING + later)
    running = [n for n, note in result.phase_notes.items()
               if note.startswith(boot_result.UNFINISHED_PREFIX)]
    assert running == ["model_loading"]


# ---------------------------------------------------------------- 4. model loading from weights
def test_model_loading_from_the_weights_line_on_a_gpu_log() -> None:
    # A CUDA boot's weights line (011-club3090-fp8-mtp.log, line 3) and then the end of a boot
    # (INIT_TOTAL_ONLY, vLLM PR 20707): loading ended with no "Model loading took" line.
    weights = ("(Worker_TP0 pid=184) INFO 07-21 04:56:15 [default_loader.py:430] Loading "
               "weights took 4.53 seconds")
    result = _read(weights + INIT_TOTAL_ONLY)
    assert result.state == "measured"
    assert result.phases["model_loading"] == pytest.approx(4.53)
    assert "no 'Model loading took' line" in result.evidence.composition["model_loading"]


def test_a_log_cut_after_the_weights_line_keeps_model_loading_open() -> None:
    # 011-club3090-fp8-mtp.log ends after "Loading weights took 4.53 seconds": a "Model
    # loading took" (a larger total) may have followed, so the part is not the phase.
    result = read_log(PUBLIC / "011-club3090-fp8-mtp.log")
    assert result.phases["model_loading"] is None
    assert result.subphases["model_loading.load_weights"] == pytest.approx(4.53)
    assert "may be cut off" in result.evidence.composition["model_loading"]


def test_model_loading_took_wins_over_its_parts() -> None:
    # 002-aiperf-v1-dated-stamps.log: both lines; the total is vLLM's own
    result = read_log(PUBLIC / "002-aiperf-v1-dated-stamps.log")
    assert result.phases["model_loading"] == pytest.approx(18.506763)


# ---------------------------------------------------------------- not_a_log sees the reader's lines
def test_not_a_log_reads_the_normalised_lines() -> None:
    # The study's driver total (issue 27's text: "initialize_engine took 9.82 seconds") with
    # the line cut by hand before its unit: only the joined line is one of vLLM's.
    assert not_a_log("initialize_engine took 9.82\nseconds\n") is None
    assert read_log("initialize_engine took 9.82\nseconds\n").printed_total_s == pytest.approx(9.82)
    assert not_a_log("initialize_engine took\nthe morning off\n") is not None


def test_a_unit_cut_short_at_the_end_is_no_time() -> None:
    # A killed boot's file cut inside "seconds" (the property test's log, cut after "s"):
    # its other "took" lines say "seconds", so the boot did not finish.
    from tests.test_logs_property import GPU_0101_LOG

    end = GPU_0101_LOG.index("took 10.61 s") + len("took 10.61 s")
    assert read_log(GPU_0101_LOG[:end]).state == "failed"
    assert read_log(GPU_0101_LOG[:end + 6]).state == "measured"  # "seconds" whole
    # 045's release prints "took X s": its log up to that line, without a newline, reads it
    text = (PUBLIC / "045-cpu-s390x-2026-took-s.log").read_text(encoding="utf-8")
    end = text.index("took 62.71 s") + len("took 62.71 s")
    assert read_log(text[:end]).printed_total_s == pytest.approx(62.71)
