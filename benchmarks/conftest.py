"""pytest glue for the benchmark matrix: options, parametrization, provenance, failed cells.

pytest-benchmark is used as designed (``benchmark.pedantic`` for single-shot cold
measurements, ``extra_info`` for the phases, its hooks for machine info and the JSON) and
extended only through its hooks. Three of its habits are corrected here:

- it times each round around the whole benchmarked call; a cell's statistics are instead its
  measured rounds' own ``wall_s`` (launch to ready), so pytest-benchmark's table, JSON and
  ``compare`` state the same time per cell as ``extra_info`` and ``analysis.compare``;

- an errored benchmark is left out of its JSON, and no JSON is written when nothing was
  measured: every cell's BootResult is also appended to ``<json>.cells.jsonl`` as the cell
  ends, cells missing from ``benchmarks`` go under ``coldstart.unrecorded`` (with the checks
  that failed, as ``checks_failed`` beside the result), and the document is written by us
  when pytest-benchmark writes none;
- ``--resume FILE`` skips cells measured in FILE with all their checks passing (on the same
  machine and vLLM, unless ``--resume-any-machine``, and with the same ``--rounds``) and
  carries their entries over.
"""

from __future__ import annotations

import functools
import math
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.matrix.cells import AXES, BUILT_IN, Cell, Plan, cell_from_params, split_values
from benchmarks.preflight import Preflight, mark_cannot_boot_here, plan_here
from benchmarks.resume import resumable_entries
from benchmarks.split import Selection, ShardPlugin
from document import (
    AXIS_OPTIONS,
    STATS_TIMER,
    CellsLogLine,
    Entry,
    RunDocument,
    RunMeta,
    UnrecordedCell,
    measured_walls,
    run_of_pytest_benchmark,
    wall_stats,
    write_run,
)
from document.boot_result import DOCUMENT_KEY, SCHEMA_VERSION, BootResult, matrix_cells
from document.secrets import environment_secrets, scrub


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vllm-coldstart", "vLLM cold-start benchmark matrix")
    group.addoption("--matrix", default="smoke",
                    help=f"which matrix to run: {', '.join(BUILT_IN)} (benchmarks/matrices/), "
                         "or a matrix file's path (default: smoke)")
    for axis, option in AXIS_OPTIONS.items():
        group.addoption(f"--{option}", dest=f"coldstart_{axis}", default=None,
                        help=f"comma-separated values: narrow the {axis} axis")
    group.addoption("--rounds", type=int, default=None,
                    help="boots per cell (default: the matrix file's rounds, else 1)")
    group.addoption("--spans", action="store_const", const="spans", default=None,
                    help="every boot also records vLLM's OpenTelemetry start-up spans and "
                         "holds them against the probes (a matrix file: witness: spans)")
    group.addoption("--boot-timeout", type=float, default=None,
                    help="hard limit for one boot, in seconds (default: the matrix file's "
                         "boot_timeout, else 900)")
    group.addoption("--budget-baseline", type=Path, default=None,
                    help="a saved run (JSON): each cell fails when its median round is slower "
                         "than --budget-ratio x the same cell there, in the time to ready or "
                         "in a phase that took 2 s or more there")
    group.addoption("--budget-ratio", type=float, default=1.25,
                    help="with --budget-baseline: the slowdown allowed (default 1.25)")
    group.addoption("--resume", type=Path, default=None,
                    help="a JSON of an earlier run: skip its cells measured with every check "
                         "passing, keep their results (same machine, vLLM and --rounds)")
    group.addoption("--resume-any-machine", action="store_true",
                    help="with --resume: accept cells measured on another machine or vLLM")
    group.addoption("--runai-concurrency", type=int, default=4,
                    help="Run:ai Model Streamer reader threads (default 4)")
    group.addoption("--cells-log", type=Path, default=None,
                    help="JSON-lines file each cell's result is appended to as it ends "
                         "(default: beside --benchmark-json, else .benchmarks/)")


