"""The one source of truth for the start-up phases and the result document.

Every tool of the suite (the boot harness, the benchmark matrix, the log reader, the analysis)
speaks the names and the fields defined here and nowhere else. This module imports without
vLLM (pydantic only), so ``analysis`` can read results on any machine.

Schema changelog (bump ``SCHEMA_VERSION`` on any change a reader must know about):

- 1 (2026-11-29): first version: six phases, BootResult, the result document.
- 2 (2026-12-01): ``BootResult.process_deaths``: each process of the boot that was killed by a
  signal or exited with an error code (or vanished unreaped), with its role, signal or exit
  code and the phase it died in. Version 1 documents read as having recorded none.
- 3 (2026-12-01): the run says which matrix it is of, so shards of other runs are told apart:
  ``coldstart.matrix_cells`` ({"count", "sha256"} of the selected cells' ids, every shard of a
  run alike) in the document and, with ``matrix``, ``run_rounds`` (the ``--rounds`` asked)
  and ``commit_info``, on every cells-log line. Every measured entry reads in
  pytest-benchmark's own ``compare``: ``stats`` (its ``Stats`` over the measured rounds'
  ``wall_s``, with ``iterations``) and ``fullfunc``, the name its CSV gives the row (the cell
  and the run: release, written at). Older documents read as before; ``coldstart compact
  --upgrade`` brings their stats and names in line.
  Also ``BootResult.printed_total_s`` and ``printed_total_line``: the start-up total a log
  prints beside its phases (the reference study's "initialize_engine took", else vLLM's "init
  engine (profile, create kv cache, warmup model) took"), for a record read from a log; older
  documents read as having none.
  Later additions to 3 (optional, older documents read as having none): for a record read
  from a log, ``vllm_version_source`` (the line that states ``vllm_version``, or that the
  release is inferred) and ``vllm_version_range`` (where no line states it: the releases the
  log's format and wording allow, a PEP 440 specifier set such as ">=0.8,<0.12"). A log that
  prints a start-up total but none of the six phases is ``state="skipped"`` with the reason,
  never "measured": there is nothing per phase to fit or compare.
  ``coldstart.matrix_cells.matrix`` ({"count", "sha256"} of every cell of the matrix the run
  selected from, before any narrowing): ``coldstart check`` holds a run to its selection only
  while its matrix still has the cells it had; an older document says nothing of it. The
  selection digest is taken after pytest's ``-k``, ``-m`` and ``--deselect``, before
  ``--splits``: a run narrowed with ``-k`` is held to the cells it ran.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, model_validator

from document.errors import UserError, unreadable
from document.evidence import Evidence
from document.secrets import scrub

# A hub id as vLLM and huggingface_hub take it: ORG/NAME.
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")

SCHEMA_VERSION = 3


class Phase(NamedTuple):
    name: str
    description: str
    subphases: tuple[str, ...]
    # The physical quantity the reference study found the phase to scale with.
    driver: str


# Order matters: it is the order in which a boot goes through the phases.
PHASES: tuple[Phase, ...] = (
    Phase(
        "framework_bootstrap",
        "interpreter start and imports, platform detection, engine config, "
        "EngineCore and Worker process start-up, device init",
        ("interpreter_start", "imports", "engine_config", "model_inspection", "renderer_init",
         "engine_core_start", "worker_start", "device_init"),
        "roughly constant per machine and vLLM version",
    ),
    Phase(
        "tokenizer_init",
        "loading the tokenizer in the front end",
        (),
        "tokenizer file size",
    ),
    Phase(
        "model_loading",
        "model structure init plus weight loading",
        ("model_init", "load_weights", "process_weights"),
        "parameters x bytes per parameter",
    ),
    Phase(
        "torch_compile",
        "Dynamo transform plus Inductor compile, or loading compiled artifacts from cache",
        ("dynamo_transform", "inductor_compile", "compiled_graph_load"),
        "layers / compiled-graph size",
    ),
    Phase(
        "kv_cache_profiling",
        "memory profiling (the dummy forward pass, compile excluded) plus KV-cache allocation",
        ("memory_profiling", "kv_cache_allocation"),
        "parameters (the profiling forward pass)",
    ),
    Phase(
        "cuda_graph_capture",
        "capturing CUDA graphs for every capture size (GPU only)",
        (),
        "parameters x number of capture sizes",
    ),
)
PHASE_NAMES: tuple[str, ...] = tuple(p.name for p in PHASES)
PHASE_BY_NAME: dict[str, Phase] = {p.name: p for p in PHASES}
SUBPHASE_NAMES: tuple[str, ...] = tuple(f"{p.name}.{s}" for p in PHASES for s in p.subphases)

State = Literal["measured", "failed", "skipped"]
# What the boot observed of the compile cache, not what was asked for.
# "partial": some layers hit and others did not (harness.cache_layers.summarise).
CompileCacheObserved = Literal["hit", "miss", "partial", "load_failure", "disabled",
                               "not_applicable", "unknown"]

# Values of the matrix axes. Named once here so the harness, the benchmarks and the CLI agree.
LOADERS: tuple[str, ...] = ("safetensors", "runai_streamer", "tensorizer")
# relocated: the warm cache copied to another path, seen through another VLLM_CACHE_ROOT and
# working directory (harness.compile_cache.relocate_cache): what a fleet's pods do.
COMPILE_CACHE_MODES: tuple[str, ...] = ("cold", "warm", "off", "relocated")
PAGE_CACHE_MODES: tuple[str, ...] = ("warm", "evicted")
ENTRYPOINTS: tuple[str, ...] = ("offline", "serve")

NOT_APPLICABLE_PREFIX = "not applicable"
NOT_IN_LOG = "not in log"
# A failed boot's phases: the one it ended inside, and the ones it never reached.
UNFINISHED_PREFIX = "unfinished"
FAILED_BEFORE = "failed before this phase"


class ProcessDeath(BaseModel):
    """A process of a boot that ended abnormally before the harness ended the boot."""

    model_config = ConfigDict(extra="forbid")

    # "front end", "EngineCore", "Worker", "compile worker", "launcher" (the harness's child
    # that starts the server, entrypoint=serve) or "helper" (any other).
    role: str
    pid: int
    process_name: str | None = None  # its multiprocessing name or title, e.g. "VllmWorker-0"
    # Exactly one of signal / exit_code, or neither when the status could not be known.
    signal: int | None = None
    signal_name: str | None = None  # e.g. "SIGKILL"
    exit_code: int | None = None
    phase: str | None = None  # the phase it was in when it died
    at_s: float | None = None  # when its death was seen, from the boot's start
    seen_by: str | None = None  # what reported it, e.g. "reaped by pid 1234"

    def describe(self) -> str:
        """One line: ``Worker (pid 1234) killed by SIGKILL in model_loading``."""
        if self.signal is not None:
            how = f"killed by {self.signal_name or f'signal {self.signal}'}"
        elif self.exit_code is not None:
            how = f"exited with code {self.exit_code}"
        else:
            how = "died (exit status unknown)"
        where = f" in {self.phase}" if self.phase else ""
        return f"{self.role} (pid {self.pid}) {how}{where}"


class BootResult(BaseModel):
    """One boot of vLLM, cut into phases. Also what the log reader makes of one boot log."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    state: State
    model: str
    model_path: str | None = None
    # "probe" for a boot measured by the harness, "log" for one read from a log file, "spans"
    # for one read from an exported trace (harness.spans.boots).
    source: str = "probe"
    source_path: str | None = None
    vllm_version: str | None = None
    # Read from a log: the line vllm_version is read from, or "inferred: ..." where no line
    # states the release and vllm_version_range holds what the log's format allows.
    vllm_version_source: str | None = None
    vllm_version_range: str | None = None
    # "cuda", "rocm", "cpu", "tpu", "xpu", "hpu" (Gaudi) or "npu" (Ascend); detected, never assumed
    platform: str | None = None
    loader: str | None = None
    compile_cache: str | None = None
    page_cache: str | None = None
    entrypoint: str | None = None

    phases: dict[str, float | None] = Field(default_factory=dict)
    phase_notes: dict[str, str] = Field(default_factory=dict)
    subphases: dict[str, float | None] = Field(default_factory=dict)
    wall_s: float | None = None
    residual_s: float | None = None
    ready_s: float | None = None
    ttft_s: float | None = None
    response_text: str | None = None

    compile_cache_observed: CompileCacheObserved | None = None
    # vLLM's own reported durations (key -> seconds), from its log records.
    log_durations: dict[str, float] = Field(default_factory=dict)
    # The start-up total the log prints, and the words of the line it is read from (the log
    # reader only): not a phase, not the sum of the phases; kept beside them.
    printed_total_s: float | None = None
    printed_total_line: str | None = None
    # Per-process timeline, seconds from the launch (harness.timeline.timeline_events):
    # probed calls {"event", "target", "pid", "process", "start_s", "end_s"}, marks and each
    # process's first record {"event", "pid", "process", "t_s"}, vLLM's log records
    # {"event": "log", "pid", "process", "t_s", "level", "logger", "msg"}. The log reader
    # writes marks only; benchmarks.compact drops them all.
    events: list[dict[str, Any]] = Field(default_factory=list)
    shims: list[str] = Field(default_factory=list)
    error: str | None = None
    # Processes of the boot killed by a signal or ended with an error code, in time order.
    process_deaths: list[ProcessDeath] = Field(default_factory=list)
    skip_reason: str | None = None
    log_tail: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    # Loader, storage, process and log evidence (document.evidence): only the keys written.
    evidence: Evidence = Field(default_factory=Evidence)
    # What vLLM resolved and said it uses (harness.logs.engine_config): max_model_len, dtype,
    # quantization, tensor_parallel_size, capture sizes, KV-cache tokens and GiB, ...
    engine_config: dict[str, Any] = Field(default_factory=dict)
    # The cell's axes beyond loader / compile_cache / page_cache / entrypoint (engine
    # arguments and environment variables a matrix file varies), as in its cell id.
    axes: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _every_phase_accounted_for(self) -> BootResult:
        unknown = set(self.phases) - set(PHASE_NAMES)
        if unknown:
            raise ValueError(f"unknown phase names {sorted(unknown)}; known: {PHASE_NAMES}")
        for name in PHASE_NAMES:
            value = self.phases.get(name)
            if value is not None and (not math.isfinite(value) or value < 0):
                raise ValueError(f"phase {name} = {value}: must be a finite, non-negative number")
            if value is None:
                self.phases[name] = None
                if name not in self.phase_notes:
                    # assigned, not set in place: a note made here is a field set, written
                    self.phase_notes = {**self.phase_notes, name: FAILED_BEFORE
                                        if self.state == "failed" else "not measured"}
        # Keep the phases in boot order in every serialized document.
        self.phases = {name: self.phases[name] for name in PHASE_NAMES}
        return self

    def phase_sum_s(self) -> float:
        return sum(v for v in self.phases.values() if v is not None)

    def redacted(self, secrets: list[str]) -> BootResult:
        """This result with every secret cut out of its text (``document.secrets.scrub``:
        the values ``secrets``, and what a text shows as a secret-named assignment); itself
        where it holds none."""
        data = self.model_dump(mode="json")
        clean = scrub(data, secrets)
        return self if clean == data else type(self).model_validate(clean)

    @property
    def reason(self) -> str | None:
        """Why the boot was not measured: its error, or its skip reason; None if measured."""
        return self.error or self.skip_reason


