"""One cell of the matrix: boot real vLLM, in isolation, and assert on its phases.

    pytest benchmarks/ --benchmark-json out.json [--matrix smoke|scaling|full] [--loaders ...]
"""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest

from benchmarks.matrix.cells import Cell
from document import CellInfo, headline_round
from document.boot_result import NOT_APPLICABLE_PREFIX, BootResult
from document.evidence import WeightsFacts
from harness import pagecache
from harness.boot import discard_work_dir, prepare_boot
from harness.compile_cache import keep_as_warm_cache
from harness.correctness import judge_answer, judge_compile_cache
from harness.launch import launch_boot
from harness.registry import LOADER_CLASSES, expected_compile_cache
from harness.spec import BootError, BootSpec, installed_vllm_version

MAX_RESIDUAL_SHARE = 0.05


class _RoundNotBooted(Exception):
    """A round's setup ended it before the boot: the page-cache state could not be reached
    (a skipped result) or preparing raised (a failed one). The result travels with it.

    An ``Exception`` (pytest's Skipped is not one), so pytest-benchmark stops the rounds and
    marks the benchmark as errored instead of failing on empty statistics.
    """

    def __init__(self, result: BootResult):
        super().__init__(result.reason)
        self.result = result


def _model_of(cell: Cell, coldstart):
    from benchmarks.matrix.file_schema import Model

    plan = coldstart.plan
    found = plan.models.get(cell.model) if plan is not None else None
    return found or Model(cell.model, "fixture", cell.model)


def _spec(cell: Cell, coldstart) -> BootSpec:
    """The boot of a cell: its model (a fixture, a folder or a hub id) with the matrix file's
    engine arguments and variables, the model entry's over the file's, the cell's axes over
    both; each value's source is recorded with the result (BootSpec.settings_used)."""
    from benchmarks.matrix.file_schema import ENV_NAME
    from fixtures.build import ensure_model
    from fixtures.catalog import CATALOG

    model = _model_of(cell, coldstart)
    settings = coldstart.plan.settings if coldstart.plan is not None else None
    engine_kwargs: dict = {}
    env: dict = {}
    provenance: dict = {}
    own = dict(model.engine_args) | dict(model.env)  # the cell's axis holds these already
    axis = {k: v for k, v in cell.extra if k not in own}
    layers = [(dict(settings.engine_args) if settings else {},
               dict(settings.env) if settings else {}, "matrix"),
              (dict(model.engine_args), dict(model.env), "matrix model"),
              ({k: v for k, v in axis.items() if not ENV_NAME.match(k)},
               {k: str(v) for k, v in axis.items() if ENV_NAME.match(k)}, "axis")]
    for args, variables, source in layers:
        engine_kwargs.update(args)
        env.update(variables)
        provenance.update({k: source for k in [*args, *variables]})
    engine_kwargs.pop("enforce_eager", None)  # the cell's compile_cache says it: off is eager
    location: dict = {}
    if model.kind == "fixture":
        location["model_path"] = ensure_model(model.source)
    elif model.kind == "path":
        location["model_path"] = Path(model.source)
    else:
        location.update(hub_id=model.source, revision=model.revision)
    tensorizer_uri = None
    if cell.loader == "tensorizer":
        from fixtures.tensorized import ensure_tensorized

        if "model_path" not in location:
            raise BootError("loader tensorizer needs a model folder to serialize; "
                            f"{model.source} is a hub id")
        tensorizer_uri = ensure_tensorized(location["model_path"])
    fixture = model.kind == "fixture"
    return BootSpec(model=cell.model, **location, loader=cell.loader,
                    compile_cache=cell.compile_cache, page_cache=cell.page_cache,
                    entrypoint=cell.entrypoint, timeout_s=coldstart.boot_timeout,
                    runai_concurrency=coldstart.runai_concurrency,
                    tensorizer_uri=tensorizer_uri, engine_kwargs=engine_kwargs, env=env,
                    provenance=provenance, axes=dict(cell.extra), fixture_defaults=fixture,
                    # Random weights answer nonsense; the real model's answer is checked
                    # (against a reference of the fixture: a user's model has none here).
                    check_answer=fixture and CATALOG[cell.model].kind == "real",
                    spans=coldstart.spans)