def _selected_cells(config: pytest.Config) -> list[Cell]:
    from benchmarks.matrix.file_schema import MatrixFileError

    try:
        narrow = {axis: split_values(config.getoption(f"coldstart_{axis}"), AXIS_OPTIONS[axis])
                  for axis in AXES}
        plan, cells, note = plan_here(config.getoption("matrix"), narrow)
        if note:
            print(f"vllm-coldstart: {note}", file=sys.stderr)
        config._coldstart_plan = plan
        return cells
    except MatrixFileError as exc:
        # A matrix file that cannot run: its one line (FILE:LINE: key: ...), exit 2, no boot.
        pytest.exit(str(exc), returncode=2)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


DEFAULT_ROUNDS = 1
DEFAULT_BOOT_TIMEOUT_S = 900.0


def run_setting(config: pytest.Config, name: str) -> Any:
    """``rounds`` / ``boot_timeout``: the command line's, else the matrix file's, else ours."""
    given = config.getoption(name)
    if given is not None:
        return given
    plan: Plan | None = getattr(config, "_coldstart_plan", None)
    from_file = getattr(plan.settings, name, None) if plan and plan.settings else None
    if from_file is not None:
        return from_file
    return DEFAULT_ROUNDS if name == "rounds" else DEFAULT_BOOT_TIMEOUT_S


def pytest_configure(config: pytest.Config) -> None:
    """Bad options stop the session here, once, with pytest's usage exit code."""
    if not hasattr(config.option, "matrix"):
        return
    config._coldstart_cells = _selected_cells(config)
    rounds = run_setting(config, "rounds")
    if rounds < 1:
        raise pytest.UsageError("--rounds must be >= 1")
    # Refused rather than worked around: --benchmark-disable asks pytest-benchmark to run each
    # benchmark once and keep no entry, so the other rounds would neither run nor have an
    # entry whose extra_info.rounds could hold them. Someone who asked for N boots per cell
    # would get 1 without a word.
    if (rounds > 1 and config.getoption("benchmark_disable", False)
            and not config.getoption("benchmark_enable", False)):
        raise pytest.UsageError(f"--rounds {rounds} needs pytest-benchmark enabled: "
                                "--benchmark-disable runs each cell once; drop it "
                                "(or add --benchmark-enable)")
    boot_timeout = run_setting(config, "boot_timeout")
    if not (boot_timeout > 0 and math.isfinite(boot_timeout)):  # NaN compares false
        raise pytest.UsageError(f"--boot-timeout {boot_timeout}: must be a number of "
                                "seconds > 0")
    if config.getoption("runai_concurrency") < 1:
        raise pytest.UsageError("--runai-concurrency must be >= 1 (reader threads)")
    if not (config.getoption("budget_ratio") > 0 and math.isfinite(config.getoption("budget_ratio"))):
        raise pytest.UsageError(f"--budget-ratio {config.getoption('budget_ratio')}: must be a "
                                "number > 0")
    baseline = config.getoption("budget_baseline")
    if baseline is not None:
        from benchmarks.budgets import read_baseline

        try:
            config._coldstart_baseline = read_baseline(baseline)
        except ValueError as exc:
            raise pytest.UsageError(f"--budget-baseline {exc}") from None
    resume = config.getoption("resume")
    config._coldstart_resumed = {} if not resume else resumable_entries(
        resume, rounds=run_setting(config, "rounds"),
        any_machine=config.getoption("resume_any_machine"))
    config._coldstart_signals = _stop_cleanly_on_signals()
    config.pluginmanager.register(Selection(config), "coldstart-selection")


