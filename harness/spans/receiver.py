"""An OTLP trace receiver in the parent process: where a boot with spans on sends them.

vLLM exports its start-up spans over OTLP when ``otlp_traces_endpoint`` is set: gRPC by
default, HTTP/protobuf with ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf``
(``vllm/tracing/otel.py``). The receiver listens on the loopback, on a free port, for the
length of one boot, and keeps every span of every request (``harness.spans``). It needs the
OTLP protocol messages (``opentelemetry-proto``, installed with vLLM) and, for gRPC, grpcio.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from document.span_records import SpanRecord, spans_of_otlp_json, spans_of_request

__all__ = ["PROTOCOLS", "Receiver", "otlp_receiver"]

PROTOCOLS = ("http/protobuf", "grpc")
# The batch processor exports every 5 s by default and flushes the rest at exit; a process
# the boot's teardown ends by a signal never exits cleanly, so its last spans would be lost.
EXPORT_DELAY_MS = "200"


class Receiver:
    """One boot's receiver: ``endpoint`` to give vLLM, ``spans`` received, ``problems``
    (requests it could not read: said, never dropped silently)."""

    def __init__(self, protocol: str) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"OTLP protocol {protocol!r}: choose one of {', '.join(PROTOCOLS)}")
        self.protocol = protocol
        self.spans: list[SpanRecord] = []
        # Each request as OTLP JSON, the form the OpenTelemetry Collector's file exporter
        # writes: what `coldstart ingest --spans` reads back.
        self.documents: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.requests = 0
        self._lock = threading.Lock()
        self._stop = lambda: None
        self.endpoint = ""

    def add(self, spans: list[SpanRecord], document: dict[str, Any] | None = None) -> None:
        with self._lock:
            self.requests += 1
            self.spans.extend(spans)
            if document is not None:
                self.documents.append(document)

    def add_request(self, request: Any) -> None:
        """A protobuf ExportTraceServiceRequest: its spans, and itself as OTLP JSON."""
        self.add(spans_of_request(request), otlp_json(request))

    def write_otlp_json(self, path: Any) -> None:
        """Every request received, one OTLP JSON object a line (the Collector's file
        exporter's form)."""
        with open(path, "w", encoding="utf-8") as fh:
            for document in self.documents:
                fh.write(json.dumps(document) + "\n")

    def problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)

    def boot_env(self) -> dict[str, str]:
        """What the boot's environment needs beside the endpoint (an engine argument)."""
        return {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": self.protocol,
                "OTEL_BSP_SCHEDULE_DELAY": EXPORT_DELAY_MS,
                "OTEL_SERVICE_NAME": "vllm-coldstart-boot"}

    def start(self) -> None:
        if self.protocol == "grpc":
            self._start_grpc()
        else:
            self._start_http()

    def stop(self) -> None:
        self._stop()

    def _start_http(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
            ExportTraceServiceResponse,
        )

        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    encoding = (self.headers.get("Content-Encoding") or "").lower()
                    if encoding == "gzip":
                        body = gzip.decompress(body)
                    elif encoding == "deflate":
                        body = zlib.decompress(body)
                    if "json" in (self.headers.get("Content-Type") or ""):
                        document = json.loads(body)
                        receiver.add(spans_of_otlp_json(document), document)
                    else:
                        receiver.add_request(ExportTraceServiceRequest.FromString(body))
                except Exception as exc:  # noqa: BLE001 (a bad request is recorded, not fatal)
                    receiver.problem(f"an OTLP request not read: {type(exc).__name__}: {exc}")
                    self.send_response(400)
                    self.end_headers()
                    return
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:  # the boot's console is not ours
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="otlp-http", daemon=True)
        thread.start()
        self.endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"

        def stop() -> None:
            server.shutdown()
            server.server_close()
        self._stop = stop

    def _start_grpc(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

        receiver = self

        class Servicer(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC's name)
                try:
                    receiver.add_request(request)
                except Exception as exc:  # noqa: BLE001
                    receiver.problem(f"an OTLP request not read: {type(exc).__name__}: {exc}")
                return trace_service_pb2.ExportTraceServiceResponse()

        server = grpc.server(ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Servicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self.endpoint = f"http://127.0.0.1:{port}"
        self._stop = lambda: server.stop(grace=1).wait()


def otlp_json(request: Any) -> dict[str, Any]:
    """An ExportTraceServiceRequest as OTLP JSON: protobuf's JSON mapping, with trace and
    span ids in hex as the OTLP JSON encoding asks (protobuf writes bytes as base64)."""
    from google.protobuf.json_format import MessageToDict

    document = MessageToDict(request)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return document


@contextmanager
def otlp_receiver(protocol: str = "http/protobuf") -> Iterator[Receiver]:
    """A receiver listening for the length of the block."""
    receiver = Receiver(protocol)
    receiver.start()
    try:
        yield receiver
    finally:
        receiver.stop()
