"""``BootResult.evidence``: what a boot (or a log) showed beside its phases, typed.

Each key is written by one part of the suite, named beside its field: the harness's prepare
(harness.boot) and its reading of the boot (harness.interpret), the answer and compile-cache
checks (harness.correctness), the benchmark matrix (benchmarks/), the log reader
(harness.logs) and the study reader (analysis.study). A key nobody wrote is absent from the
document, not null: every record here writes back only the keys it was given or set (or a
container filled in place), in the order of its fields, so documents read and written again
are unchanged. A key a newer writer adds still reads, and is written back as it was.

Imports pydantic only (document.boot_result imports this module, not the reverse).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from document.span_phases import SpanPhases
from document.span_records import SpanRecord

__all__ = ["Answer", "AnswerToken", "CacheLayers", "DefectNote", "Evidence", "LayerObservation",
           "Relocation", "PageCacheFacts", "Priming",
           "Setting", "BootSettings", "SparseRecord", "WeightsFacts"]


class SparseRecord(BaseModel):
    """A record that writes only the keys it holds: those given or set, and any container
    filled in place; then the keys it does not know, as they came."""

    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="wrap")
    def _held_keys_only(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        fields = type(self).model_fields
        held = self.model_fields_set
        return {k: v for k, v in data.items() if k not in fields or k in held
                or getattr(self, k) != fields[k].get_default(call_default_factory=True)}


# ------------------------------------------------------------------------ nested records
# Each layer of retained state a boot found (harness.cache_layers reads them).
CACHE_LAYERS_VERSION = 1
LAYERS: tuple[str, ...] = ("aot_artifact", "vllm_compile_cache", "inductor_fx_graph",
                           "aot_autograd", "triton_autotune", "startup_plan")
LayerState = Literal["hit", "miss", "partial", "load_failure", "not_applicable", "unknown"]


class LayerObservation(SparseRecord):
    """What one layer did in one boot, and what says so."""

    state: LayerState
    # The lines, counters or files the state rests on, in words ("log: Directly load ...").
    evidence: list[str] = Field(default_factory=list)
    # vLLM's words for a load failure or a rejected plan; why a layer does not apply.
    reason: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)  # torch's counters, where read
    # What vLLM said it did, in order, each once: saved, loaded, load_failed, save_failed,
    # compiled (StartupPlan: saved, applied, rejected).
    actions: list[str] = Field(default_factory=list)
    # A relocated boot: whether this layer reused what the boot in the other place built,
    # and, where not, which of the cache key's inputs differed.
    reused: bool | None = None
    key_differs: list[str] = Field(default_factory=list)


class Relocation(SparseRecord):
    """A relocated boot's cache: where it was built, where this boot saw it, and the key."""

    built_at: str | None = None  # the cache folder the building boot wrote
    seen_at: str | None = None  # the copy this boot was given (another path)
    built_cwd: str | None = None
    seen_cwd: str | None = None
    # vLLM's AOT key inputs on each side (env_hash, config_hash, model_hash); equal ones
    # shared the key folder.
    built_key_factors: dict[str, str] = Field(default_factory=dict)
    seen_key_factors: dict[str, str] = Field(default_factory=dict)
    aot_keys_built: list[str] = Field(default_factory=list)
    aot_keys_added: list[str] = Field(default_factory=list)  # new key folders this boot made


class CacheLayers(SparseRecord):
    """Every layer of one boot (``Evidence.compile_cache_layers``), versioned."""

    version: int = CACHE_LAYERS_VERSION
    layers: dict[str, LayerObservation] = Field(default_factory=dict)
    # vLLM's AOT cache-key inputs as this boot computed them (probes): env_hash, config_hash,
    # model_hash.
    key_factors: dict[str, str] = Field(default_factory=dict)
    relocation: Relocation | None = None
    summary: str | None = None  # what compile_cache_observed says of them (summarise)


