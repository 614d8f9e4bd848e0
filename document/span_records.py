"""vLLM's own OpenTelemetry start-up spans as records: the third witness of a boot's phases.

vLLM instruments its start-up with spans (vllm-project/vllm#31162, emitted when
``otlp_traces_endpoint`` is set). Three ways they reach this suite, one record for all:

- a boot of the harness with spans on: OTLP requests received in the parent
  (``harness.spans.receiver``), decoded by ``spans_of_request`` (protobuf) or
  ``spans_of_otlp_json``;
- the OpenTelemetry Collector's file exporter: JSON Lines, one ``{"resourceSpans": ...}``
  per line, ids in hex, times as nanosecond strings (``spans_of_otlp_json``);
- Jaeger's JSON export, ``{"data": [{"traceID", "spans", "processes"}]}``, times in
  microseconds (``spans_of_jaeger``).

Each span keeps its name, parent, process (the resource's attributes: vLLM sets
``vllm.process_id``, ``vllm.process_kind``, ``vllm.process_name``), start and end on the
Unix clock in nanoseconds, and attributes. No span is dropped: what the phase mapping
(``document.span_phases``) does not know is kept and listed.

Standard library only (protobuf messages are read through their attributes): the analysis
side imports it without vLLM or opentelemetry installed.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from document.errors import UserError

__all__ = ["SpanFileError", "SpanRecord", "read_span_file", "spans_of_jaeger", "spans_of_otlp_json",
           "spans_of_request"]


class SpanFileError(UserError):
    """A file that is not an exported trace: one line, exit code 2."""


class SpanRecord(BaseModel):
    """One span as vLLM sent it: what a phase is read from, and what a timeline shows."""

    name: str
    span_id: str
    parent_id: str | None = None
    trace_id: str | None = None
    # The resource's attributes: which process of the boot sent it.
    process: dict[str, str] = Field(default_factory=dict)
    start_ns: int  # Unix clock, nanoseconds
    end_ns: int
    attributes: dict[str, Any] = Field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue (a JSON object or a protobuf message) as plain Python."""
    if isinstance(value, dict):
        for key in ("stringValue", "boolValue", "doubleValue"):
            if key in value:
                return value[key]
        if "intValue" in value:
            return int(value["intValue"])
        if "arrayValue" in value:
            return [_any_value(v) for v in value["arrayValue"].get("values", [])]
        if "kvlistValue" in value:
            return _attributes(value["kvlistValue"].get("values", []))
        if "bytesValue" in value:
            return value["bytesValue"]
        return None
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    got = getattr(value, kind)
    if kind == "array_value":
        return [_any_value(v) for v in got.values]
    if kind == "kvlist_value":
        return _attributes(got.values)
    if kind == "bytes_value":
        return got.hex()
    return got


def _attributes(pairs: Any) -> dict[str, Any]:
    out = {}
    for kv in pairs:
        if isinstance(kv, dict):
            out[str(kv.get("key"))] = _any_value(kv.get("value", {}))
        else:
            out[kv.key] = _any_value(kv.value)
    return out


def _json_id(value: Any) -> str | None:
    """A trace or span id from OTLP JSON: hex by the spec; base64 where a protobuf-to-JSON
    converter wrote bytes its own way (16 or 8 bytes either way)."""
    if not value:
        return None
    text = str(value)
    if len(text) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except ValueError:
        return text


def _process(resource_attributes: dict[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in resource_attributes.items() if v is not None}


def spans_of_request(request: Any) -> list[SpanRecord]:
    """The spans of one OTLP ``ExportTraceServiceRequest`` (the protobuf message)."""
    out = []
    for resource_spans in request.resource_spans:
        process = _process(_attributes(resource_spans.resource.attributes))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                out.append(SpanRecord(
                    name=span.name, span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex() or None,
                    trace_id=span.trace_id.hex() or None, process=process,
                    start_ns=int(span.start_time_unix_nano),
                    end_ns=int(span.end_time_unix_nano),
                    attributes=_attributes(span.attributes)))
    return out


def spans_of_otlp_json(document: Any) -> list[SpanRecord]:
    """The spans of one OTLP JSON object (``{"resourceSpans": [...]}``)."""
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
        raise SpanFileError("not OTLP JSON: no 'resourceSpans' list")
    out = []
    for resource_spans in document["resourceSpans"]:
        process = _process(_attributes(resource_spans.get("resource", {}).get("attributes", [])))
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                out.append(SpanRecord(
                    name=str(span.get("name", "")), span_id=_json_id(span.get("spanId")) or "",
                    parent_id=_json_id(span.get("parentSpanId")),
                    trace_id=_json_id(span.get("traceId")), process=process,
                    start_ns=int(span.get("startTimeUnixNano", 0)),
                    end_ns=int(span.get("endTimeUnixNano", 0)),
                    attributes=_attributes(span.get("attributes", []))))
    return out


def spans_of_jaeger(document: Any) -> list[SpanRecord]:
    """The spans of Jaeger's JSON export (the UI's "Download JSON", the query API's
    ``/api/traces``): microseconds, CHILD_OF references, per-trace process tables."""
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise SpanFileError("not Jaeger JSON: no 'data' list")
    out = []
    for trace in document["data"]:
        processes = {pid: {"service.name": str(p.get("serviceName", "")),
                           **{str(t.get("key")): str(t.get("value")) for t in p.get("tags", [])}}
                     for pid, p in (trace.get("processes") or {}).items()}
        for span in trace.get("spans", []):
            parent = next((r.get("spanID") for r in span.get("references", [])
                           if r.get("refType") == "CHILD_OF"), None)
            start_us, duration_us = int(span.get("startTime", 0)), int(span.get("duration", 0))
            out.append(SpanRecord(
                name=str(span.get("operationName", "")), span_id=str(span.get("spanID", "")),
                parent_id=parent, trace_id=span.get("traceID") or trace.get("traceID"),
                process=processes.get(span.get("processID"), {}),
                start_ns=start_us * 1000, end_ns=(start_us + duration_us) * 1000,
                attributes={str(t.get("key")): t.get("value") for t in span.get("tags", [])}))
    return out


def read_span_file(path: str | Path) -> list[SpanRecord]:
    """Every span of an exported trace file: OTLP JSON (one object, or JSON Lines as the
    Collector's file exporter writes) or Jaeger JSON. SpanFileError names what the file is
    not."""
    p = Path(path)
    text = p.read_text(encoding="utf-8", errors="replace").strip()
    if not text:
        raise SpanFileError(f"{p}: empty: no spans")
    try:
        documents = [json.loads(text)]
    except json.JSONDecodeError:
        try:
            documents = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise SpanFileError(f"{p}: neither JSON nor JSON Lines ({exc.msg}, line "
                              f"{exc.lineno}): not an exported trace") from None
    spans: list[SpanRecord] = []
    for document in documents:
        if isinstance(document, dict) and "data" in document:
            spans += spans_of_jaeger(document)
        elif isinstance(document, dict) and "resourceSpans" in document:
            spans += spans_of_otlp_json(document)
        else:
            raise SpanFileError(f"{p}: neither OTLP JSON ('resourceSpans') nor Jaeger JSON "
                              "('data'): not an exported trace")
    if not spans:
        raise SpanFileError(f"{p}: an exported trace without a span")
    return spans
