"""Read a vLLM start-up log into the phase schema: the suite's second source after the probes.

A log line is a fallback, not the source of truth (STYLE.md, lesson 11): it holds what vLLM
chose to print, at the level it was run with, with the timestamps it was given (whole seconds
by default). This module reads what is there and nothing more: a phase the log cannot support
is ``None`` with the note ``boot_result.NOT_IN_LOG``, never an estimate.

Two steps, both public:

``scan_lines``
    matches every line against ``harness.registry.LOG_PATTERNS`` (the one place that knows
    how each vLLM release words its lines) and returns a ``LogScan``: durations vLLM reported,
    timestamps of instants, facts, the lines that looked like start-up timing but matched no
    pattern, and whether the log stops before start-up finished.
``read_log``
    turns a log into a ``boot_result.BootResult`` (``source="log"``).

How a phase is composed from log lines (vLLM 0.10.1.1 .. 0.32, GPU and CPU):

================== =========================================================================
phase              from the log
================== =========================================================================
framework_bootstrap first log line -> "Starting to load model", less tokenizer_init where the
                   log has it (the tokenizer loads inside that window). Interpreter start
                   before vLLM's first log line is not visible.
tokenizer_init     "NEW: Init Tokenizer took" (the study's patched vLLM only)
model_loading      "Model loading took ... and X seconds" (GPU runner); subphases
                   "Initializing model took" and "Loading weights took". Where no total is
                   in the log (the CPU and TPU runners print none, a paste may lose it) the
                   sum of those two, on any platform, with a note saying so.
torch_compile      0.10/0.11: "torch.compile takes X s in total" (Dynamo + Inductor, cache
                   loading excluded) + "Directly load the compiled graph(s) ... took";
                   0.12+: the sum of "torch.compile took X s in total" (each compile or cache
                   load, loading included). On CPU (no such lines) the span from "Warming up
                   model for the compilation" to the AOT line that ends the compile ("saved
                   AOT compiled function", "Directly load AOT compilation"), from timestamps.
kv_cache_profiling "init engine (profile, create kv cache, warmup model) took" less
                   torch_compile and cuda_graph_capture (both happen inside it).
                   Subphase memory_profiling: "Memory profiling takes" (DEBUG) less
                   torch_compile; kv_cache_allocation: the rest (allocation and the
                   warm-up outside graph capture).
cuda_graph_capture "Graph capturing finished in X secs"; not applicable on CPU or eager.
================== =========================================================================

The V0 engine (LLMEngine, vLLM 0.3 .. 0.7; ``harness.logs.compose``) prints less, mostly without
durations, so its phases are spans between line timestamps (whole seconds): model_loading
"Starting to load model" (0.6+) -> "Loading model weights took X GB" (0.4.1+);
kv_cache_profiling the weights line -> "Capturing the model for CUDA graphs" (or "# GPU
blocks: N, # CPU blocks: M", the end of memory profiling, where nothing is captured), or 0.7's
"init engine ... took" less capture; cuda_graph_capture "Graph capturing finished in N secs".
0.3 prints neither a load start nor a weights line: only graph capture is in its log.

The reference study composes some of its columns differently; ``harness.study_columns`` holds that
mapping and reproduces the study's published numbers from the same scan.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from document import boot_result
from document.evidence import Evidence
from document.secrets import environment_secrets
from harness.cache_layers import observe_lines
from harness.logs.boots import split_boots
from harness.logs.compose import (
    compose_v0,
    compose_v1,
    no_phase_reason,
    phases_reached,
    printed_total,
    unfinished_phase,
)
from harness.logs.facts import compile_disabled, engine_config
from harness.logs.normalise import normalise
from harness.logs.scan import LogScan, is_log_line, scan_lines

__all__ = ["read_log", "log_boots", "model_from_filename", "not_a_log"]

_STUDY_FILENAME = re.compile(r"^output_model_(?P<name>[^_]+)")
# A unit word vLLM never prints whole, only as the start of a longer one ("sec" of
# "seconds", "min" of "minutes"); and "took X s" where the log's other "took" lines say
# "seconds" (a release that prints "s" there says it on every such line).
_CUT_UNIT = re.compile(r"(?<=\d)\s?(?:sec|second|min|minute)$")
_CUT_S = re.compile(r"\btook\s+\d[\d.]*\s?(?P<unit>s)$")
_TOOK_SECONDS = re.compile(r"\btook\s+\d[\d.]*\s?seconds\b")


def _compose(scan: LogScan) -> tuple[dict[str, float | None], dict[str, float | None],
                                     dict[str, str], dict[str, str]]:
    """Cut a scan into phases and subphases: (phases, subphases, phase_notes, how)."""
    return compose_v0(scan) if scan.facts.get("v0_engine") else compose_v1(scan)


def model_from_filename(path: str | Path) -> str | None:
    """The model of a reference-study log file, ``output_model_<name>[_<params>].txt``."""
    found = _STUDY_FILENAME.match(Path(path).name)
    return found["name"].removesuffix(".txt") if found else None


def _model_name(model_path: str | None) -> str | None:
    if not model_path:
        return None
    # A local folder is named by its last component; a hub id ("org/name") stays whole.
    if model_path.startswith(("/", ".", "~")):
        return Path(model_path.rstrip("/")).name or None
    return model_path


def not_a_log(text: str) -> str | None:
    """Why ``text`` is not a vLLM log (``empty``, ``is JSON, not a vLLM log``, or that no
    line of it is one the reader recognises, ``harness.logs.scan.is_log_line``); None for a
    log, one of a boot that died early included, which reads as a failed boot."""
    if not text.strip():
        return "empty"
    if text.lstrip()[:1] in ("{", "["):
        try:
            json.loads(text)
            return "is JSON, not a vLLM log"
        except ValueError:
            pass
    # The lines as the reader sees them: a quoted, boxed or prefixed paste is still a log.
    if not any(is_log_line(line) for line in normalise(text)):
        return ("no line a vLLM log has (no log record, process tag, traceback or line of "
                "vLLM's): not a vLLM log")
    return None


def read_log(path_or_text: str | Path, *, model: str | None = None) -> boot_result.BootResult:
    """Read one vLLM start-up log into a ``BootResult`` with ``source="log"``.

    Parameters
    ----------
    path_or_text : a ``Path``, a ``str`` without a line break (a file name, unless it is
        itself a line of a vLLM log: a one-line paste without its newline), or the log itself
        (a ``str`` with at least one line break).
    model : the model name to record; by default the log's model (the last component of a
        local path, or the hub id), else the study's file name ``output_model_<name>...txt``.

    Returns
    -------
    BootResult
        ``state="measured"``, or ``"failed"`` where the log stops before start-up finished
        (``error`` says why, ``log_tail`` holds the last lines, the phases it completed are
        kept), or ``"skipped"`` where it finished but times none of the six phases
        (``skip_reason`` says so; a printed total stays in ``printed_total_s``). A phase the log cannot support is ``None`` with ``phase_notes[name] ==
        boot_result.NOT_IN_LOG``; on CPU ``cuda_graph_capture`` is "not applicable: ...".

    A log holding several boots (a restarted pod appending to one file, see ``split_boots``)
    gives its last boot, with ``evidence.boots_in_log``; ``log_boots`` gives them all.

    Raises
    ------
    OSError
        The file is missing or unreadable.
    """
    return log_boots(path_or_text, model=model)[-1]


def log_boots(path_or_text: str | Path, *, model: str | None = None) -> list[boot_result.BootResult]:
    """Every boot of one log (``split_boots``), each read as ``read_log`` reads one; a log
    with one boot gives a list of one. A secret the log shows (an ``api_key='...'`` of vLLM's
    non-default args, a value of this process's secret-named variables) is kept out of them
    (``document.secrets``)."""
    source_path: str | None = None
    if isinstance(path_or_text, Path) or _file_name(path_or_text):
        source_path = str(path_or_text)
        text = Path(path_or_text).read_text(encoding="utf-8", errors="replace")
    else:
        text = path_or_text
    lines = normalise(text)
    partial = None
    if lines and not text.endswith(("\n", "\r")):
        # Noted, still read: a paste or a script's last print often ends without a newline,
        # and a record cut mid-write reads as far as it got.
        partial = lines[-1]
        cut = _CUT_UNIT.search(partial)
        if cut is None and any(_TOOK_SECONDS.search(line) for line in lines[:-1]):
            cut = _CUT_S.search(partial)
            cut = None if cut is None else re.search(r"\s?s$", partial)
        if cut is not None:
            # "took 10.61 s" at the very end may be "seconds" cut short (a killed boot's
            # file): the number stays in the partial line, not read as a time.
            lines[-1] = partial[:cut.start()]
    boots = split_boots(lines) or [[]]
    secrets = environment_secrets()
    out = []
    for i, boot in enumerate(boots):
        last = i == len(boots) - 1
        result = _read_boot(boot, partial if last else None, source_path, model)
        if len(boots) > 1:
            result.evidence.boots_in_log = len(boots)
            result.evidence.boot_in_log = i + 1
        out.append(result.redacted(secrets))
    return out


def _file_name(text: str) -> bool:
    """Whether a ``str`` given to ``log_boots`` names a file rather than holding the log: it
    has no line break, and it is no line of a vLLM log (a one-line log pasted without its
    final newline, "INFO 04-28 16:20:20 [backends.py:1128] ... 15.26 s"), unless a file of
    that name exists."""
    if "\n" in text or "\r" in text:
        return False
    return os.path.isfile(text) or not any(is_log_line(line) for line in normalise(text))


def _read_boot(lines: list[str], partial: str | None, source_path: str | None,
               model: str | None) -> boot_result.BootResult:
    scan = scan_lines(lines)
    facts = scan.facts
    phases, subphases, notes, how = _compose(scan)

    state: boot_result.State = "failed" if scan.truncated else "measured"
    error = log_tail = None
    # A finished log that times no phase measured nothing per phase: never fitted or compared.
    skip_reason = None if scan.truncated else no_phase_reason(scan, phases, notes)
    if skip_reason is not None:
        state = "skipped"
    if scan.truncated:
        error = facts.get("error") or "log ends before start-up finished (no 'init engine ... took' line)"
        log_tail = "\n".join(lines[-20:])
        reached = phases_reached(scan)
        inside = unfinished_phase(scan, reached, notes)
        # The phases after the one it died in never ran; those before it that the log does
        # not time stay "not in the log".
        stop = boot_result.PHASE_NAMES.index(inside) if inside is not None else reached
        for i, name in enumerate(boot_result.PHASE_NAMES):
            if phases.get(name) is None and i > stop:
                notes[name] = boot_result.FAILED_BEFORE
        if inside is not None:
            notes[inside] = f"{boot_result.UNFINISHED_PREFIX}: the log ends inside this phase"

    model_path = facts.get("model_path")
    name = model or _model_name(model_path) or (
        model_from_filename(source_path) if source_path else None) or (
        Path(source_path).stem if source_path else "unknown")
    version = facts.get("vllm_version")
    version_source = facts.get("vllm_version_line") if version else (
        "inferred: " + "; ".join(facts["vllm_version_clues"])
        if "vllm_version_range" in facts else None)
    platform = str(facts["platform"]).lower() if "platform" in facts else None
    evidence = Evidence(
        facts=facts, composition=how, marks=scan.marks,
        # Every value of the duration lines that repeat (log_durations holds their totals).
        occurrences={k: v for k, v in scan.occurrences.items() if len(v) > 1},
        unread=scan.unread, truncated=scan.truncated)
    if partial is not None:
        evidence.partial_last_line = partial
    # Each cache layer on its own (harness.cache_layers): the AOT artifact, the piecewise
    # graphs, the StartupPlan, as the lines say.
    eager = facts.get("enforce_eager") is True or compile_disabled(facts)
    evidence.compile_cache_layers = observe_lines(lines, platform=platform,
                                                  compiled=False if eager else None)
    total, words = printed_total(scan)
    return boot_result.BootResult(
        state=state, model=name, model_path=model_path, source="log", source_path=source_path,
        vllm_version=version, vllm_version_source=version_source,
        vllm_version_range=facts.get("vllm_version_range"), skip_reason=skip_reason,
        platform=platform, phases=phases, phase_notes=notes,
        subphases=subphases, compile_cache_observed=facts.get("compile_cache"),
        log_durations=dict(scan.durations), events=scan.events, error=error, log_tail=log_tail,
        versions={"vllm": version} if version else {}, evidence=evidence,
        engine_config=engine_config(facts), printed_total_s=total, printed_total_line=words,
    )
