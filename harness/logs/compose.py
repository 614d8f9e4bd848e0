"""Cut a scan of a log into the six phases: the V1 engine's (vLLM 0.8 .. 0.32+,
``compose_v1``) and the V0 engine's (``compose_v0``).

What each phase is read from is the table in ``harness.logs.reader``; the V0 engine (LLMEngine up
to 0.7, and still selectable in 0.8 .. 0.10) is cut by ``compose_v0`` (below). The
helpers both share (framework bootstrap, compile, differences of durations, where a failed
boot stopped) live here.
"""

from __future__ import annotations

from typing import Any

from document import boot_result
from harness.logs.facts import capture_not_applicable, compile_disabled
from harness.logs.scan import LogScan

# The instant each phase's evidence ends at, in boot order: a failed boot completed the
# phases before the last one it reached.
_END_EVIDENCE: dict[str, tuple[str, ...]] = {
    "framework_bootstrap": ("model_loading_start",),
    "tokenizer_init": ("tokenizer_init_s",),
    "model_loading": ("model_loading_s", "load_weights_s", "v0_weights_loaded"),
    "torch_compile": ("torch_compile_total_s", "compile_time_s", "compiled_graph_load_s",
                      "inductor_compile_s", "aot_loaded", "aot_saved", "tpu_compile_s"),
    "kv_cache_profiling": ("memory_profiling_s", "kv_cache_sized", "v0_blocks"),
    "cuda_graph_capture": ("graph_capture_s",),
}



# ------------------------------------------------------------------------------ phases
def _marked_before(scan: LogScan, key: str, end: float) -> bool:
    times = scan.marks.get(key)
    return bool(times) and times[0] <= end


def framework_bootstrap_s(scan: LogScan, notes: dict[str, str]) -> float | None:
    end = scan.first("model_loading_start")
    if end is None or end < 0:
        # A start before the log's first line: the lines are out of order, no span to read.
        return None
    resolution = scan.facts.get("timestamp_resolution_s", 1.0)
    tokenizer = scan.durations.get("tokenizer_init_s")
    if tokenizer is not None and _marked_before(scan, "tokenizer_init_s", end):
        notes["framework_bootstrap"] = (
            f"log timestamps (resolution {resolution:g} s): first log line -> 'Starting to load "
            "model', less tokenizer_init; the interpreter start before vLLM's first line is "
            "not in the log")
        return max(0.0, end - tokenizer)
    notes["framework_bootstrap"] = (
        f"log timestamps (resolution {resolution:g} s): first log line -> 'Starting to load "
        "model'; includes the tokenizer load (not timed in this log); the interpreter start "
        "before vLLM's first line is not in the log")
    return end


# The lines of loading itself: one of them after the weights line does not show that
# loading ended (another rank's weights, a drafter model's, the checkpoint's progress).
_LOADING_KEYS = ("load_weights_s", "model_init_s", "model_loading_start", "weights_progress",
                 "download_weights_s", "online_quantization_s")


def model_loading_s(scan: LogScan, notes: dict[str, str]) -> float | None:
    """vLLM's "Model loading took" (or tpu-inference's total); where the log has none, on
    any platform (the CPU and TPU runners print none; a GPU or NPU paste may leave it out)
    the printed parts: "Loading weights took" and "Initializing model took", each read,
    their sum the phase, with a note saying so. Not where the weights line is the last line
    the log times (a log cut there may have lost a "Model loading took" with another value),
    except on CPU and TPU, whose runners print no total."""
    d = scan.durations
    if "model_loading_s" in d:
        return d["model_loading_s"]
    if "load_weights_s" not in d:
        return None
    weights_at = max(i for i, key in scan.order if key == "load_weights_s")
    went_on = not scan.truncated or any(
        i > weights_at and key not in _LOADING_KEYS for i, key in scan.order)
    if not went_on and str(scan.facts.get("platform")) not in ("cpu", "tpu"):
        notes["model_loading"] = ("'Loading weights took' is the log's last timed line: the "
                                  "'Model loading took' after it may be cut off")
        return None
    notes["model_loading"] = (
        "no 'Model loading took' line: vLLM's 'Loading weights took'"
        + (" + 'Initializing model took'" if "model_init_s" in d else "")
        + " (the weight post-processing after them is not timed in this log)")
    return d["load_weights_s"] + d.get("model_init_s", 0.0)


