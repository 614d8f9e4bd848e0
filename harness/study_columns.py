"""The reference study's phase columns, composed from a log read by ``harness.logs``.

The study (upb-cn/vllm-startup-profiler, vLLM 0.10.1.1 with five patched source files)
publishes per-model values in ``comparison_results.json`` under its own column names. Some
columns are a single vLLM log line, others are differences of log lines or of log timestamps,
and a few are cut differently from this suite's schema. ``STUDY_PHASE_MAP`` is the one place
that says how each column is made and where the same time sits in our schema; it was worked
out from the study's raw logs against its published numbers (docs/reference-mapping.md).

``study_phases(result)`` reproduces the columns from a ``BootResult`` that ``read_log`` made.
The study keeps the *last* value of a line seen more than once and measures a timestamp span
from the latest start line before its end line; both are reproduced here, because they differ
from this suite's choices (sum of repeats; first occurrences) on logs with spawned processes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from document.boot_result import BootResult, SchemaError, read_json

__all__ = ["StudyColumn", "STUDY_PHASE_MAP", "STUDY_COLUMNS", "study_phases",
           "read_reference", "Agreement", "agreement"]


class _View:
    """The parts of a log-made BootResult the study's columns are built from."""

    def __init__(self, result: BootResult) -> None:
        self.durations = result.log_durations
        self.occurrences: dict[str, list[float]] = result.evidence.occurrences
        self.facts: dict[str, Any] = result.evidence.facts
        self.events = result.events

    def last(self, key: str) -> float | None:
        values = self.occurrences.get(key)
        return values[-1] if values else self.durations.get(key)

    def span(self, start: str, end: str) -> float | None:
        """End line's time less the latest start line's before it; the last end line wins."""
        latest_start: float | None = None
        value: float | None = None
        for event in self.events:
            if event["event"] == start:
                latest_start = event["t_s"]
            elif event["event"] == end and latest_start is not None:
                value = event["t_s"] - latest_start
        return value


def _or0(value: float | None) -> float:
    return 0.0 if value is None else value


def _sum_present(*values: float | None) -> float:
    return sum(v for v in values if v is not None)


def _compile_total(v: _View, done: dict[str, float | None]) -> float | None:
    # 0.10/0.11 printed vLLM's compilation_time ("takes"); later releases print the wall time
    # of each compile ("took"), the nearest thing to the study's column.
    value = v.last("compile_time_s")
    return value if value is not None else v.durations.get("torch_compile_total_s")


def _kv_profiling(v: _View, done: dict[str, float | None]) -> float | None:
    profiling = v.last("memory_profiling_s")
    if profiling is None:
        return None
    return profiling - (_or0(done["torch.compile"]) + _or0(done["graph_compile_cached"]))


def _load_weights(v: _View, done: dict[str, float | None]) -> float | None:
    value = v.last("load_weights_s")
    loading, init = v.last("model_loading_s"), v.last("model_init_s")
    if value is None and loading is not None and init is not None:
        # The study's fallback for loaders that print no weights line (bitsandbytes).
        return loading - init
    return value


@dataclass(frozen=True)
class StudyColumn:
    """One column of the study's ``comparison_results.json``.

    ``composition`` is how the study builds it from its log; ``ours`` is where the same time
    sits in this suite's schema; ``compute`` reproduces it from a log read by ``read_log``
    (``done`` holds the columns computed before it, in table order).
    """

    name: str
    composition: str
    ours: str
    compute: Callable[[_View, dict[str, float | None]], float | None] = field(repr=False)