# ---------------------------------------------------------------- the result document
# A result document is pytest-benchmark's JSON: measured cells are its ``benchmarks`` entries
# (``extra_info`` holds the BootResult fields of the median round and ``extra_info.rounds``
# every round). Cells pytest-benchmark leaves out (errors, skips) are kept under
# ``coldstart.unrecorded`` so that a failure is never lost. The log reader writes the same shape.

DOCUMENT_KEY = "coldstart"


class SchemaError(UserError, ValueError):
    """A file that is not a result document of this suite."""


def cell_id(params: dict[str, Any]) -> str:
    """The stable test id of a cell: ``model=X-loader=Y-...`` in the axis order given."""
    return "-".join(f"{k}={v}" for k, v in params.items())


def matrix_cells(ids: list[str], of: list[str] | None = None) -> dict[str, Any]:
    """Which matrix a run is of: the number and a digest of its selected cells' ids (every
    shard of one run has the same; a shard of another matrix, or a stale one, does not).

    ``of``: every cell id of the matrix the selection was made from, digested under
    ``"matrix"``, so that a matrix that has gained or lost cells since the run is told from
    the one the run selected from."""
    import hashlib

    def digest(some: list[str]) -> dict[str, Any]:
        return {"count": len(some),
                "sha256": hashlib.sha256("\n".join(sorted(some)).encode()).hexdigest()}

    return digest(ids) | ({"matrix": digest(of)} if of is not None else {})


def gpu_models(gpus: Any) -> list[str]:
    """The GPU models of a ``machine_info.coldstart.gpus`` list, each once: one H100 or two is
    one kind of machine; a malformed list or a nameless entry says nothing."""
    return sorted({str(g["name"]) for g in (gpus if isinstance(gpus, list) else [])
                   if isinstance(g, dict) and g.get("name") is not None})


def validation_summary(exc: Exception) -> str:
    """A pydantic ValidationError as one line naming each field and why (up to three)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}"
                     for e in errors()[:3])


def read_json(path: str | Path, error: type[Exception] = SchemaError) -> Any:
    """A JSON file's content, or ``error`` with one line naming the file and the problem."""
    p = Path(path)
    why = unreadable(p)
    if why is not None:
        raise error(f"{p}: {why}")
    try:
        return json.loads(p.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{p}: not JSON ({exc})") from exc
