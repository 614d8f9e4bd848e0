"""vLLM's own OpenTelemetry start-up spans: the third witness of a boot's phases.

Span records from OTLP or Jaeger exports (``records``), the OTLP receiver a boot sends them to
(``receiver``), spans mapped to phases (``phases``), the boots of a span file (``boots``) and
the witness a boot records (``witness``).

Imported by their own path, not from here: ``harness.spans.boots``, ``harness.spans.witness``
(they import a module that imports this package).
"""

from harness.spans.phases import (
    AGREEMENT_ABS_S,
    AGREEMENT_REL,
    PR49037_PHASES,
    SpanPhases,
    span_map_for,
    spans_to_phases,
)
from harness.spans.receiver import otlp_receiver
from harness.spans.records import SpanFileError, SpanRecord, read_span_file

__all__ = ["AGREEMENT_ABS_S", "AGREEMENT_REL", "PR49037_PHASES", "SpanFileError", "SpanPhases",
           "SpanRecord", "otlp_receiver", "read_span_file", "span_map_for", "spans_to_phases"]
