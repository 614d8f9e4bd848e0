"""Cut a scan of a V0-engine log (LLMEngine) into the six phases: most from timestamps."""

from __future__ import annotations

from harness import schema
from harness.log_compose import (
    compile_subphases,
    framework_bootstrap_s,
    model_loading_s,
    not_below_zero,
    span_s,
    torch_compile_s,
)
from harness.log_facts import capture_not_applicable, compile_disabled
from harness.log_scan import LogScan


def compose_v0(scan: LogScan) -> tuple[dict[str, float | None], dict[str, float | None],
                                        dict[str, str], dict[str, str]]:
    """The V0 engine (LLMEngine, vLLM 0.3 .. 0.10): fewer lines, most phases from timestamps.

    What each release prints (read from its wheel): 0.3 the engine line, "# GPU blocks" and
    graph capture; 0.4 and 0.5 also "Loading model weights took X GB" (the end of loading,
    its start is not logged); 0.6 also "Starting to load model"; 0.7 also "init engine
    (profile, create kv cache, warmup model) took" and "Memory profiling takes". A phase
    whose start or end its release does not print is not in the log. 0.8 .. 0.10 (the V0
    engine kept beside V1) print durations of their own where a loader does ("Loading weights
    took X seconds" on CPU): a printed duration is read before a span of whole-second stamps.
    """
    d, facts = scan.durations, scan.facts
    phases: dict[str, float | None] = {}
    subphases: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    how: dict[str, str] = {}
    resolution = facts.get("timestamp_resolution_s", 1.0)
    stamps = f"log timestamps (resolution {resolution:g} s)"

    phases["framework_bootstrap"] = framework_bootstrap_s(scan, how)
    phases["tokenizer_init"] = d.get("tokenizer_init_s")
    loading = model_loading_s(scan, how)
    if loading is None:
        loading = span_s(scan, "model_loading_start", "v0_weights_loaded")
        if loading is not None:
            how["model_loading"] = (f"{stamps}: 'Starting to load model' -> 'Loading model "
                                    "weights took'")
    phases["model_loading"] = loading
    subphases["model_loading.model_init"] = d.get("model_init_s")
    subphases["model_loading.load_weights"] = d.get("load_weights_s")

    if compile_disabled(facts):
        notes["torch_compile"] = f"{schema.NOT_APPLICABLE_PREFIX}: compilation disabled (level 0)"
        compile_s: float | None = None
    else:
        compile_s = torch_compile_s(scan, how)
    phases["torch_compile"] = compile_s
    if not compile_disabled(facts):
        subphases.update(compile_subphases(scan, compile_s))
    # V0 compiles only when asked (a compilation level above 0, from 0.6.2): with no compile
    # line there is nothing to take out of the profiling window; the note says so.
    compile_part = compile_s or 0.0
    if compile_s is None and not compile_disabled(facts):
        how["torch_compile"] = ("no compile line: the V0 engine compiles only when asked, so "
                                "nothing is taken out of kv_cache_profiling for it")

    not_applicable = capture_not_applicable(facts)
    if not_applicable:
        notes["cuda_graph_capture"] = f"{schema.NOT_APPLICABLE_PREFIX}: {not_applicable}"
        capture_s, capture_part = None, 0.0
    else:
        capture_s = d.get("graph_capture_s")
        capture_part = capture_s
    phases["cuda_graph_capture"] = capture_s

    kv: float | None = None
    init = d.get("init_engine_s")
    if init is not None and capture_part is not None:
        kv = not_below_zero(init - compile_part - capture_part, scan)
        how["kv_cache_profiling"] = ("vLLM's 'init engine (profile, create kv cache, warmup "
                                     "model) took' less torch_compile and cuda_graph_capture")
    elif "v0_weights_loaded" in scan.marks:
        # From the end of loading to where the capture starts (KV cache allocated), or,
        # without a capture, to the KV-cache size line: the allocation after it is not logged.
        end_key = "capture_start" if not not_applicable and "capture_start" in scan.marks \
            else "v0_blocks"
        span = span_s(scan, "v0_weights_loaded", end_key)
        if span is not None:
            kv = not_below_zero(span - compile_part, scan)
            how["kv_cache_profiling"] = (
                f"{stamps}: 'Loading model weights took' -> "
                + ("'Capturing the model for CUDA graphs'" if end_key == "capture_start" else
                   "'# GPU blocks' (the KV-cache allocation after it is not in the log)"))
    if "memory_profiling_s" in d:
        subphases["kv_cache_profiling.memory_profiling"] = not_below_zero(
            d["memory_profiling_s"] - compile_part, scan)
    else:
        profiling = span_s(scan, "v0_weights_loaded", "v0_blocks")
        if profiling is not None:
            subphases["kv_cache_profiling.memory_profiling"] = not_below_zero(
                profiling - compile_part, scan)
            how["kv_cache_profiling.memory_profiling"] = (
                f"{stamps}: 'Loading model weights took' -> '# GPU blocks'")
    phases["kv_cache_profiling"] = kv

    for name in schema.PHASE_NAMES:
        if phases.get(name) is None:
            notes.setdefault(name, schema.NOT_IN_LOG)
    return phases, subphases, notes, how
