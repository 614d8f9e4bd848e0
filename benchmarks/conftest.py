"""pytest glue for the benchmark matrix: options, parametrization, provenance, failed cells.

pytest-benchmark is used as designed (``benchmark.pedantic`` for single-shot cold
measurements, ``extra_info`` for the phases, its hooks for machine info and the JSON) and
extended only through its hooks. Two of its habits are corrected here:

- an errored benchmark is left out of its JSON: every cell's BootResult is also written to a
  JSON-lines log as soon as the cell ends, and cells missing from ``benchmarks`` (failed
  setup, skipped) go under ``coldstart.unrecorded`` in the JSON;
- ``--resume FILE`` skips cells already measured in FILE and carries their entries over.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.matrix import AXES, MATRICES, Cell, select
from harness.schema import (
    DOCUMENT_KEY,
    SCHEMA_VERSION,
    BootResult,
    cell_id,
    new_document,
    write_document,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vllm-coldstart", "vLLM cold-start benchmark matrix")
    group.addoption("--matrix", default="smoke", choices=sorted(MATRICES),
                    help="which matrix to run (default: smoke)")
    for axis, plural in (("model", "models"), ("loader", "loaders"),
                         ("compile_cache", "compile-caches"), ("page_cache", "page-caches"),
                         ("entrypoint", "entrypoints")):
        group.addoption(f"--{plural}", dest=f"coldstart_{axis}", default=None,
                        help=f"comma-separated values: narrow the {axis} axis")
    group.addoption("--rounds", type=int, default=1, help="boots per cell (default 1)")
    group.addoption("--boot-timeout", type=float, default=900.0,
                    help="hard limit for one boot, in seconds (default 900)")
    group.addoption("--resume", type=Path, default=None,
                    help="a JSON of an earlier run: skip its measured cells, keep their results")
    group.addoption("--runai-concurrency", type=int, default=4,
                    help="Run:ai Model Streamer reader threads (default 4)")
    group.addoption("--cells-log", type=Path, default=None,
                    help="JSON-lines file each cell's result is appended to as it ends "
                         "(default: beside --benchmark-json, else .benchmarks/)")


def _selected_cells(config: pytest.Config) -> list[Cell]:
    narrow = {}
    for axis in AXES:
        raw = config.getoption(f"coldstart_{axis}")
        narrow[axis] = [v.strip() for v in raw.split(",") if v.strip()] if raw else None
    try:
        return select(config.getoption("matrix"), **narrow)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not set(AXES) <= set(metafunc.fixturenames):
        return
    cells = _selected_cells(metafunc.config)
    metafunc.parametrize(",".join(AXES), [tuple(c.params().values()) for c in cells],
                         ids=[c.id for c in cells])


class ColdstartSession:
    """What the session knows across cells: results, resumed entries, measured floors."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.rounds = config.getoption("rounds")
        if self.rounds < 1:
            raise pytest.UsageError("--rounds must be >= 1")
        self.boot_timeout = config.getoption("boot_timeout")
        self.runai_concurrency = config.getoption("runai_concurrency")
        self.results: dict[str, BootResult] = {}
        self.floors: dict[tuple, dict[str, Any]] = {}
        self.resumed: dict[str, dict[str, Any]] = {}
        resume = config.getoption("resume")
        if resume is not None:
            self.resumed = _measured_entries(resume)
        log = config.getoption("cells_log")
        if log is None:
            bench_json = config.getoption("benchmark_json", None)
            log = (Path(f"{bench_json}.cells.jsonl") if bench_json
                   else Path(".benchmarks/coldstart-cells.jsonl"))
        self.cells_log = Path(log)
        self.cells_log.parent.mkdir(parents=True, exist_ok=True)

    def record(self, cell: Cell, result: BootResult) -> None:
        self.results[cell.id] = result
        with open(self.cells_log, "a") as fh:
            fh.write(json.dumps({"cell": cell.id, "params": cell.params(),
                                 "result": result.model_dump(mode="json")}) + "\n")


def _measured_entries(path: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise pytest.UsageError(f"--resume {path}: cannot read it ({exc})") from None
    out = {}
    for entry in doc.get("benchmarks", []):
        params = entry.get("params") or {}
        if (entry.get("extra_info") or {}).get("state") == "measured" and set(AXES) <= set(params):
            out[cell_id({a: params[a] for a in AXES})] = entry
    return out


@pytest.fixture(scope="session")
def coldstart(pytestconfig: pytest.Config) -> ColdstartSession:
    session = ColdstartSession(pytestconfig)
    pytestconfig._coldstart = session  # read back by the JSON hook
    return session


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A cell that errors before it has a BootResult is still recorded as failed."""
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    session = getattr(item.config, "_coldstart", None)
    if callspec is None or session is None or not set(AXES) <= set(callspec.params):
        return
    cell = Cell(*(callspec.params[a] for a in AXES))
    if cell.id in session.results or cell.id in session.resumed:
        return
    if report.failed or report.skipped:
        state = "skipped" if report.skipped else "failed"
        reason = str(call.excinfo.value) if call.excinfo else report.longreprtext[-500:]
        fields = cell.params()
        session.record(cell, BootResult(
            state=state, error=reason.splitlines()[0][:1000] if state == "failed" else None,
            skip_reason=reason.splitlines()[0][:1000] if state == "skipped" else None,
            log_tail=report.longreprtext[-3000:] if state == "failed" else None, **fields))


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    from benchmarks.provenance import machine_facts

    machine_info["coldstart"] = machine_facts()


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list,
                                 output_json: dict) -> None:
    session: ColdstartSession | None = getattr(config, "_coldstart", None)
    present = {cell_id({a: b["params"][a] for a in AXES})
               for b in output_json.get("benchmarks", []) if set(AXES) <= set(b.get("params") or {})}
    unrecorded = []
    if session is not None:
        for cid, entry in session.resumed.items():
            if cid not in present:
                output_json["benchmarks"].append(entry)
                present.add(cid)
        unrecorded = [r.model_dump(mode="json") for cid, r in session.results.items()
                      if cid not in present]
    output_json[DOCUMENT_KEY] = {
        "schema_version": SCHEMA_VERSION,
        "matrix": config.getoption("matrix"),
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": platform.node(),
        "pid": os.getpid(),
        "unrecorded": unrecorded,
    }


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """pytest-benchmark writes no JSON at all when no cell got as far as a measurement:
    write the document ourselves then, so that the failed and skipped cells are not lost."""
    config = session.config
    coldstart: ColdstartSession | None = getattr(config, "_coldstart", None)
    path = config.getoption("benchmark_json", None)
    bench_session = getattr(config, "_benchmarksession", None)
    if coldstart is None or path is None or (bench_session and bench_session.benchmarks):
        return
    doc = new_document(unrecorded=list(coldstart.results.values()))
    doc[DOCUMENT_KEY]["matrix"] = config.getoption("matrix")
    write_document(doc, path)