def _budgets(cell: Cell, coldstart) -> dict:
    from benchmarks.budgets import cell_budgets

    settings = coldstart.plan.settings if coldstart.plan is not None else None
    baseline = coldstart.baseline or {}
    return cell_budgets(dict(settings.budgets) if settings else {},
                        dict(_model_of(cell, coldstart).budgets),
                        (baseline.get("cells") or {}).get(cell.id),
                        coldstart.config.getoption("budget_ratio"),
                        baseline.get("name", "baseline"))


def _storage_floor(spec: BootSpec, coldstart) -> dict:
    """A plain sequential read of the same weight files in the same page-cache state."""
    key = (spec.model_ref, spec.loader, spec.page_cache)
    if key not in coldstart.floors:
        coldstart.floors[key] = pagecache.sequential_read_gbps(spec.weight_payload_files(),
                                                               spec.page_cache)
    return coldstart.floors[key]


def check_cell(result: BootResult, cell: Cell, rounds: list[BootResult],
               rounds_asked: int | None = None, judge_answers: bool = True) -> list[str]:
    """Every assertion a cell makes, as a list of what failed (empty: all held).

    Never raises: a check that cannot be evaluated (a registry with no expectation for this
    vLLM or platform, a version it cannot parse) is itself a failed check, so the measured
    result it was judging stays on record.
    """
    failed: list[str] = []
    try:
        _check_cell(result, cell, rounds, rounds_asked, failed, judge_answers)
    except Exception as exc:
        failed.append(f"checks stopped by {type(exc).__name__}: {exc}")
    return failed


def _check_cell(result: BootResult, cell: Cell, rounds: list[BootResult],
                rounds_asked: int | None, failed: list[str], judge_answers: bool) -> None:
    def expect(ok: bool, message: str) -> None:
        if not ok:
            failed.append(message)

    if rounds_asked is not None:
        expect(len(rounds) == rounds_asked,
               f"{len(rounds)} of {rounds_asked} rounds run: a round's setup ended the cell")
    bad_rounds = [r for r in rounds if r.state != "measured"]
    expect(not bad_rounds, f"{len(bad_rounds)} of {len(rounds)} rounds not measured: "
                           f"{[r.reason for r in bad_rounds]}")
    if result.state != "measured":
        failed.append(f"boot {result.state}: {result.reason}")
        return
    wall = result.wall_s
    expect(abs(result.phase_sum_s() + result.residual_s - wall) <= 1e-6 * max(wall, 1.0),
           "phases + residual != wall")
    expect(result.residual_s <= MAX_RESIDUAL_SHARE * wall,
           f"residual {result.residual_s:.2f} s is {result.residual_s / wall:.1%} of the boot "
           f"({result.evidence.residual_parts_s}): a phase boundary moved in this vLLM")
    for name in ("framework_bootstrap", "tokenizer_init", "model_loading", "kv_cache_profiling"):
        expect(bool(result.phases[name]), f"{name} not measured: {result.phase_notes.get(name)}")
    if cell.compile_cache == "off":
        expect(result.phases["torch_compile"] is None, "compile_cache=off, but something compiled")
    else:
        expect(bool(result.phases["torch_compile"]), "torch_compile not measured")
    if result.platform != "cuda":
        expect(result.phase_notes.get("cuda_graph_capture", "").startswith(NOT_APPLICABLE_PREFIX),
               f"cuda_graph_capture on {result.platform}: {result.phases['cuda_graph_capture']}")

    # A probe that found no function to wrap, or failed, leaves its phase short or empty.
    problems = result.evidence.probe_problems
    expect(not problems, f"probe problems: {problems}")

    ran = " ".join(result.evidence.loader_targets)
    expect(LOADER_CLASSES[cell.loader] in ran, f"asked for {cell.loader}, probes saw {ran!r}")

    # The page cache was as the cell says: proven by what weight loading read from storage.
    weights = result.evidence.weights or WeightsFacts()
    if cell.page_cache == "evicted" and weights.storage_read_bytes is not None:
        expect(weights.storage_read_bytes >= 0.5 * weights.file_bytes,
               f"page_cache=evicted, but weight loading read only "
               f"{weights.storage_read_bytes:,} of {weights.file_bytes:,} B from storage")

    # The registry may know no expectation for this vLLM or platform: that is one failed
    # check, and the checks after it still run.
    try:
        expected = expected_compile_cache(result.vllm_version, result.platform,
                                          cell.compile_cache)
        failed.extend(judge_compile_cache(result, expected))
    except Exception as exc:
        failed.append(f"compile cache {result.compile_cache_observed!r} not judged: "
                      f"{type(exc).__name__}: {exc}")

    # The answer proves the engine works: judged against a float32 reference of this machine
    # from the cell's own (pristine) fixture, never by its greedy text (harness.correctness).
    if judge_answers and result.evidence.answer is not None:
        try:
            verdict = judge_answer(result)
            failed.extend(f"answer {result.response_text!r}: {f}" for f in verdict.failures)
        except Exception as exc:
            failed.append(f"answer {result.response_text!r} not judged: "
                          f"{type(exc).__name__}: {exc}")
    if cell.entrypoint == "serve":
        expect(bool(result.ready_s) and result.ttft_s is not None, "serve: no ready / first token")
    expect(not result.evidence.survivors, "processes of the boot outlived it")


