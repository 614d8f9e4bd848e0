"""Exported traces -> BootResults: the phases a production boot's spans witness, without
its log (``coldstart ingest --spans``).

One boot per trace: vLLM puts the W3C trace context into the environment while a span is
open, so the EngineCore and worker processes it spawns join the front end's trace. A trace
with no start-up span (only ``llm_request`` spans, the requests after readiness: each request
is a trace of its own) is no boot: its spans join the boot that started before it, so none is
dropped; where no boot did, they are counted. A phase no span covers is None with the
reason, never 0.
"""

from __future__ import annotations

from pathlib import Path

from document.boot_result import PHASE_NAMES, BootResult
from document.evidence import Evidence
from document.span_phases import spans_to_phases
from document.span_records import SpanRecord, read_span_file

__all__ = ["REQUEST_SPANS", "span_boots"]

# Spans of the requests served after readiness: no part of a start-up.
REQUEST_SPANS = frozenset({"llm_request"})


def _platform(spans: list[SpanRecord]) -> str | None:
    # vLLM names the runner in its loading span; "GPU" is CUDA or ROCm alike, so only the
    # CPU one names a platform.
    return "cpu" if any(s.name.endswith("(CPU)") for s in spans) else None


def span_boots(path: str | Path, vllm_version: str | None = None, model: str | None = None
               ) -> tuple[list[BootResult], int]:
    """The boots of an exported trace file, in the order they started, and the number of
    traces that held no start-up span. vLLM's spans name neither its version nor the model:
    ``vllm_version`` picks the span mapping of that release (else the newest) and is
    recorded; ``model`` names the boots (else the file's stem and the trace's number)."""
    spans = read_span_file(path)
    traces: dict[str | None, list[SpanRecord]] = {}
    for s in spans:
        traces.setdefault(s.trace_id, []).append(s)
    boots: list[BootResult] = []
    request_only = 0
    ordered = sorted(traces.values(), key=lambda group: min(s.start_ns for s in group))
    for i, group in enumerate(ordered, 1):
        if all(s.name in REQUEST_SPANS for s in group):
            request_only += 1
            if boots:  # a request the boot before it served: its spans stay with that boot
                kept = boots[-1].evidence.spans or []
                boots[-1].evidence.spans = sorted([*kept, *group],
                                                  key=lambda s: (s.start_ns, s.name))
            continue
        witnessed = spans_to_phases(group, vllm_version)
        phases = {p: witnessed.phases.get(p) for p in PHASE_NAMES}
        boot_spans = sorted(group, key=lambda s: (s.start_ns, s.name))
        measured = any(v is not None for v in phases.values())
        boots.append(BootResult(
            state="measured" if measured else "failed",
            error=None if measured else "no span of the six phases in this trace: names "
                                        + ", ".join(sorted({s.name for s in group})),
            model=model or f"{Path(path).stem}-trace{i}", vllm_version=vllm_version,
            vllm_version_source="given (--vllm-version)" if vllm_version else None,
            source="spans", source_path=str(path),
            platform=_platform(group), phases=phases,
            subphases=dict(witnessed.subphases),
            phase_notes={p: n for p, n in witnessed.notes.items() if phases.get(p) is None},
            evidence=Evidence(spans=boot_spans, span_phases=witnessed)))
    return boots, request_only