class Priming(SparseRecord):
    """The unmeasured boot that filled the compile cache for a warm cell (harness.boot)."""

    state: str | None = None  # the priming boot's BootResult.state
    compile_cache_observed: str | None = None
    error: str | None = None


class Setting(SparseRecord):
    """One engine argument or variable and where its value came from (BootSpec.settings_used)."""

    value: Any = None
    # "default" (the harness's), "environment" (exported), "axis" (the cell's loader or
    # compile cache), or the caller's ("matrix", "matrix model", ...).
    source: str | None = None
    # True: a secret-named one (document.secrets.is_secret_name), set but recorded as
    # "<redacted>", never its value. Absent in documents before it and for the others.
    redacted: bool | None = None


class BootSettings(SparseRecord):
    """Every engine argument and start-up variable the boot was given (harness.boot)."""

    engine_args: dict[str, Setting] = Field(default_factory=dict)
    env: dict[str, Setting] = Field(default_factory=dict)


class PageCacheFacts(SparseRecord):
    """The weight files' page-cache state just before the launch (harness.pagecache.prepare)."""

    mode: str | None = None  # "warm" or "evicted", as asked
    files: int | None = None
    bytes: int | None = None
    resident_bytes: int | None = None
    residency: float | None = None  # resident_bytes / bytes
    reads: int | None = None  # warm: full reads taken to reach the residency
    note: str | None = None  # a hub model not on this machine: nothing to warm or evict


class AnswerToken(SparseRecord):
    """One generated token of the answer."""

    token_id: int
    logprob: float | None = None  # vLLM's, where the caller asked for log-probs


class Answer(SparseRecord):
    """The boot's answer to its question (harness/_child.py, offline entry point), judged
    after the boot by harness.correctness.judge_answer."""

    expected: str | None = None  # documents before the reference check: the expected word
    question: str | None = None
    chat_template: bool | None = None  # the question was put through the chat template
    add_special_tokens: bool | None = None  # how vLLM tokenized the prompt
    prompt_token_ids: list[int] | None = None  # None: the server did not return them
    text: str | None = None
    correct: bool | None = None  # documents before the reference check: expected in text
    steps: list[AnswerToken] = Field(default_factory=list)
    dtype: str | None = None  # the engine's dtype argument (harness.interpret)
    compiled: bool | None = None  # torch.compile on (not enforce_eager)
    # harness.correctness.AnswerVerdict as JSON: passed, failures, steps, notes, ...
    verdict: dict[str, Any] | None = None


class WeightsFacts(SparseRecord):
    """What weight loading read, and how fast (harness.interpret from the load_weights probe)."""

    file_bytes: int | None = None  # the weight payload files' size
    load_weights_s: float | None = None  # the outermost load_weights calls' time
    # From /proc/PID/io around those calls: bytes that reached the block device (page-cache
    # misses), and every byte returned by read-like calls, cached or not.
    storage_read_bytes: int | None = None
    rchar_bytes: int | None = None
    load_gbps: float | None = None  # file_bytes / load_weights_s, GB/s
    # The benchmark's plain sequential read of the same files (benchmarks/test_cold_start.py)
    # and load_gbps as a fraction of it.
    storage_floor_gbps: float | None = None
    fraction_of_floor: float | None = None


class DefectNote(SparseRecord):
    """One known defect (or an unlisted symptom) and whether this boot showed it."""

    defect: str | None  # None: a symptom no registry entry explains
    symptom: str
    seen: bool
    note: str