def _stop_cleanly_on_signals() -> dict[int, Any]:
    """SIGTERM and SIGHUP (a cancelled CI job, ``timeout``, a closed terminal) become
    KeyboardInterrupt for the whole session, as Ctrl-C is: pytest then ends the session
    through its hooks and the JSON of the cells measured so far is written. Python's default
    would end the process on the spot, JSON and cells log unwritten. During a boot the
    harness installs its own handler (it kills the boot first) and puts this one back. A
    signal the process ignores (nohup's SIGHUP) stays ignored. Returns what was there."""
    from harness.processes import raise_on_end_signals

    return raise_on_end_signals(lambda name: KeyboardInterrupt(f"{name}: stopping the run"))


def pytest_unconfigure(config: pytest.Config) -> None:
    from harness.processes import restore_signal_handlers

    restore_signal_handlers(getattr(config, "_coldstart_signals", {}))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if not set(AXES) <= set(metafunc.fixturenames):
        return
    cells = metafunc.config._coldstart_cells
    if any(c.extra for c in cells):
        # The matrix file's own axes travel as one more argument (flattened into the JSON's
        # params by _complete); without them the parameters are exactly today's five.
        metafunc.parametrize(",".join([*AXES, "cell_extra"]),
                             [(*(c.params()[a] for a in AXES), dict(c.extra)) for c in cells],
                             ids=[c.id for c in cells])
    else:
        metafunc.parametrize(",".join(AXES), [tuple(c.params().values()) for c in cells],
                             ids=[c.id for c in cells])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_cannot_boot_here(items, getattr(config, "_coldstart_plan", None),
                          getattr(config, "_coldstart_cells", []))


@pytest.fixture
def cell_extra() -> dict[str, Any]:
    """A cell's axes beyond the five: none unless the matrix file has some (parametrized)."""
    return {}


