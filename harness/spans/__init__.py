"""vLLM's own OpenTelemetry start-up spans: the third witness of a boot's phases.

The OTLP receiver a boot sends them to (``receiver``), the boots of a span file
(``boots``) and the witness a boot records (``witness``); the span records and their
phases are the document's (``document.span_records``, ``document.span_phases``).
Imported by their own path: this package re-exports nothing.
"""
