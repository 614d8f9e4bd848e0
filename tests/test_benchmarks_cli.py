"""The benchmark matrix's command line: a failing cell is kept, bad options are refused.

Each case runs ``pytest benchmarks/`` in a subprocess, as a user would; the failing cell is a
real boot killed by a deliberately short ``--boot-timeout``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.matrix.cells import select
from document import read_results

REPO = Path(__file__).resolve().parents[1]
ONE_CELL = ["--loaders", "safetensors", "--compile-caches", "off", "--page-caches", "warm",
            "--entrypoints", "offline"]


def _pytest(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider",
                           "-q", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.mark.boot
def test_a_failed_cell_is_in_the_json_with_its_reason(tmp_path):
    pytest.importorskip("vllm")
    out = tmp_path / "out.json"
    proc = _pytest(*ONE_CELL, "--boot-timeout", "5", "--benchmark-json", str(out))
    assert proc.returncode == 1, proc.stdout[-2000:]
    (result,) = read_results(out)
    assert result.state == "failed" and "timed out" in result.error
    doc = json.loads(out.read_text())
    # no round measured: no time for pytest-benchmark's statistics, so the cell is kept
    # beside them, with the checks it failed
    assert doc["benchmarks"] == []
    assert doc["coldstart"]["unrecorded"][0]["checks_failed"]
    assert doc["machine_info"]["coldstart"]["platform"] == "cpu"
    # the same record was written as the cell ended
    (line,) = Path(f"{out}.cells.jsonl").read_text().splitlines()
    assert json.loads(line)["result"]["state"] == "failed"
    # and --resume does not take a failed cell for a measured one
    check = subprocess.run([sys.executable, "-m", "coldstart", "check", str(out), *ONE_CELL],
                           cwd=REPO, capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and "timed out" in check.stderr


@pytest.mark.parametrize("args, message", [
    (["--matrix", "huge"], "unknown matrix 'huge'"),
    (["--loaders", "pickle"], "unknown loader ['pickle']"),
    (["--models", "gpt-5"], "unknown model 'gpt-5': not a fixture"),
    (["--models", "/no/such/model"], "model folder /no/such/model does not exist"),
    (["--rounds", "0"], "--rounds must be >= 1"),
    (["--boot-timeout", "0"], "--boot-timeout 0.0: must be a number of seconds > 0"),
    (["--boot-timeout", "nan"], "--boot-timeout nan: must be a number of seconds > 0"),
    (["--boot-timeout", "inf"], "--boot-timeout inf: must be a number of seconds > 0"),
    (["--runai-concurrency", "-3"], "--runai-concurrency must be >= 1"),
    (["--runai-concurrency", "0"], "--runai-concurrency must be >= 1"),
    # given without a value: read as no narrowing, each would start the whole matrix
    (["--models", ","], "--models ',': no value; name at least one, or leave the option out"),
    (["--loaders", ""], "--loaders '': no value"),
    (["--entrypoints", " , "], "--entrypoints ' , ': no value"),
])
def test_bad_options_are_refused_before_any_boot(args, message):
    proc = _pytest(*args, "--collect-only", "--allow-busy-machine", timeout=120)
    assert proc.returncode in (4, 2), proc.stdout[-1000:]  # pytest's usage-error exit codes
    assert message in proc.stdout + proc.stderr
    assert "collected" not in proc.stdout  # refused before collection


def test_a_value_named_twice_is_one_cell():
    assert select("smoke", model=["smollm2-135m", "smollm2-135m"],
                  loader=["tensorizer", "safetensors", "tensorizer"]) == select(
        "smoke", loader=["safetensors", "tensorizer"])
    proc = _pytest("--collect-only", "--allow-busy-machine", "--models", "smollm2-135m,smollm2-135m",
                   *ONE_CELL, timeout=120)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-1000:]
    assert "1 test collected" in proc.stdout
    # the id is the cell's, not one suffixed 0 or 1 for a duplicate
    assert "entrypoint=offline]" in proc.stdout


def test_the_smoke_matrix_holds_every_value_of_every_axis():
    from document.boot_result import COMPILE_CACHE_MODES, ENTRYPOINTS, LOADERS, PAGE_CACHE_MODES

    cells = select("smoke")
    assert {c.model for c in cells} == {"smollm2-135m"}
    # compile_cache=relocated (a kept cache copied to another path) is the retained-state
    # matrix's (examples/matrices/retained-state.yaml), not the smoke matrix's: it needs the
    # cold cell's cache and one more compiled boot.
    smoke_caches = tuple(m for m in COMPILE_CACHE_MODES if m != "relocated")
    for axis, values in (("loader", LOADERS), ("compile_cache", smoke_caches),
                         ("page_cache", PAGE_CACHE_MODES), ("entrypoint", ENTRYPOINTS)):
        assert {getattr(c, axis) for c in cells} == set(values), axis
    retained = select(str(Path(__file__).parents[1] / "examples" / "matrices"
                          / "retained-state.yaml"))
    assert {c.compile_cache for c in retained} == {"cold", "warm", "relocated"}
    assert len(select("scaling")) >= 6


def test_each_warm_smoke_cell_reuses_the_cache_of_a_cold_cell_before_it(tmp_path):
    """No unmeasured priming boot in the smoke matrix: the compile cache a cold cell keeps is
    keyed without the page-cache state (the compile does not read it), so a warm cell in
    another page-cache state finds it, as long as the cold cell runs first."""
    from harness.spec import BootSpec

    def key(cell):
        return BootSpec(model=cell.model, model_path=tmp_path, loader=cell.loader,
                        compile_cache=cell.compile_cache, page_cache=cell.page_cache,
                        entrypoint=cell.entrypoint).compile_cache_key()

    cells = select("smoke")
    warm = [i for i, c in enumerate(cells) if c.compile_cache == "warm"]
    assert warm
    for i in warm:
        assert any(c.compile_cache == "cold" and key(c) == key(cells[i]) for c in cells[:i])
    # the key does not ignore what a compile does depend on
    cell = cells[warm[0]]
    assert key(cell) != key(cell.__class__(cell.model, "runai_streamer", cell.compile_cache,
                                           cell.page_cache, cell.entrypoint))