# The start-up totals a log prints, in the order they are preferred, and the phases inside
# each: the study driver's "initialize_engine took" around LLM(...) holds the whole boot;
# vLLM's "init engine ... took" (V1 and V0 0.7+) everything after model loading.
_TOTALS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("study_initialize_engine_s", "initialize_engine took", boot_result.PHASE_NAMES),
    ("init_engine_s", "init engine (profile, create kv cache, warmup model) took",
     ("torch_compile", "kv_cache_profiling", "cuda_graph_capture")),
)


def printed_total(scan: LogScan) -> tuple[float | None, str | None]:
    """The start-up total the log prints (``_TOTALS``) and the words of its line."""
    for key, words, _ in _TOTALS:
        if key in scan.durations:
            return scan.durations[key], words
    return None, None


def no_phase_reason(scan: LogScan, phases: dict[str, float | None],
                    notes: dict[str, str]) -> str | None:
    """Why a log that finished gives none of the six phases (None where it gives one): it
    prints a total only, or nothing timed. The phases inside that total are noted so."""
    if any(v is not None for v in phases.values()):
        return None
    found = next(((key, words, inside) for key, words, inside in _TOTALS
                  if key in scan.durations), None)
    if found is None:
        return f"0 of {len(boot_result.PHASE_NAMES)} phases in the log: it times none of them"
    key, words, inside = found
    for name in inside:
        if notes.get(name) == boot_result.NOT_IN_LOG:
            notes[name] = (f"{boot_result.NOT_IN_LOG}: inside the printed total ('{words}'), "
                           "which the log does not split")
    return (f"0 of {len(boot_result.PHASE_NAMES)} phases in the log: it prints only its start-up "
            f"total ('{words}' {scan.durations[key]:g} s, kept in printed_total_s)")


def torch_compile_s(scan: LogScan, notes: dict[str, str]) -> float | None:
    d = scan.durations
    if "tpu_compile_s" in d:
        notes["torch_compile"] = ("sum of the TPU runner's 'Compilation finished in X [secs]' "
                                  "lines (the XLA precompile of every padded shape)")
        return d["tpu_compile_s"]
    parts = sum(d.get(k, 0.0) for k in
                ("dynamo_transform_s", "inductor_compile_s", "compiled_graph_load_s"))
    if "torch_compile_total_s" in d:
        # Where no version line says which release wrote "torch.compile takes X s in total",
        # the 0.10/0.11 meaning (cache load left out) is possible too: the larger of the total
        # and its parts is right under either.
        notes["torch_compile"] = "sum of vLLM's 'torch.compile took X s in total' lines"
        if parts > d["torch_compile_total_s"]:
            notes["torch_compile"] = (
                "Dynamo + Inductor + 'Directly load the compiled graph(s)': larger than the "
                "'torch.compile takes X s in total' lines (0.10/0.11 leave the cache load out)")
        return max(d["torch_compile_total_s"], parts)
    if "compile_time_s" in d:
        # Up to 0.11 this total is Dynamo + Inductor and leaves the cache load out; somewhere
        # after, the same words time the whole compile, load included. The larger of the total
        # and its parts is right under either meaning.
        notes["torch_compile"] = ("the larger of vLLM's 'torch.compile takes X s in total' and "
                                  "Dynamo + Inductor + 'Directly load the compiled graph(s)'")
        return max(d["compile_time_s"], parts)
    if "init_engine_compilation_s" in d:
        # The same compilation time that 'torch.compile takes X s in total' prints, where the
        # excerpt kept only the engine's line (0.12+).
        notes["torch_compile"] = ("the compilation in vLLM's 'init engine (profile, create kv "
                                  "cache, warmup model) took X s (compilation: Y s)'")
        return max(d["init_engine_compilation_s"], parts)
    start = scan.first("warmup_start")
    if start is not None:
        # On CPU vLLM times no compile; the AOT line that ends it (saved after compiling,
        # or loaded) is the first instant after the warm-up starts that only compile precedes.
        ends = [t for key in ("aot_saved", "aot_loaded") for t in scan.marks.get(key, ())
                if t >= start]
        if ends:
            resolution = scan.facts.get("timestamp_resolution_s", 1.0)
            notes["torch_compile"] = (
                f"log timestamps (resolution {resolution:g} s): 'Warming up model for the "
                "compilation' -> the AOT line ('saved AOT compiled function' or 'Directly load "
                "AOT compilation'); it starts before the compile the probes time, so it holds "
                "the warm-up's cache key and lookup too")
            return min(ends) - start
    return None


