"""The log reader against the installed vLLM's own format strings (needs vLLM installed).

Apart from tests/test_logs_versions.py so the analysis-alone run (tests/analysis-alone.txt,
no vLLM) has nothing to skip; the README's test command, with vLLM, runs this.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harness.logs.scan import scan_lines

# ------------------------------------------------------- the installed vLLM's own strings
# (file under the vllm package, a phrase of the format string, what the line must give).
# The format strings are read from the source with ast, rendered with sample values and fed
# to the reader: a release that rewords one of these lines fails here, not in a study.
SOURCE_LINES = (
    ("model_executor/model_loader/base_loader.py", "Initializing model took", "model_init_s"),
    ("model_executor/model_loader/default_loader.py", "Loading weights took", "load_weights_s"),
    ("v1/worker/gpu_model_runner.py", "Model loading took", "model_loading_s"),
    ("v1/worker/gpu_model_runner.py", "Graph capturing finished", "graph_capture_s"),
    ("compilation/backends.py", "Dynamo bytecode transform time", "dynamo_transform_s"),
    ("compilation/backends.py", "Compiling a graph for compile range", "inductor_compile_s"),
    ("compilation/backends.py", "Directly load the compiled graph", "compiled_graph_load_s"),
    ("compilation/backends.py", "torch.compile cache is disabled", "compile_cache_disabled"),
    ("compilation/monitor.py", "torch.compile took", "torch_compile_total_s"),
    ("compilation/monitor.py", "Initial profiling/warmup run took", "profiling_run_s"),
    ("compilation/decorators.py", "initial profiling/warmup run together",
     "torch_compile_with_warmup_s"),
    ("compilation/decorators.py", "Directly load AOT compilation", "aot_loaded"),
    ("compilation/decorators.py", "saved AOT compiled function", "aot_saved"),
    ("compilation/decorators.py", "Compiling model again due to a load failure",
     "compile_cache_load_failure"),
    ("v1/engine/core.py", "init engine (profile, create kv cache, warmup model) took",
     "init_engine_s"),
    ("v1/engine/core.py", "Initializing a V1 LLM engine", "vllm_version"),
    ("v1/worker/cpu_model_runner.py", "Starting to load model", "model_loading_start"),
    ("v1/worker/cpu_model_runner.py", "Warming up model for the compilation", "warmup_start"),
    ("v1/worker/cpu_model_runner.py", "Warming up done", "warmup_done"),
    ("platforms/__init__.py", "Automatically detected platform", "platform"),
    ("config/model.py", "Resolved architecture", "architecture"),
    ("config/scheduler.py", "Chunked prefill is enabled", "scheduler_config"),
)
_PRINTF = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?[sdfr]")


def _render(fmt: str) -> str:
    # Numbers where vLLM prints numbers; "0.5" also stands in for the %s of sizes and ranges.
    return _PRINTF.sub(lambda m: "3" if m.group(0).endswith("d") else "0.5", fmt)


def _format_strings(path: Path, phrase: str) -> list[str]:
    found = [node.value for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and phrase in node.value]
    return found


@pytest.mark.parametrize(("relpath", "phrase", "key"), SOURCE_LINES,
                         ids=[f"{k}:{p[:30]}" for _, p, k in SOURCE_LINES])
def test_installed_vllm_lines_are_read(installed_vllm, relpath: str, phrase: str, key: str) -> None:
    root, version = installed_vllm
    formats = _format_strings(root / relpath, phrase)
    assert formats, f"{relpath} no longer contains {phrase!r}: vLLM reworded it"
    for fmt in formats:
        line = f"(Worker pid=1) INFO 11-29 10:00:00 [x.py:1] {_render(fmt)}"
        scan = scan_lines([line], version=version)
        assert key in scan.durations or key in scan.marks or key in scan.facts, line
        assert scan.unread == [], line