def _not_booted(cell: Cell, spec: BootSpec, **fields) -> BootResult:
    return BootResult(**cell.params(base_only=True), axes=dict(cell.extra),
                      model_path=spec.model_ref, vllm_version=installed_vllm_version(),
                      **fields)


def test_cold_start(benchmark, coldstart, model, loader, compile_cache, page_cache, entrypoint,
                    cell_extra):
    cell = Cell(model, loader, compile_cache, page_cache, entrypoint,
                extra=tuple(cell_extra.items()))
    if cell.id in coldstart.resumed:
        pytest.skip(f"measured in {coldstart.config.getoption('resume')} (--resume)")
    refused = coldstart.preflight.check(cell)
    if refused is not None:  # recorded with its line by conftest's makereport hook
        state, why = refused
        if state == "skipped":
            pytest.skip(f"pre-flight: {why}")
        pytest.fail(f"pre-flight: {why}", pytrace=False)
    try:
        spec = _spec(cell, coldstart)
        spec.check()
    except BootError as exc:
        pytest.fail(f"cannot boot this cell: {exc}", pytrace=False)
    try:
        floor = _storage_floor(spec, coldstart)
    except pagecache.PageCacheError as exc:
        # The same unreachable state would stop the boot's own preparation: skipped, as
        # prepare_boot has it, not failed.
        skipped = _not_booted(cell, spec, state="skipped", skip_reason=f"storage floor: {exc}")
        coldstart.record(cell, skipped)
        pytest.skip(skipped.skip_reason)
    rounds: list[BootResult] = []

    def setup():
        try:
            prepared = prepare_boot(spec)
        except Exception as exc:  # priming or preparing broke: this round is a failed record
            raise _RoundNotBooted(_not_booted(
                cell, spec, state="failed",
                error=f"round {len(rounds) + 1} setup: {type(exc).__name__}: {exc}",
                log_tail=traceback.format_exc()[-3000:])) from exc
        if isinstance(prepared, BootResult):
            raise _RoundNotBooted(prepared)
        return (prepared,), {}

    def boot(prepared):
        try:
            result = launch_boot(prepared)
        except Exception as exc:  # the harness itself broke: still a record, never a loss
            result = BootResult(state="failed", error=f"harness: {type(exc).__name__}: {exc}",
                                **cell.params(base_only=True), axes=dict(cell.extra),
                                evidence={"work_dir": str(prepared.work)})
        rounds.append(result)
        return result

    try:
        benchmark.pedantic(boot, setup=setup, rounds=coldstart.rounds, iterations=1)
    except _RoundNotBooted as exc:
        lost = exc.result
        if not rounds:  # nothing booted: this result is the whole cell
            coldstart.record(cell, lost)
            if lost.state == "skipped":
                pytest.skip(lost.skip_reason)
            pytest.fail(f"{lost.error}\n{lost.log_tail}", pytrace=False)
        rounds.append(lost)
        # The rounds before it booted and were timed: pytest-benchmark would drop the entry
        # (and with it every round) for the error; the cell's checks report the lost round.
        benchmark.has_error = False
    except KeyboardInterrupt as exc:
        # Ctrl-C, or SIGTERM / SIGHUP (BootInterrupted during a boot, the session's handler
        # between boots: both KeyboardInterrupt; pytest-benchmark handles any other error): pytest
        # ends the session after this cell. pytest-benchmark has already added this cell's
        # stats; with no round timed, writing the JSON fails on them ("min() arg is an empty
        # sequence") and every cell measured before this one is lost with it.
        try:
            _keep_stopped_cell(benchmark, coldstart, cell, spec, floor, rounds, exc)
        finally:  # keeping it must not turn the stop into a failed cell the session goes past
            raise exc

    result = headline_round(rounds)
    _compare_to_floor(result, floor)
    # On record before anything that judges or copies it. Until the checks have run the cell
    # does not count as passing (--resume and benchmarks.check read checks_failed).
    _on_record(benchmark, result, rounds, floor, ["the checks did not complete"])
    failures = check_cell(result, cell, rounds, rounds_asked=coldstart.rounds)
    from benchmarks.budgets import judge

    failures += judge(result, _budgets(cell, coldstart))
    try:
        keep_as_warm_cache(spec, result)
    except Exception as exc:  # a full disk costs the warm cache, not the measurement
        failures.append(f"keeping the compile cache as the warm cache: "
                        f"{type(exc).__name__}: {exc}")
    # Again: keep_as_warm_cache points evidence.compile_cache_dir at the kept copy.
    _on_record(benchmark, result, rounds, floor, failures)
    coldstart.record(cell, result, checks_failed=failures, rounds=rounds)
    if not failures:
        for r in rounds:
            discard_work_dir(r)
    assert not failures, "\n".join(failures) + (f"\n{result.log_tail}" if result.log_tail else "")