def compile_subphases(scan: LogScan, compile_s: float | None) -> dict[str, float | None]:
    """torch.compile's parts as printed (V0 0.7+ and V1 print the same lines), also where
    the total is not in the log (a paste cut before it)."""
    d, cache = scan.durations, scan.facts.get("compile_cache")
    known = compile_s is not None
    # A cache hit compiles nothing and a miss loads nothing: the log says so by the absence
    # of the other line, next to the line that is there.
    return {
        "torch_compile.dynamo_transform": d.get("dynamo_transform_s"),
        "torch_compile.inductor_compile": d.get(
            "inductor_compile_s",
            0.0 if known and cache == "hit" and "compiled_graph_load_s" in d else None),
        "torch_compile.compiled_graph_load": d.get(
            "compiled_graph_load_s",
            0.0 if known and cache == "miss" and "inductor_compile_s" in d else None),
    }


def not_below_zero(difference: float, scan: LogScan) -> float | None:
    """A difference of logged durations; below zero by more than rounding, the log disagrees
    with itself and the value is not read."""
    # vLLM prints graph capture in whole seconds and most durations to 0.01 s.
    slack = 1.0 if scan.durations.get("graph_capture_s", 0.0).is_integer() else 0.02
    if difference < -slack:
        return None
    return max(0.0, difference)


def span_s(scan: LogScan, start_key: str, end_key: str) -> float | None:
    """Seconds from the first ``start_key`` line to the first ``end_key`` line after it."""
    start = scan.first(start_key)
    if start is None:
        return None
    ends = [t for t in scan.marks.get(end_key, ()) if t >= start]
    return min(ends) - start if ends else None


def compose_v1(scan: LogScan) -> tuple[dict[str, float | None], dict[str, float | None],
                                     dict[str, str], dict[str, str]]:
    """Cut a scan into phases and subphases: (phases, subphases, phase_notes, how)."""
    d, facts = scan.durations, scan.facts
    phases: dict[str, float | None] = {}
    subphases: dict[str, float | None] = {}
    notes: dict[str, str] = {}
    how: dict[str, str] = {}

    phases["framework_bootstrap"] = framework_bootstrap_s(scan, how)
    phases["tokenizer_init"] = d.get("tokenizer_init_s")

    phases["model_loading"] = model_loading_s(scan, how)
    subphases["model_loading.model_init"] = d.get("model_init_s")
    subphases["model_loading.load_weights"] = d.get("load_weights_s")

    compile_s: float | None
    if compile_disabled(facts):
        notes["torch_compile"] = f"{boot_result.NOT_APPLICABLE_PREFIX}: compilation disabled (mode NONE)"
        compile_s = None
        compile_part = 0.0
    else:
        compile_s = torch_compile_s(scan, how)
        compile_part = compile_s
    phases["torch_compile"] = compile_s
    if not compile_disabled(facts):
        subphases.update(compile_subphases(scan, compile_s))

    capture_s: float | None
    capture_part: float | None
    not_applicable = capture_not_applicable(facts)
    if not_applicable:
        notes["cuda_graph_capture"] = f"{boot_result.NOT_APPLICABLE_PREFIX}: {not_applicable}"
        capture_s, capture_part = None, 0.0
    else:
        capture_s = d.get("graph_capture_s")
        capture_part = capture_s
    phases["cuda_graph_capture"] = capture_s

    init = d.get("init_engine_s")
    kv: float | None = None
    if init is not None and compile_part is not None and capture_part is not None:
        # torch.compile runs inside the profiling forward and graph capture inside the
        # warm-up: both are inside vLLM's "init engine" window, counted once in their phase.
        kv = not_below_zero(init - compile_part - capture_part, scan)
        how["kv_cache_profiling"] = ("vLLM's 'init engine (profile, create kv cache, warmup "
                                     "model) took' less torch_compile and cuda_graph_capture")
        if "memory_profiling_s" in d:
            profiling = not_below_zero(d["memory_profiling_s"] - compile_part, scan)
            subphases["kv_cache_profiling.memory_profiling"] = profiling
            if kv is not None and profiling is not None:
                subphases["kv_cache_profiling.kv_cache_allocation"] = not_below_zero(
                    kv - profiling, scan)
            how["kv_cache_profiling.kv_cache_allocation"] = (
                "the rest of kv_cache_profiling after memory profiling: KV-cache allocation "
                "and the warm-up outside graph capture")
    elif init is not None:
        how["kv_cache_profiling"] = ("'init engine ... took' is in the log, but the compile or "
                                     "capture time inside it is not: not separable")
    phases["kv_cache_profiling"] = kv

    for name in boot_result.PHASE_NAMES:
        if phases.get(name) is None:
            notes.setdefault(name, boot_result.NOT_IN_LOG)
    return phases, subphases, notes, how


