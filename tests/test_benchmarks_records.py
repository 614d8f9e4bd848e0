"""benchmarks.check: what it refuses, and how it reads the axis options.

Malformed files are fed to its ``main``; none of this boots anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import check
from benchmarks.matrix import Cell, split_values
from harness.schema import BootResult, benchmark_entry, new_document

REPO = Path(__file__).resolve().parents[1]
CELL = Cell("smollm2-135m", "safetensors", "cold", "warm", "offline")


def _measured() -> BootResult:
    phases = {"framework_bootstrap": 3.0, "tokenizer_init": 0.2, "model_loading": 1.0,
              "torch_compile": 4.0, "kv_cache_profiling": 0.5}
    return BootResult(state="measured", **CELL.params(), phases=phases, wall_s=8.75,
                      residual_s=0.05, platform="cpu",
                      phase_notes={"cuda_graph_capture": "not applicable on cpu"})


@pytest.mark.parametrize("content, what", [
    ([_measured().model_dump(mode="json")], "a list of results, not the JSON of"),
    (_measured().model_dump(mode="json"), "a single BootResult, not the JSON of"),
    # the shapes harness.schema.read_results refuses, in its words
    ({"benchmarks": {"a": 1}}, "'benchmarks', 'coldstart' or its 'unrecorded' has the wrong"),
    ({"benchmarks": ["x"]}, "benchmark 0 is a JSON str, not an object"),
    ({"benchmarks": [], "coldstart": {"schema_version": "1"}}, "schema_version '1' is not"),
    ({"machine_info": {}}, "no 'benchmarks' list and not a BootResult"),
    ("a string", "not a result document"),
])
def test_check_refuses_what_is_not_a_benchmark_document(tmp_path, capsys, content, what):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    assert check.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"benchmarks.check: error: {path}: {what}")


def test_check_as_a_command_exits_2_on_a_list(tmp_path):
    path = tmp_path / "list.json"
    path.write_text(json.dumps([_measured().model_dump(mode="json")]))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.check", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == (f"benchmarks.check: error: {path}: a list of results, not the JSON "
                           "of `pytest benchmarks/ --benchmark-json`\n")


def test_check_reads_axis_values_as_pytest_does(tmp_path, capsys):
    path = tmp_path / "out.json"
    doc = new_document([benchmark_entry(_measured(), name="cell", params=CELL.params())])
    doc["benchmarks"][0]["extra_info"]["checks_failed"] = []
    path.write_text(json.dumps(doc))
    spaced = ["--loaders", " safetensors ", "--compile-caches", "cold, ", "--page-caches",
              " warm", "--entrypoints", "offline ,"]
    assert check.main([str(path), *spaced]) == 0
    assert f"{CELL.id}: measured, ready in 8.8 s" in capsys.readouterr().out
    assert split_values(" a , b,,") == ["a", "b"]
    assert split_values(" , ") is None and split_values(None) is None