class ColdstartSession:
    """What the session knows across cells: results, resumed entries, measured floors."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.rounds = run_setting(config, "rounds")
        self.boot_timeout = run_setting(config, "boot_timeout")
        self.plan: Plan | None = getattr(config, "_coldstart_plan", None)
        # vLLM's spans as a third witness: the command line's --spans, else the matrix
        # file's witness; None is off, else the OTLP protocol.
        witness = config.getoption("spans") or (self.plan.settings.witness
                                                if self.plan and self.plan.settings else None)
        self.spans = {"spans": "http/protobuf", "spans-grpc": "grpc"}.get(witness or "")
        self.baseline: dict[str, Any] = getattr(config, "_coldstart_baseline", {})
        self.runai_concurrency = config.getoption("runai_concurrency")
        self.results: dict[str, BootResult] = {}
        self.checks_failed: dict[str, list[str]] = {}
        self.floors: dict[tuple, dict[str, Any]] = {}
        self.resumed: dict[str, dict[str, Any]] = getattr(config, "_coldstart_resumed", {})
        self.preflight = Preflight(self.plan)  # what cannot boot here ends before a boot
        log = config.getoption("cells_log")
        if log is None:
            bench_json = config.getoption("benchmark_json", None)
            log = (Path(f"{bench_json}.cells.jsonl") if bench_json
                   else Path(".benchmarks/coldstart-cells.jsonl"))
        self.cells_log = Path(log)
        self.cells_log.parent.mkdir(parents=True, exist_ok=True)

    def record(self, cell: Cell, result: BootResult, checks_failed: list[str] | None = None,
               rounds: list[BootResult] | None = None):
        import json

        self.results[cell.id] = result
        self.checks_failed[cell.id] = checks_failed or []
        with open(self.cells_log, "a") as fh:
            # machine_info: a shard whose JSON is never written is merged from this log
            # (analysis.merge), and its cells must still say which machine they ran on.
            # matrix, run_rounds, commit_info: what analysis.merge checks a log's shard by
            # (a shard of another matrix, rounds the JSON does not say, another commit).
            line = CellsLogLine(cell=cell.id, params=cell.params(),
                                machine_info=_machine_info(self.config),
                                matrix=self.config.getoption("matrix"),
                                matrix_cells=_matrix_cells(self.config),
                                run_rounds=self.rounds, commit_info=_commit_info(self.config),
                                checks_failed=checks_failed or [], result=result,
                                rounds=rounds or [result])
            fh.write(json.dumps(scrub(line.model_dump(mode="json"), environment_secrets()))
                     + "\n")


@functools.cache
def _machine_info(config: pytest.Config) -> dict[str, Any]:
    """The ``machine_info`` the JSON gets (pytest-benchmark's and ours), once a session."""
    info = config.hook.pytest_benchmark_generate_machine_info(config=config)
    config.hook.pytest_benchmark_update_machine_info(config=config, machine_info=info)
    return info


@functools.cache
def _commit_info(config: pytest.Config) -> dict[str, Any]:
    """pytest-benchmark's ``commit_info`` of this checkout, once a session."""
    info = config.hook.pytest_benchmark_generate_commit_info(config=config)
    config.hook.pytest_benchmark_update_commit_info(config=config, commit_info=info)
    return info


def _matrix_cells(config: pytest.Config) -> dict[str, Any]:
    """The whole selection's digest (before ``--splits``): every shard of a run alike; and
    that of every cell of the matrix it was selected from."""
    selection: Selection | None = config.pluginmanager.get_plugin("coldstart-selection")
    selected = selection.ids if selection is not None else None
    if selected is None:  # collection never finished
        selected = [c.id for c in getattr(config, "_coldstart_cells", [])]
    plan: Plan | None = getattr(config, "_coldstart_plan", None)
    return matrix_cells(selected, of=[c.id for c in plan.cells] if plan else None)


def pytest_sessionstart(session: pytest.Session) -> None:
    """``--splits N --group I`` (pytest-split): cells without a stored duration get an
    estimate, and a group left without cells is no failure (benchmarks/split.py)."""
    config = session.config
    if ShardPlugin.wanted(config):
        def open_session() -> None:  # as the coldstart fixture does: the JSON gets written
            config._coldstart = ColdstartSession(config)

        config.pluginmanager.register(ShardPlugin(open_session, run_setting(config, "rounds")),
                                      "coldstart-shard")


@pytest.fixture(scope="session")
def coldstart(pytestconfig: pytest.Config) -> ColdstartSession:
    session = ColdstartSession(pytestconfig)
    pytestconfig._coldstart = session  # read back by the JSON hooks
    return session


def _first_line(text: str, fallback: str) -> str:
    return (text.strip().splitlines() or [fallback])[0][:1000]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A cell that errors before it has a BootResult is still recorded as failed."""
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    session = getattr(item.config, "_coldstart", None)
    if callspec is None or session is None or not set(AXES) <= set(callspec.params):
        return
    cell = cell_from_params(callspec.params)
    if cell.id in session.results or cell.id in session.resumed:
        return
    if report.failed or report.skipped:
        state = "skipped" if report.skipped else "failed"
        exc = call.excinfo.value if call.excinfo else None
        reason = _first_line(str(exc) if exc is not None else report.longreprtext,
                             type(exc).__name__ if exc is not None else state)
        session.record(cell, BootResult(
            state=state, error=reason if state == "failed" else None,
            skip_reason=reason if state == "skipped" else None,
            log_tail=report.longreprtext[-3000:] if state == "failed" else None,
            **cell.params(base_only=True), axes=dict(cell.extra)))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    yield
    _time_by_rounds(item)


def _time_by_rounds(item: pytest.Item) -> None:
    """Make pytest-benchmark's statistics of a cell the ``wall_s`` of its measured rounds.

    pytest-benchmark timed each round around the whole boot call, which goes on after
    readiness (the answer, the shutdown, reading the events): 3-4 s more than ``wall_s`` per
    boot on the 2-core CPU machine, a second time per cell that disagreed with the first.
    Its ``Stats`` object is replaced by one of the rounds' ``wall_s`` (pytest-benchmark's own
    class, so every field follows its rules) after the cell has run, whatever ended it: the
    table, the JSON, ``--benchmark-compare-fail`` and ``pytest-benchmark compare`` all read
    it. Failed and skipped rounds have no wall time and add none (``extra_info.rounds`` keeps
    them). A cell with no measured round has no statistics: its entry is marked errored,
    which pytest-benchmark leaves out of the JSON, and the cell is kept in
    ``coldstart.unrecorded`` with the checks it failed.
    """
    fixture = getattr(item, "funcargs", {}).get("benchmark")
    timed = getattr(fixture, "stats", None)  # None before any round ran, or when disabled
    if timed is None:
        return
    walls = measured_walls(fixture.extra_info)
    timed.stats = wall_stats(walls)
    timed.options["timer"] = STATS_TIMER
    if not walls:
        fixture.has_error = True


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    from benchmarks.provenance import machine_facts

    machine_info[DOCUMENT_KEY] = machine_facts().as_json()


def _complete(config: pytest.Config, doc: dict) -> dict:
    """Add what pytest-benchmark leaves out: resumed cells, unrecorded cells, our metadata."""
    session: ColdstartSession | None = getattr(config, "_coldstart", None)
    resumed = getattr(config, "_coldstart_resumed", {})
    run = run_of_pytest_benchmark(doc)
    for entry in run.benchmarks:  # the matrix file's own axes, as plain parameters beside the five
        params = entry.params or {}
        if isinstance(params.get("cell_extra"), dict):
            entry.params = {**{k: v for k, v in params.items() if k != "cell_extra"},
                            **params["cell_extra"]}
    present = {cell_from_params(e.params).id
               for e in run.benchmarks if set(AXES) <= set(e.params or {})}
    for cid, entry in resumed.items():
        if cid not in present:
            run.add_cell(Entry.model_validate(entry))
            present.add(cid)
    # The checks a cell failed travel with it: benchmarks.check reads them here too (with
    # --benchmark-disable every measured cell is here).
    unrecorded = [UnrecordedCell.of(r, session.checks_failed[cid])
                  for cid, r in (session.results.items() if session else [])
                  if cid not in present]
    run.coldstart = RunMeta(
        schema_version=SCHEMA_VERSION,
        matrix=config.getoption("matrix"),
        matrix_cells=_matrix_cells(config),
        rounds=run_setting(config, "rounds"),
        # What made the run, for the report: pytest's own arguments as given.
        command=shlex.join(["pytest", *config.invocation_params.args]),
        written_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        host=platform.node(),
        pid=os.getpid(),
        unrecorded=unrecorded)
    # pytest-benchmark writes this document itself (not write_run): the same scrub, in place.
    clean = scrub(run.named().as_json(), environment_secrets())
    doc.clear()
    doc.update(clean)
    return doc


def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list,
                                 output_json: dict) -> None:
    _complete(config, output_json)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    session = getattr(config, "_coldstart", None)
    if session is None or not session.results:
        return
    from benchmarks.summary import HEADING, summary_lines

    path = config.getoption("benchmark_json", None)
    terminalreporter.write_sep("-", HEADING)
    for line in summary_lines(session.results, path, session.checks_failed):
        terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """pytest-benchmark writes no JSON when no cell got as far as a measurement: write the
    document ourselves then, so failed, skipped and resumed cells are not lost."""
    config = session.config
    path = config.getoption("benchmark_json", None)
    bench_session = getattr(config, "_benchmarksession", None)
    if path is None or not hasattr(config, "_coldstart") or (bench_session
                                                              and bench_session.benchmarks):
        return
    from benchmarks.provenance import machine_facts

    # The commit, as pytest-benchmark's own document has it: a shard whose every cell failed
    # is still refused by analysis.merge beside shards of another commit.
    doc = RunDocument.new(machine_info={DOCUMENT_KEY: machine_facts().as_json()},
                          commit_info=_commit_info(config)).as_json()
    write_run(_complete(config, doc), path)