def phases_reached(scan: LogScan, before: int | None = None) -> int:
    """Index in boot order of the last phase the log shows the end of (-1: none), in its
    lines before line ``before`` where given."""
    shown = {key for i, key in scan.order if before is None or i < before}
    reached = -1
    for i, name in enumerate(boot_result.PHASE_NAMES):
        if shown.intersection(_END_EVIDENCE[name]):
            reached = i
    return reached


# Boot order of the phases whose start the log shows (the tokenizer loads inside bootstrap,
# in the front end), and the instants each begins at.
_STARTS: dict[str, tuple[str, ...]] = {
    "framework_bootstrap": (),
    "model_loading": ("model_loading_start",),
    # Dynamo's transform is a compile's first part (Inductor's lines or the total end it)
    "torch_compile": ("compile_start", "warmup_start", "dynamo_transform_s"),
    "kv_cache_profiling": ("profile_start",),
    "cuda_graph_capture": ("kv_cache_sized", "capture_start"),
}


def unfinished_phase(scan: LogScan, reached: int, notes: dict[str, str]) -> str | None:
    """The phase a log that stops before start-up finished was in.

    In this order: the phase the innermost vLLM frame of its traceback belongs to
    (``facts["traceback_phase"]``); else the phase whose start is the last one the log shows,
    where no end of it follows (line order: processes flush their timestamps out of order);
    else the first applicable phase after the last one it shows the end of (the V0 engine
    compiles only when asked: torch_compile is that phase only where a compile line shows).
    Where the log has an error line (``scan.first_error``), only the lines before the first
    one count: what other processes print after it (ranks still loading, the front end's
    shutdown) is not what was running when it died; there the checkpoint's progress bar
    ("Loading safetensors checkpoint shards") also shows that weight loading had begun.
    Its start and the log's last instant bound how long it ran at least
    (``scan.facts["unfinished"]``).
    """
    order = list(boot_result.PHASE_NAMES)
    stop = scan.first_error
    lines = [(i, key) for i, key in scan.order if stop is None or i < stop]
    starts_of = dict(_STARTS)
    if stop is not None:
        reached = phases_reached(scan, stop)
        starts_of["model_loading"] = (*_STARTS["model_loading"], "weights_progress")

    def applies(name: str) -> bool:
        return not notes.get(name, "").startswith(boot_result.NOT_APPLICABLE_PREFIX)

    name = scan.facts.get("traceback_phase")
    if name is not None and not applies(name):
        name = None
    phase_of = {key: phase for phase, keys in starts_of.items() for key in keys}
    starts = [(i, phase_of[key]) for i, key in lines if key in phase_of and applies(phase_of[key])]
    begun = None  # the last phase the log shows begin and not end
    if starts:
        at, phase = starts[-1]
        if not any(i > at and key in _END_EVIDENCE[phase] for i, key in lines):
            begun = phase
    # V1 compiles inside the profiling run (_initialize_kv_caches -> profile_run): a frame of
    # profiling does not tell the two apart where a compile had begun and not ended.
    if name is None or (name == "kv_cache_profiling" and begun == "torch_compile"):
        name = begun or name
    if name is None:
        compiles = any(k in scan.durations or k in scan.marks
                       for k in (*_END_EVIDENCE["torch_compile"], *_STARTS["torch_compile"]))
        for candidate in _STARTS:
            if order.index(candidate) <= reached or not applies(candidate):
                continue
            if candidate == "torch_compile" and scan.facts.get("v0_engine") and not compiles:
                continue
            name = candidate
            break
    if name is None:
        return None
    info: dict[str, Any] = {"phase": name}
    begun = [t for key in _STARTS[name] for t in scan.marks.get(key, ())]
    start = 0.0 if name == "framework_bootstrap" else (min(begun) if begun else None)
    if start is not None and "log_span_s" in scan.facts:
        info["at_least_s"] = round(max(0.0, scan.facts["log_span_s"] - start), 6)
    scan.facts["unfinished"] = info
    return name


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
        notes["torch_compile"] = f"{boot_result.NOT_APPLICABLE_PREFIX}: compilation disabled (level 0)"
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
        notes["cuda_graph_capture"] = f"{boot_result.NOT_APPLICABLE_PREFIX}: {not_applicable}"
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

    for name in boot_result.PHASE_NAMES:
        if phases.get(name) is None:
            notes.setdefault(name, boot_result.NOT_IN_LOG)
    return phases, subphases, notes, how