# ------------------------------------------------------------------------------ evidence
class Evidence(SparseRecord):
    """Loader, storage, process and log evidence of one boot; every key optional."""

    # harness.boot's prepare
    work_dir: str | None = None  # the boot's folder: log, events, child result, cold cache
    priming: Priming | None = None
    # The AOT-compile keys the warm cache held before the boot (harness.compile_cache).
    aot_cache_keys_before: list[str] | None = None
    settings: BootSettings | None = None
    page_cache: PageCacheFacts | None = None

    # harness.interpret, from what the parent saw of the boot's processes
    process_wall_s: float | None = None  # launch to the child's exit (or the timeout)
    pgid: int | None = None  # the boot's process group (the child's pid)
    exit_code: int | None = None  # the child's; None: not reaped after the kill
    survivors: list[int] = Field(default_factory=list)  # pids alive after the group's kill
    # pids outside the group, found by their inherited environment and killed with it.
    escaped_process_group: list[int] = Field(default_factory=list)
    child_traceback: str | None = None  # the child's own, for a boot that failed

    # harness.interpret, from the child, the probes and vLLM's log
    answer: Answer | None = None
    compile_cache_load_failure: str | None = None  # vLLM's words for why the cache missed
    compile_cache_dir: str | None = None  # the compile cache the boot left (or its kept copy)
    compile_cache_bytes: int | None = None
    # Each layer of retained state on its own (harness.cache_layers): the AOT artifact,
    # vLLM's cache folder, Inductor's FX-graph cache, AOTAutograd's, Triton's, StartupPlan.
    compile_cache_layers: CacheLayers | None = None
    # compile_cache=relocated: the kept cache this boot's copy was made from.
    relocated_from: str | None = None
    # The residual's parts (seconds): the gaps between phases no probe owns.
    residual_parts_s: dict[str, float] = Field(default_factory=dict)
    loader_targets: list[str] = Field(default_factory=list)  # probed loader calls that ran
    weights: WeightsFacts | None = None
    unfinished_calls: list[str] = Field(default_factory=list)  # probed calls never ended
    probe_problems: list[str] = Field(default_factory=list)  # a target not found, or failed
    processes: int | None = None  # processes of the boot the probes saw
    # Each probed function's own total time, no priority cut (benchmarks.compact drops it).
    probe_durations_s: dict[str, float] = Field(default_factory=dict)
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)  # what LLM(...) was given
    entrypoint_command: str | None = None  # "LLM(...)", or the serve command line

    # harness.launch, a boot with spans on (BootSpec.spans): every span vLLM sent, what they
    # say of the phases (document.span_phases), the Unix time of the launch (within a
    # millisecond: spans are on the Unix clock, the timeline counts from the launch), and
    # requests the receiver could not read.
    spans: list[SpanRecord] | None = None
    span_phases: SpanPhases | None = None
    spans_launch_unix_ns: int | None = None
    span_problems: list[str] = Field(default_factory=list)

    # harness.correctness: known defects seen (or not) by the answer and compile-cache checks
    known_defects: list[DefectNote] = Field(default_factory=list)

    # benchmarks/interleave.py: a vLLM without some probe targets, timed from its log instead
    subphase_notes: dict[str, str] = Field(default_factory=dict)  # subphase -> why not probed
    not_probed: list[str] = Field(default_factory=list)  # "module:attr (event)" missing
    from_log: dict[str, str] = Field(default_factory=dict)  # event -> log duration key

    # harness.logs: a boot read from a log
    facts: dict[str, Any] = Field(default_factory=dict)  # what the lines said (harness.logs.scan)
    composition: dict[str, str] = Field(default_factory=dict)  # phase -> how it was composed
    marks: dict[str, list[float]] = Field(default_factory=dict)  # instant lines, s from start
    # Every value of the duration lines that repeat (log_durations holds their totals).
    occurrences: dict[str, list[float]] = Field(default_factory=dict)
    unread: list[str] = Field(default_factory=list)  # timing-like lines no pattern read
    truncated: bool | None = None  # the log stops before start-up finished
    partial_last_line: str | None = None  # a last line cut mid-write
    boots_in_log: int | None = None  # a log holding several boots (a restarted pod) ...
    boot_in_log: int | None = None  # ... and which one this is, from 1

    # analysis.study: the reference study's label of the boot
    study_label: str | None = None
