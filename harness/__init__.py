"""One isolated, instrumented vLLM boot -> BootResult. Imports without vLLM."""

from harness.schema import PHASE_NAMES, PHASES, SCHEMA_VERSION, BootResult

__all__ = ["PHASES", "PHASE_NAMES", "SCHEMA_VERSION", "BootResult"]
