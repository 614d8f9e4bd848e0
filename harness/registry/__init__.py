"""What to instrument and what to read, per vLLM version range: the one registry.

A vLLM release moves functions and rewords log lines. Everything version-specific the suite
knows lives in the registry, as data: the functions the probes wrap (``WRAP_TARGETS``,
harness.registry.probe_targets) and the log patterns the log reader matches (``LOG_PATTERNS``,
harness.registry.patterns), each tagged with the version range it holds for
(harness.registry.version_range). Supporting a new release is adding entries, not editing code
elsewhere.

What a working boot should observe (``COMPILE_CACHE_EXPECTATIONS``) and the upstream
behaviours seen to depart from it on some machines (``KNOWN_DEFECTS``: keyed by vLLM
version, platform, CPU vendor and ISA flags, GPU model, compiled or eager, dtype) are data
too (harness.registry.expectations); harness.correctness judges a boot with them, recording a known
defect when it shows and noting it when it does not, never failing on either.

This package is the registry's one entry: every name is importable from here. Imports
without vLLM.
"""

from __future__ import annotations

from harness.registry.expectations import (
    COMPILE_CACHE_EXPECTATIONS,
    KNOWN_DEFECTS,
    CompileCacheExpectation,
    KnownDefect,
    Symptom,
    expected_compile_cache,
    known_defects_for,
)
from harness.registry.patterns import (
    BOOT_START_REGEX,
    COMMAND_LINE_REGEX,
    LOG_PATTERNS,
    LOG_PROBE_PAIRS,
    PLATFORM_ABSENT,
    PLATFORM_CLUES,
    PLATFORM_FROM_SOURCE,
    PLATFORM_OF_LOCAL_VERSION,
    PLATFORM_OF_PLUGIN,
    PROCESS_FIRST_LINES_REGEX,
    TRACEBACK_COMPILER_PATH,
    TRACEBACK_FUNCTIONS,
    TRACEBACK_LOADER_PATH,
    V0_ONLY_KEYS,
    V0_PROCESSES,
    V0_SOURCES,
    V0_SOURCES_BEFORE_0_11,
    V1_ONLY_KEYS,
    V1_PROCESSES,
    V1_SOURCES,
    VERSION_CLUE_KEYS,
    VERSION_CLUE_LINES,
    VERSION_CLUE_SOURCES,
    VERSION_CLUES,
    LogPattern,
    log_patterns_for,
)
from harness.registry.probe_targets import (
    LOADER_CLASSES,
    SHIMS,
    WRAP_TARGETS,
    Shim,
    WrapTarget,
    defines,
    missing_probe_targets,
    shims_for,
    source_of,
    wrap_targets_for,
)
from harness.registry.version_range import ANY_VERSION, VersionRange, in_range

__all__ = [
    "ANY_VERSION", "BOOT_START_REGEX", "COMMAND_LINE_REGEX", "COMPILE_CACHE_EXPECTATIONS",
    "KNOWN_DEFECTS",
    "LOADER_CLASSES", "LOG_PATTERNS", "LOG_PROBE_PAIRS", "PLATFORM_ABSENT", "PLATFORM_CLUES",
    "PLATFORM_FROM_SOURCE", "PLATFORM_OF_LOCAL_VERSION", "PLATFORM_OF_PLUGIN", "PROCESS_FIRST_LINES_REGEX", "SHIMS",
    "TRACEBACK_COMPILER_PATH", "TRACEBACK_FUNCTIONS", "TRACEBACK_LOADER_PATH",
    "V0_ONLY_KEYS", "V0_PROCESSES", "V0_SOURCES", "V0_SOURCES_BEFORE_0_11", "V1_ONLY_KEYS",
    "V1_PROCESSES", "V1_SOURCES", "VERSION_CLUES",
    "VERSION_CLUE_KEYS", "VERSION_CLUE_LINES", "VERSION_CLUE_SOURCES", "WRAP_TARGETS",
    "CompileCacheExpectation", "KnownDefect", "LogPattern", "Shim", "Symptom", "VersionRange",
    "WrapTarget", "defines", "expected_compile_cache", "in_range", "known_defects_for",
    "log_patterns_for", "missing_probe_targets", "shims_for", "source_of", "wrap_targets_for",
]
