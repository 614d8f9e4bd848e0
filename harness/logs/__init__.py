"""The log reader: a vLLM start-up log into the phase schema (``reader.read_log``), the suite's
second source after the probes.

Lines parsed and placed in time (``lines``), the boots of a log (``boots``), a boot's lines
matched against the registry's patterns (``scan``, ``facts``, ``normalise``) and composed into
phases (``compose``: the V1 engine and the V0 engine).
"""

from harness.logs.boots import split_boots
from harness.logs.check import check_manifest, fact_agrees
from harness.logs.facts import engine_config
from harness.logs.reader import model_from_filename, not_a_log, read_boots, read_log
from harness.logs.scan import HAS_DIGIT, LOOKS_TIMED, scan_lines

__all__ = ["HAS_DIGIT", "LOOKS_TIMED", "check_manifest", "engine_config", "fact_agrees",
           "model_from_filename", "not_a_log", "read_boots", "read_log", "scan_lines",
           "split_boots"]
