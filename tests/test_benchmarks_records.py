"""benchmarks.check and the benchmark options: what they refuse, how they read values.

Malformed files are fed to benchmarks.check's ``main``; options are tried with
``--collect-only``. None of this boots anything.
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
ONE_CELL = ["--loaders", "safetensors", "--compile-caches", "cold", "--page-caches", "warm",
            "--entrypoints", "offline"]
CELL = Cell("smollm2-135m", "safetensors", "cold", "warm", "offline")


def test_rounds_with_benchmark_disable_is_refused(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider", "-q",
         "--collect-only", "--rounds", "3", "--benchmark-disable", *ONE_CELL],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout[-1000:]
    assert "--rounds 3 needs pytest-benchmark enabled" in proc.stderr
    # one round, or benchmarks turned back on, is what the user asked for
    for args in (["--rounds", "1", "--benchmark-disable"],
                 ["--rounds", "3", "--benchmark-disable", "--benchmark-enable"]):
        ok = subprocess.run([sys.executable, "-m", "pytest", "benchmarks/", "-p",
                             "no:cacheprovider", "-q", "--collect-only",
                             "--allow-busy-machine", *args, *ONE_CELL],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
        assert ok.returncode == 0, ok.stdout[-1000:] + ok.stderr[-1000:]


# ---------------------------------------------------------------- benchmarks.check


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