def _compare_to_floor(result: BootResult, floor: dict) -> None:
    weights = result.evidence.weights
    if weights and weights.load_gbps and floor.get("gbps"):
        weights.storage_floor_gbps = floor["gbps"]
        weights.fraction_of_floor = weights.load_gbps / floor["gbps"]


def _on_record(benchmark, result: BootResult, rounds: list[BootResult], floor: dict,
               checks_failed: list[str]) -> None:
    benchmark.extra_info.update(CellInfo.of_rounds(
        rounds or [result], headline=result, storage_floor=floor,
        checks_failed=checks_failed).as_json())


def _keep_stopped_cell(benchmark, coldstart, cell: Cell, spec: BootSpec, floor: dict,
                       rounds: list[BootResult], exc: BaseException) -> None:
    """Keep what a cell measured before a round was stopped by ``exc`` (Ctrl-C, SIGTERM).

    The stopped round is a failed one and a failed check, so the cell never passes
    benchmarks.check nor is reused by --resume. The rounds timed before it keep
    pytest-benchmark's entry, as when a round's setup ends the cell; with none timed the entry
    is dropped (``has_error``) and the cell lands in ``coldstart.unrecorded``. Nothing slow is
    done here (no warm-cache copy): whoever stopped the run wants it to stop.
    """
    # First, before anything here can fail: stats are None with --benchmark-disable, and
    # empty (falsy) until pytest-benchmark has timed a round.
    timed = bool(benchmark.stats)
    benchmark.has_error = not timed
    reason = f"round {len(rounds) + 1} stopped by {type(exc).__name__}" + (
        f": {exc}" if str(exc) else "")
    rounds.append(_not_booted(cell, spec, state="failed", error=reason))
    result = headline_round(rounds)
    failures = [reason]
    if result.state == "measured":
        # Not the answer: its reference may take a process of its own, and the run must stop.
        failures += check_cell(result, cell, rounds, judge_answers=False)
    if timed:
        _compare_to_floor(result, floor)
        _on_record(benchmark, result, rounds, floor, failures)
    coldstart.record(cell, result, checks_failed=failures, rounds=rounds)