STUDY_PHASE_MAP: tuple[StudyColumn, ...] = (
    StudyColumn("detect_platform",
                "timestamp: 'No plugins for group' -> 'Automatically detected platform'",
                "part of framework_bootstrap (imports)",
                lambda v, d: v.span("platform_plugins_checked", "platform_detected")),
    StudyColumn("llm_imports",
                "timestamp: 'Automatically detected platform' -> 'Available plugins for group'",
                "part of framework_bootstrap (imports)",
                lambda v, d: v.span("platform_detected", "general_plugins_listed")),
    StudyColumn("get_model_info",
                "timestamp: 'Available plugins for group' -> 'Chunked prefill is'",
                "part of framework_bootstrap (engine_config)",
                lambda v, d: v.span("general_plugins_listed", "scheduler_config")),
    StudyColumn("worker_init",
                "timestamp: 'Waiting for init message' -> 'Starting to load model'",
                "part of framework_bootstrap (worker_start, device_init)",
                lambda v, d: v.span("engine_core_waiting", "model_loading_start")),
    StudyColumn("framework_bootstrap",
                "detect_platform + llm_imports + get_model_info + worker_init (missing = 0)",
                "framework_bootstrap less the tokenizer/EngineCore-spawn gap ('Chunked prefill' "
                "-> 'Waiting for init message') that the study leaves out of every column",
                lambda v, d: _or0(d["detect_platform"]) + _or0(d["llm_imports"])
                + _or0(d["get_model_info"]) + _or0(d["worker_init"])),
    StudyColumn("load_weights", "'Loading weights took X seconds' (else model_loading - "
                "model_init)", "model_loading.load_weights", _load_weights),
    StudyColumn("model_init", "'NEW: Initializing Model took X seconds' (patched)",
                "model_loading.model_init", lambda v, d: v.last("model_init_s")),
    StudyColumn("model_loading", "'Model loading took ... GiB and X seconds'",
                "model_loading (model_init + load_weights + pre/post-processing)",
                lambda v, d: v.last("model_loading_s")),
    StudyColumn("dynamo_transform_time", "'Dynamo bytecode transform time: X s'",
                "torch_compile.dynamo_transform", lambda v, d: v.last("dynamo_transform_s")),
    StudyColumn("graph_compile_general_shape",
                "'Compiling a graph for dynamic shape takes X s' (cache miss only)",
                "torch_compile.inductor_compile", lambda v, d: v.last("inductor_compile_s")),
    StudyColumn("graph_compile_cached",
                "'Directly load the compiled graph(s) for dynamic shape from the cache, took X s' "
                "(cache hit only)", "torch_compile.compiled_graph_load",
                lambda v, d: v.last("compiled_graph_load_s")),
    StudyColumn("torch.compile", "'torch.compile takes X s in total' = Dynamo + Inductor "
                "compile; cache loading is NOT in it",
                "torch_compile less torch_compile.compiled_graph_load", _compile_total),
    StudyColumn("kv_cache_profiling", "'Memory profiling takes X seconds' (DEBUG) less "
                "torch.compile less graph_compile_cached: compile and graph loading excluded",
                "kv_cache_profiling.memory_profiling", _kv_profiling),
    StudyColumn("graph_capturing", "'Graph capturing finished in X secs'", "cuda_graph_capture",
                lambda v, d: v.last("graph_capture_s")),
    StudyColumn("init_engine", "'init engine (profile, create kv cache, warmup model) took X "
                "seconds'", "torch_compile + kv_cache_profiling + cuda_graph_capture",
                lambda v, d: v.last("init_engine_s")),
    StudyColumn("tokenizer_init", "'NEW: Init Tokenizer took X seconds' (patched)",
                "tokenizer_init", lambda v, d: v.last("tokenizer_init_s")),
    StudyColumn("total_time", "framework_bootstrap + model_loading + init_engine + "
                "tokenizer_init", "sum of the phases, less the gap framework_bootstrap keeps",
                lambda v, d: _sum_present(d["framework_bootstrap"], d["model_loading"],
                                          d["init_engine"], d["tokenizer_init"])),
    StudyColumn("actual_total_time", "timestamp: first log line -> last timestamped line",
                "evidence.facts.log_span_s", lambda v, d: v.facts.get("log_span_s")),
)
STUDY_COLUMNS: tuple[str, ...] = tuple(c.name for c in STUDY_PHASE_MAP)


def study_phases(result: BootResult) -> dict[str, float | None]:
    """The study's columns for one log read by ``harness.logs.read_log``.

    Returns
    -------
    dict
        ``{column: seconds or None}`` in the study's column order; ``None`` where the log
        lacks the line, as the study writes it.
    """
    view = _View(result)
    done: dict[str, float | None] = {}
    for column in STUDY_PHASE_MAP:
        done[column.name] = column.compute(view, done)
    return done


# ---------------------------------------------------------------- the published numbers
def is_study_file(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("labels"), list)
            and isinstance(data.get("data"), dict))


def load_comparison(path: str | Path) -> dict[str, Any]:
    """A ``comparison_results.json`` of the study (``{"labels": [...], "data": {column:
    [...]}}``), or one SchemaError line saying the file is not one: the one reader of it."""
    content = read_json(path)
    if not is_study_file(content):
        raise SchemaError(f"{path}: not a study comparison_results.json (no labels / data)")
    return content


def read_reference(path: str | Path) -> dict[str, dict[str, float | None]]:
    """The study's ``comparison_results.json`` as ``{log file name: {column: value}}``."""
    data = load_comparison(path)
    labels: list[str] = data["labels"]
    return {label: {col: values[i] for col, values in data["data"].items()}
            for i, label in enumerate(labels)}


@dataclass
class Agreement:
    """How the values read from the logs compare with the published ones."""

    compared: int = 0
    within: int = 0
    tolerance_s: float = 0.05
    # (log, column, published, ours) for every value outside the tolerance or missing here.
    misses: list[tuple[str, str, float, float | None]] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        return self.within / self.compared if self.compared else 0.0


def agreement(folder: str | Path, *, tolerance_s: float = 0.05,
              columns: tuple[str, ...] = STUDY_COLUMNS) -> Agreement:
    """Read every log a ``comparison_results.json`` names and compare with its values.

    Every published (log, column) value that is not null counts; a value this reader cannot
    produce counts as a miss.
    """
    from harness.logs.reader import read_log  # the log reader imports this module's neighbours

    folder = Path(folder)
    reference = read_reference(folder / "comparison_results.json")
    result = Agreement(tolerance_s=tolerance_s)
    for label, published in reference.items():
        ours = study_phases(read_log(folder / label))
        for column in columns:
            expected = published.get(column)
            if expected is None:
                continue
            result.compared += 1
            got = ours.get(column)
            if got is not None and abs(got - expected) <= tolerance_s:
                result.within += 1
            else:
                result.misses.append((label, column, expected, got))
    return result
