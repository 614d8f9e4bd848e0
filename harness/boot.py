"""One real vLLM boot, isolated in its own process group: BootSpec -> BootResult.

The parent (this module) prepares the untimed state (compile cache, page cache), starts the
child as a new session, enforces a hard timeout, kills the whole group when the boot is over
or has failed, and checks that nothing of it survived. It times nothing itself except the
launch instant, the origin of the boot's clock: every other instant is written by the
probes inside the boot's own processes on the same monotonic clock.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import psutil
from pydantic import BaseModel, ConfigDict, Field

from harness import pagecache, processes
from harness.registry import shims_for, wrap_targets_for
from harness.schema import (
    COMPILE_CACHE_MODES,
    ENTRYPOINTS,
    FAILED_BEFORE,
    LOADERS,
    NOT_APPLICABLE_PREFIX,
    PAGE_CACHE_MODES,
    PHASE_NAMES,
    UNFINISHED_PREFIX,
    BootResult,
    ProcessDeath,
)
from harness.timeline import Timeline, cut_phases, timeline_events, total_s

PROBE_DIR = Path(__file__).parent / "probe"
CHILD_SCRIPT = Path(__file__).parent / "_child.py"
DEFAULT_QUESTION = "What is the capital of France?"
LOG_TAIL_LINES = 60

# Defaults, each used only where neither the environment nor the caller (a matrix file) sets
# the value: the user's settings win. The fixture ones suit the 2-core, 24 GiB machine the
# fixtures are made for; a user's model boots with vLLM's own defaults.
DEFAULT_ENGINE_KWARGS: dict[str, Any] = {"seed": 0}
FIXTURE_ENGINE_KWARGS: dict[str, Any] = {"dtype": "bfloat16", "max_model_len": 512}
DEFAULT_ENV: dict[str, str] = {
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
FIXTURE_ENV: dict[str, str] = {
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; vLLM's default request exceeds small machines
}
# A model from a folder needs no hub; a hub id does (vLLM downloads it where it may).
LOCAL_MODEL_ENV: dict[str, str] = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# What the harness itself needs, over anything: log lines as they are written.
HARNESS_ENV: dict[str, str] = {"PYTHONUNBUFFERED": "1"}
# A hub id as vLLM and huggingface_hub take it: ORG/NAME.
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
# Environment variables recorded with each boot when set: what can change a start-up.
_RECORDED_ENV_PREFIXES = ("VLLM_", "HF_", "TRANSFORMERS_", "TORCH", "OMP_", "CUDA_VISIBLE")


@dataclass
class Prepared:
    """A boot whose untimed state is set: what :func:`launch_boot` needs."""

    spec: "BootSpec"
    work: Path
    env: dict[str, str]
    evidence: dict[str, Any]
    version: str | None
    events_path: Path
    log_path: Path
    child_result_path: Path


class BootError(ValueError):
    """A boot that cannot even be attempted: bad spec, missing model folder, ..."""


def cache_home() -> Path:
    return Path(os.environ.get("COLDSTART_CACHE_DIR", Path.home() / ".cache" / "vllm-coldstart"))


def installed_version(*dists: str) -> str | None:
    """The version of the first of ``dists`` that is installed."""
    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def installed_vllm_version() -> str | None:
    return installed_version("vllm", "vllm-cpu")


class BootSpec(BaseModel):
    """Everything that defines one boot. The matrix axes are named as in the test ids."""

    model_config = ConfigDict(extra="forbid")

    model: str
    # Exactly one: a local model folder, or a hub id that vLLM resolves (and downloads).
    model_path: Path | None = None
    hub_id: str | None = None
    revision: str | None = None
    # The fixture defaults (FIXTURE_ENGINE_KWARGS, FIXTURE_ENV): for the suite's own fixtures.
    fixture_defaults: bool = True
    # Where each engine_kwargs / env value came from ("matrix", "matrix model", "axis"), as
    # recorded with the result; unnamed ones are "caller".
    provenance: dict[str, str] = Field(default_factory=dict)
    # The cell's extra axes (engine arguments, variables), recorded with the result; their
    # values are already in engine_kwargs / env.
    axes: dict[str, Any] = Field(default_factory=dict)
    loader: str = "safetensors"
    compile_cache: str = "cold"
    page_cache: str = "warm"
    entrypoint: str = "offline"
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 600.0
    question: str = DEFAULT_QUESTION
    # Record the real model's answer (token ids and log-probs) for harness.correctness.
    check_answer: bool = False
    max_tokens: int = 16
    runai_concurrency: int = 4
    tensorizer_uri: Path | None = None
    work_dir: Path | None = None
    # False: no probe in the boot's processes (only readiness is marked): the bare boot that
    # the probe overhead is measured against (benchmarks/overhead.py).
    instrument: bool = True

    def check(self) -> None:
        """Reject what cannot boot, with one line that names the problem."""
        for axis, value, allowed in (("loader", self.loader, LOADERS),
                                     ("compile_cache", self.compile_cache, COMPILE_CACHE_MODES),
                                     ("page_cache", self.page_cache, PAGE_CACHE_MODES),
                                     ("entrypoint", self.entrypoint, ENTRYPOINTS)):
            if value not in allowed:
                raise BootError(f"unknown {axis} {value!r}; choose one of {', '.join(allowed)}")
        if not self.timeout_s > 0:  # also NaN
            raise BootError(f"timeout {self.timeout_s} s: must be more than 0")
        if (self.model_path is None) == (self.hub_id is None):
            raise BootError("name exactly one model: a folder (model_path) or a hub id")
        if self.hub_id is not None and not HUB_ID.match(self.hub_id):
            raise BootError(f"{self.hub_id!r} is not a hub id (ORG/NAME)")
        if self.revision is not None and self.hub_id is None:
            raise BootError("revision is for a hub id; a folder is the revision it holds")
        if self.model_path is not None and not self.model_path.is_dir():
            raise BootError(f"model folder {self.model_path} does not exist")
        if self.model_path is not None and not (self.model_path / "config.json").is_file():
            raise BootError(f"model folder {self.model_path} has no config.json")
        if self.loader == "tensorizer" and (self.tensorizer_uri is None
                                            or not Path(self.tensorizer_uri).is_file()):
            raise BootError("loader tensorizer needs a serialized model file (tensorizer_uri); "
                            f"got {self.tensorizer_uri}")
        reserved = {"model", "load_format", "model_loader_extra_config", "enforce_eager"}
        clash = reserved & set(self.engine_kwargs)
        if clash:
            raise BootError(f"engine argument(s) {sorted(clash)} are set by the axes "
                            "(model, loader, compile_cache); use those instead")

    @property
    def model_ref(self) -> str:
        """What vLLM is given as ``model``: the folder, or the hub id."""
        return str(self.model_path) if self.model_path is not None else str(self.hub_id)

    def default_engine_kwargs(self) -> dict[str, Any]:
        return {**DEFAULT_ENGINE_KWARGS, **(FIXTURE_ENGINE_KWARGS if self.fixture_defaults
                                            else {})}

    def default_env(self) -> dict[str, str]:
        return {**DEFAULT_ENV, **(FIXTURE_ENV if self.fixture_defaults else {}),
                **(LOCAL_MODEL_ENV if self.model_path is not None else {})}

    def boot_env(self, environ: dict[str, str] | None = None) -> dict[str, str]:
        """The environment the boot gets (before the harness's per-boot cache folders and
        probe variables): defaults, then the exported environment, then the caller's."""
        environ = dict(os.environ if environ is None else environ)
        return {**self.default_env(), **environ, **self.env, **HARNESS_ENV}

    def settings_used(self, environ: dict[str, str] | None = None) -> dict[str, Any]:
        """Every engine argument and start-up variable the boot is given, with where it came
        from: ``default`` (the harness's), ``environment`` (exported), ``axis`` (the cell's
        loader / compile cache), or the caller's (``matrix``, ``matrix model``, ...)."""
        environ = dict(os.environ if environ is None else environ)
        defaults, given = self.default_engine_kwargs(), self.engine_kwargs
        args = {}
        for name, value in self.effective_engine_kwargs().items():
            source = (self.provenance.get(name, "caller") if name in given
                      else "default" if name in defaults and defaults[name] == value
                      else "axis")
            args[name] = {"value": value, "source": source}
        env = {}
        default_env = self.default_env()
        names = set(default_env) | set(self.env) | {
            k for k in environ if k.startswith(_RECORDED_ENV_PREFIXES)}
        for name in sorted(names - _CACHE_LOCATION_VARS):
            if name in self.env:
                env[name] = {"value": self.env[name],
                             "source": self.provenance.get(name, "caller")}
            elif name in environ:
                env[name] = {"value": environ[name], "source": "environment"}
            else:
                env[name] = {"value": default_env[name], "source": "default"}
        return {"engine_args": args, "env": env}

    def effective_engine_kwargs(self) -> dict[str, Any]:
        kwargs = {**self.default_engine_kwargs(), **self.engine_kwargs}
        if self.revision is not None:
            kwargs["revision"] = self.revision
        if self.loader == "safetensors":
            kwargs["load_format"] = "safetensors"
        elif self.loader == "runai_streamer":
            kwargs["load_format"] = "runai_streamer"
            kwargs["model_loader_extra_config"] = {"concurrency": self.runai_concurrency}
        elif self.loader == "tensorizer":
            kwargs["load_format"] = "tensorizer"
            kwargs["model_loader_extra_config"] = {"tensorizer_uri": str(self.tensorizer_uri)}
        if self.compile_cache == "off":
            kwargs["enforce_eager"] = True
        return kwargs

    def compile_cache_key(self) -> str:
        """Boots with equal keys can share a warm compile cache.

        vLLM keys its AOT cache on more than the version and the engine arguments (its
        VLLM_* variables, its config hash). Seen on 2026-12-01: CI's warm boot computed
        another AOT key than the cache a cold boot from another checkout had filled (same
        vllm-cpu 0.32.0, same arguments; what differed was not found) and compiled again. So
        a cache is shared only within one Python environment and one set of VLLM_* values,
        and a run's cold boot replaces it (``keep_as_warm_cache``).
        """
        env = self.boot_env()
        model = str(self.model_path.resolve()) if self.model_path is not None else self.hub_id
        ident = {"model_path": model, "loader": self.loader,
                 "engine_kwargs": self.effective_engine_kwargs(),
                 "vllm": installed_vllm_version(), "torch": installed_version("torch"),
                 "python_env": sys.prefix,
                 "vllm_env": {k: v for k, v in env.items()
                              if k.startswith("VLLM_") and k not in _CACHE_LOCATION_VARS},
                 "entrypoint": self.entrypoint}
        return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def weight_payload_files(self) -> list[Path]:
        """The files the loader reads the weights from (what bytes and GB/s are counted on)."""
        suffixes = (".tensors",) if self.loader == "tensorizer" else (".safetensors", ".bin",
                                                                      ".pt")
        return [f for f in self.weight_files() if f.suffix in suffixes]

    def weight_files(self) -> list[Path]:
        if self.model_path is None:
            # A hub model's files, where this machine has them already (vLLM's download
            # cache); none before its first download.
            files = pagecache.files_under([p for p in [_hub_snapshot(self)] if p])
        else:
            files = pagecache.files_under([self.model_path])
        if self.loader == "tensorizer" and self.tensorizer_uri:
            files.append(Path(self.tensorizer_uri))
        return files


def _hub_snapshot(spec: BootSpec) -> Path | None:
    """The local snapshot folder of a hub model, or None if it was never downloaded here."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(spec.hub_id, revision=spec.revision,
                                      local_files_only=True))
    except Exception:  # not downloaded, or huggingface_hub missing: nothing local to count
        return None


# Where the caches live, which the harness sets per boot: not what they hold.
_CACHE_LOCATION_VARS = {"VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"}


def aot_cache_keys(cache_dir: Path) -> list[str]:
    """The AOT-compile keys (vLLM's hash folders) a compile cache holds, oldest first."""
    root = cache_dir / "vllm" / "torch_compile_cache" / "torch_aot_compile"
    if not root.is_dir():
        return []
    return [d.name for d in sorted(root.iterdir(), key=lambda d: d.stat().st_mtime)
            if d.is_dir()]


def _compile_cache_dirs(spec: BootSpec, work: Path) -> dict[str, str]:
    if spec.compile_cache == "warm":
        root = cache_home() / "compile-cache" / spec.compile_cache_key()
    else:  # cold (and off, where nothing is compiled): fresh, empty, thrown away
        root = work / "compile-cache"
    root.mkdir(parents=True, exist_ok=True)
    return {"VLLM_CACHE_ROOT": str(root / "vllm"),
            "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
            "TRITON_CACHE_DIR": str(root / "triton")}


def _primed_marker(spec: BootSpec) -> Path:
    return cache_home() / "compile-cache" / spec.compile_cache_key() / "primed.json"


_STOP_SIGNALS = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}


class BootInterrupted(KeyboardInterrupt):
    """The parent got SIGTERM / SIGHUP during a boot (a cancelled CI job, ``timeout``)."""


@contextmanager
def _signals_interrupt():
    """Turn SIGTERM and SIGHUP into ``BootInterrupted`` while a boot runs.

    Python's default for SIGTERM ends the process without unwinding, so the ``finally`` that
    kills the boot's group would not run, and the boot, a session of its own, would outlive
    the parent. A KeyboardInterrupt is what pytest and the CLI already treat as "stop now".
    Signals can only be handled in the main thread; elsewhere nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, _frame):
        raise BootInterrupted(f"{signal.Signals(signum).name} during a boot")

    # A signal the process ignores (nohup's SIGHUP) stays ignored.
    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)
                if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``."""
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except (ProcessLookupError, psutil.Error):  # gone since the listing
            continue
    return sorted(out)


def _marked_processes(marker: str) -> list[int]:
    """Live processes whose environment holds ``marker`` (``NAME=value``).

    Every descendant of a boot inherits its environment, also one that left the process group
    with setsid / setpgrp (vLLM's data-parallel supervisor does), which ``killpg`` misses.
    """
    name, _, value = marker.partition("=")
    me, out = os.getpid(), []
    # Another user's environment cannot be read: psutil gives None for it (ad_value).
    for proc in psutil.process_iter(["environ", "status"]):
        env = proc.info["environ"] or {}
        if proc.pid != me and env.get(name) == value \
                and proc.info["status"] != psutil.STATUS_ZOMBIE:
            out.append(proc.pid)
    return sorted(out)


def kill_group(pgid: int, grace_s: float = 3.0, marker: str | None = None) -> list[int]:
    """SIGTERM, then SIGKILL, the whole group; return pids still alive afterwards.

    With ``marker`` (an environment entry unique to the boot), processes of the boot that
    left the group are signalled too.
    """
    def members() -> list[int]:
        found = set(_group_members(pgid))
        if marker is not None:
            found |= set(_marked_processes(marker))
        return sorted(found)

    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        alive = members()
        if not alive:
            return []
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        for pid in set(alive) - set(_group_members(pgid)):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and members():
            time.sleep(0.05)
    return members()


def _tail(path: Path, n: int = LOG_TAIL_LINES) -> str:
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


def _root_cause(log_text: str, fallback: str | None) -> str | None:
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


def _error_naming_deaths(error: str | None, deaths: list[ProcessDeath]) -> str | None:
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


def _compile_cache_observed(tl: Timeline, spec: BootSpec, scan: Any) -> str:
    if spec.compile_cache == "off":
        return "disabled"
    loads = tl.ends.get("torch_compile.compiled_graph_load", [])
    if any(r.get("ok") and not r.get("none") for r in loads):
        return "hit"
    if scan is not None and scan.facts.get("compile_cache") == "load_failure":
        return "load_failure"
    if tl.intervals.get("torch_compile"):
        return "miss"
    return "unknown"


def prepare_boot(spec: BootSpec, *, progress: Callable[[str], None] | None = None,
                 prime_if_needed: bool = True) -> Prepared | BootResult:
    """The untimed part: check the spec, prime/clear the compile cache, set the page cache.

    Returns a skipped BootResult when the requested page-cache state cannot be reached.
    Call :func:`launch_boot` right after: the page cache is only as prepared as it is now.
    """
    spec.check()
    work = Path(spec.work_dir or tempfile.mkdtemp(prefix="coldstart-boot-"))
    try:
        return _prepare_in(spec, work, progress, prime_if_needed)
    except BaseException:
        if spec.work_dir is None:  # a folder we made and nothing will name: not left behind
            shutil.rmtree(work, ignore_errors=True)
        raise


def _prepare_in(spec: BootSpec, work: Path, progress: Callable[[str], None] | None,
                prime_if_needed: bool) -> Prepared | BootResult:
    say = progress or (lambda _msg: None)
    work.mkdir(parents=True, exist_ok=True)
    evidence: dict[str, Any] = {"work_dir": str(work)}

    if spec.compile_cache == "warm" and prime_if_needed and not _primed_marker(spec).exists():
        say("priming the compile cache (unmeasured boot)")
        primer = spec.model_copy(update={"work_dir": work / "priming", "page_cache": "warm"})
        primed = run_boot(primer, progress=progress, prime_if_needed=False)
        evidence["priming"] = {"state": primed.state, "compile_cache_observed":
                               primed.compile_cache_observed, "error": primed.error}
        if primed.state == "measured":
            _primed_marker(spec).write_text(json.dumps({"primed_by": primed.model_dump(
                mode="json", include={"wall_s", "phases", "vllm_version"})}))

    if spec.compile_cache == "warm":
        # What the warm boot finds: a key it adds beside them is vLLM compiling again.
        evidence["aot_cache_keys_before"] = aot_cache_keys(_primed_marker(spec).parent)

    env = spec.boot_env()
    evidence["settings"] = spec.settings_used()
    env.update(_compile_cache_dirs(spec, work))
    if spec.compile_cache == "cold":
        shutil.rmtree(work / "compile-cache", ignore_errors=True)
        env.update(_compile_cache_dirs(spec, work))
    version = installed_vllm_version()
    targets = [t.to_probe() for t in wrap_targets_for(version, None)]
    events_path = work / "events.jsonl"
    events_path.unlink(missing_ok=True)
    log_path = work / "boot.log"
    child_result_path = work / "child_result.json"
    child_result_path.unlink(missing_ok=True)
    if spec.instrument:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PROBE_DIR), *filter(None, [env.get("PYTHONPATH")])])
    env["COLDSTART_EVENTS"] = str(events_path)
    env["COLDSTART_BOOT_ID"] = uuid.uuid4().hex  # every process of the boot inherits it
    env["COLDSTART_PROBE_TARGETS"] = json.dumps(targets)
    env["COLDSTART_SHIMS"] = ",".join(s.name for s in shims_for(version, spec.loader))

    child_spec = {"model_path": spec.model_ref, "loader": spec.loader,
                  "entrypoint": spec.entrypoint, "engine_kwargs": spec.effective_engine_kwargs(),
                  "question": spec.question, "max_tokens": spec.max_tokens,
                  "child_result_path": str(child_result_path)}
    (work / "child_spec.json").write_text(json.dumps(child_spec, indent=2))

    say(f"page cache -> {spec.page_cache}")
    try:
        files = spec.weight_files()
        if spec.hub_id is not None and not files:
            # Nothing local to warm or evict: the boot downloads the model, and that is in
            # its time (model_loading), as it is on a fresh node.
            evidence["page_cache"] = {"mode": spec.page_cache, "note": "hub model not on this "
                                      "machine: downloaded by the boot"}
        else:
            evidence["page_cache"] = pagecache.prepare(files, spec.page_cache)
    except pagecache.PageCacheError as exc:
        return BootResult(state="skipped", skip_reason=str(exc), **_identity(spec, version),
                          evidence=evidence)
    return Prepared(spec, work, env, evidence, version, events_path, log_path,
                    child_result_path)


def launch_boot(prepared: Prepared, *, progress: Callable[[str], None] | None = None
                ) -> BootResult:
    """The measured part: one boot in a fresh process group, cut into phases.

    A boot that fails or times out still returns a BootResult (``state="failed"``) holding the
    phases it completed, the error and the log tail: a failure is recorded, never lost.
    """
    say = progress or (lambda _msg: None)
    spec, work, env, evidence = prepared.spec, prepared.work, prepared.env, prepared.evidence
    version, events_path = prepared.version, prepared.events_path
    log_path, child_result_path = prepared.log_path, prepared.child_result_path

    say("booting vLLM")
    with open(log_path, "wb") as log, _signals_interrupt():
        t0 = time.monotonic_ns()  # the boot's origin: the one instant the parent takes
        # Written first, so an events file alone is enough to replay the cut.
        events_path.write_text(json.dumps({"t": t0, "e": "boot.t0", "k": "mark",
                                           "target": "parent", "pid": os.getpid(),
                                           "proc": "parent"}) + "\n")
        # Held while the child is started: a signal then would leave a session nobody kills.
        # Delivered inside the try below, whose finally kills the boot.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            proc = subprocess.Popen(
                [sys.executable, str(CHILD_SCRIPT), str(work / "child_spec.json")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=str(work), start_new_session=True)
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            raise
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            watch = processes.GroupWatch(proc.pid)
            timed_out = _wait_with_progress(proc, events_path, t0, spec.timeout_s, say, watch)
            returned_ns = time.monotonic_ns()
        finally:
            # Also on Ctrl-C / SIGTERM: the boot's group is a session of its own, which the
            # terminal's signals never reach. A second Ctrl-C or SIGTERM must not cut the kill
            # short: held until it is done (in this thread; the harness starts no other).
            signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
            # Unique to this boot: another run's boot on the same machine is never matched.
            marker = f"COLDSTART_BOOT_ID={env['COLDSTART_BOOT_ID']}"
            try:
                escaped = sorted(set(_marked_processes(marker)) - set(_group_members(proc.pid)))
                survivors = kill_group(proc.pid, marker=marker)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # stuck in uninterruptible sleep: keep the record
            survivors = sorted(set(survivors) | {proc.pid})
    evidence["process_wall_s"] = (returned_ns - t0) / 1e9
    evidence["pgid"] = proc.pid  # start_new_session: the child leads its own group
    evidence["exit_code"] = proc.returncode
    if survivors:
        evidence["survivors"] = survivors
    if escaped:
        # Killed with the rest, found by their inherited environment.
        evidence["escaped_process_group"] = escaped

    child: dict[str, Any] = {}
    if child_result_path.exists():
        try:
            child = json.loads(child_result_path.read_text())
        except json.JSONDecodeError:
            child = {}
    # A boot that was killed ran until the kill: calls still open end there, not at the last
    # event they happened to write.
    tl = Timeline.from_file(events_path, t0, end_unfinished_at=returned_ns if timed_out else None)
    ready = tl.first_mark("ready")
    measured = (not timed_out and child.get("state") == "measured" and ready is not None)
    # Deaths before the harness's own kill; in a measured boot, only before ready (vLLM
    # terminates its EngineCore at exit, which is no failure).
    died = processes.deaths(tl, front_pid=proc.pid,
                            front_status=None if timed_out else proc.returncode,
                            front_ended=returned_ns, watch=watch,
                            until=ready if measured else returned_ns,
                            entrypoint=spec.entrypoint)
    if died:
        # A dead process's open calls end at its death, not at the boot's last event.
        tl = Timeline.from_file(events_path, t0,
                                end_unfinished_at=returned_ns if timed_out else None,
                                process_ends={d["pid"]: d["at"] for d in died})
    log_msgs = [r.get("msg", "") for r in tl.logs]
    first_token = tl.first_mark("first_token")
    scan = _scan_logs(log_msgs, version)
    # The offline child asks vLLM; the serve child cannot (the server is another process).
    platform = child.get("platform") or (scan.facts.get("platform") if scan else None)
    engine_kwargs = spec.effective_engine_kwargs()
    compile_enabled = not engine_kwargs.get("enforce_eager", False)

    error = None
    if not measured:
        log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
        if timed_out:
            error = f"timed out after {spec.timeout_s:.0f} s (the whole process group was killed)"
            if ready is not None:
                error += "; start-up had finished (ready), the first request had not"
        else:
            error = _root_cause(log_text, child.get("error")) or \
                f"boot exited with code {proc.returncode} without a result"
        if child.get("traceback"):
            evidence["child_traceback"] = child["traceback"]
    if measured or ready is not None:
        # What comes after ready (the first request) is not start-up, even in a failed boot.
        end = ready
    elif timed_out:
        end = returned_ns
    else:
        end = max([t for ivs in tl.intervals.values() for _, t in ivs] + [t0 + 1])
    cut = cut_phases(tl, end, platform=platform, compile_enabled=compile_enabled)
    if not measured:
        unfinished = {u.split(" ")[0].split(".")[0] for u in tl.unfinished}
        if timed_out and end == returned_ns:
            # Killed: the phase that owned the last instant was cut short, whether or not a
            # probed call was open (a hung handshake between two calls of the bootstrap).
            unfinished |= {n for n, ivs in cut.owned.items() if any(a < end <= b for a, b in ivs)}
        for name, value in cut.phases.items():
            if value is None and not cut.phase_notes[name].startswith(NOT_APPLICABLE_PREFIX):
                cut.phase_notes[name] = f"{FAILED_BEFORE} completed"
            elif value is not None and name in unfinished:
                # Reported, but the boot died or was killed inside it: a lower bound.
                cut.phase_notes[name] = f"{UNFINISHED_PREFIX}: the boot ended inside this phase"
    process_deaths = processes.with_phases(died, tl, cut)
    if not measured:
        error = _error_naming_deaths(error, process_deaths)

    answer = child.get("response_text")
    if measured and spec.check_answer and child.get("answer"):
        # Judged after the boot by harness.correctness.judge_answer against a float32 reference
        # of this machine; a wrong answer does not make the start-up time wrong.
        evidence["answer"] = {**child["answer"], "dtype": engine_kwargs.get("dtype"),
                              "compiled": compile_enabled}
    if scan is not None and scan.facts.get("compile_cache_load_failure"):
        # vLLM's own words for why the compile cache did not load (harness.correctness judges it).
        evidence["compile_cache_load_failure"] = scan.facts["compile_cache_load_failure"]
    cache_dir = Path(env["VLLM_CACHE_ROOT"]).parent
    if compile_enabled and cache_dir.is_dir():
        files = [f for f in cache_dir.rglob("*") if f.is_file()]
        # What the compile left on disk: analysis reads compiled-graph size from it.
        evidence["compile_cache_dir"] = str(cache_dir)
        evidence["compile_cache_bytes"] = sum(f.stat().st_size for f in files)
    evidence.update(
        residual_parts_s=cut.residual_parts_s,
        loader_targets=sorted({r["target"] for name, ends in tl.ends.items()
                               if name == "model_loading.load_weights"
                               or name.startswith("loader.") for r in ends}),
        weights=_weights_evidence(tl, spec),
        unfinished_calls=tl.unfinished,
        probe_problems=tl.probe_problems,
        processes=len(tl.processes),
        # Each probed function's own duration (no priority cut): what vLLM's log lines time.
        probe_durations_s={name: total_s(ivs)
                           for name, ivs in sorted(tl.intervals.items())},
        engine_kwargs=engine_kwargs,
        # Which entry point ran: the `vllm` console script fails under vllm-cpu (its package
        # metadata is named vllm-cpu), so serve runs the module.
        entrypoint_command=child.get("entrypoint_command",
                                     "LLM(...)" if spec.entrypoint == "offline" else None),
    )
    events_out = timeline_events(tl)

    result = BootResult(
        state="measured" if measured else "failed",
        **_identity(spec, child.get("versions", {}).get("vllm") or version),
        platform=platform,
        phases=cut.phases, phase_notes=cut.phase_notes, subphases=cut.subphases,
        wall_s=cut.wall_s, residual_s=cut.residual_s,
        ready_s=(ready - t0) / 1e9 if ready else None,
        ttft_s=(first_token - ready) / 1e9 if (first_token and ready) else None,
        response_text=answer,
        compile_cache_observed=_compile_cache_observed(tl, spec, scan),
        log_durations={k: float(v) for k, v in scan.durations.items()} if scan else {},
        events=events_out,
        shims=child.get("shims", []) + sorted({
            next((f"{x.name}: {x.reason}" for x in shims_for(version, spec.loader)
                  if x.name == t), t) for t in tl.marks_targets("shim.applied")}),
        error=error,
        process_deaths=process_deaths,
        log_tail=_tail(log_path) if not measured else None,
        versions=child.get("versions", {}),
        evidence=evidence,
        engine_config=_engine_config(scan),
        axes=dict(spec.axes),
    )
    (work / "result.json").write_text(result.model_dump_json(indent=2))
    return result


def keep_as_warm_cache(spec: BootSpec, result: BootResult) -> bool:
    """Keep a measured cold boot's compile cache as the warm cache of its configuration.

    It is exactly what a warm boot of the same configuration needs, so the warm cell needs no
    priming boot of its own. Untimed: call it after the measurement. Copied into a sibling
    and renamed into place, so a concurrent reader never sees half a cache.
    """
    source = Path(result.evidence.get("work_dir", "")) / "compile-cache"
    if spec.compile_cache != "cold" or result.state != "measured" or not source.is_dir():
        return False
    # A cache kept before (an earlier run, another checkout) is replaced: this boot's is the
    # one the warm boots of this run must reuse, made by this code in this environment.
    target = cache_home() / "compile-cache" / spec.compile_cache_key()
    staging = target.with_name(target.name + f".partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, symlinks=True)
    (staging / "primed.json").write_text(json.dumps({
        "primed_by": f"the measured cold boot in {result.evidence.get('work_dir')}",
        "wall_s": result.wall_s, "vllm_version": result.vllm_version}))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
    result.evidence["compile_cache_dir"] = str(target)  # the copy outlives the work folder
    return True


def discard_work_dir(result: BootResult) -> None:
    """Remove a measured or skipped boot's work folder (its log, events, cold compile cache).

    A failed boot's folder is kept: its log and events are what explains the failure.
    """
    work = result.evidence.get("work_dir")
    if result.state in ("measured", "skipped") and work:
        shutil.rmtree(work, ignore_errors=True)


def run_boot(spec: BootSpec, *, progress: Callable[[str], None] | None = None,
             prime_if_needed: bool = True) -> BootResult:
    """Prepare and launch one boot. A spec that cannot be attempted raises BootError."""
    prepared = prepare_boot(spec, progress=progress, prime_if_needed=prime_if_needed)
    if isinstance(prepared, BootResult):
        return prepared
    result = launch_boot(prepared, progress=progress)
    keep_as_warm_cache(spec, result)
    return result


_PROGRESS_EVENTS = {name: name for name in PHASE_NAMES}
_PROGRESS_EVENTS.update({"mark.engine_client": "engine core start", "mark.executor_init":
                         "worker start", "ready": "ready", "first_token": "first token"})


def _wait_with_progress(proc: subprocess.Popen, events_path: Path, t0: int, timeout_s: float,
                        say: Callable[[str], None], watch: processes.GroupWatch) -> bool:
    """Wait for the child, telling each phase as the probes report it, and watching the boot's
    processes. True on timeout."""
    deadline = time.monotonic() + timeout_s
    offset = 0
    seen: set[str] = set()
    while True:
        try:
            proc.wait(timeout=0.5)
            return False
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() >= deadline:
            return True
        watch.poll()
        try:
            with open(events_path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except OSError:
            continue
        complete = chunk.rfind(b"\n") + 1
        offset += complete
        for line in chunk[:complete].splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            label = _PROGRESS_EVENTS.get(rec.get("e"))
            if label and rec.get("k") in ("start", "mark") and label not in seen:
                seen.add(label)
                say(f"[{(rec['t'] - t0) / 1e9:7.1f} s] {label}")


def _weights_evidence(tl: Timeline, spec: BootSpec) -> dict[str, Any]:
    """Bytes the weight loading really read from storage, and at what rate."""
    files = spec.weight_payload_files()
    out: dict[str, Any] = {"file_bytes": sum(f.stat().st_size for f in files)}
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
    out["load_weights_s"] = seconds
    io = [(r.get("io_start"), r.get("io")) for r in outer]
    if all(a and b for a, b in io):
        # read_bytes: what reached the block device (page-cache misses); rchar: every byte
        # returned by read-like calls, cached or not (mmap'd reads count in neither).
        out["storage_read_bytes"] = sum(b["read_bytes"] - a["read_bytes"] for a, b in io)
        out["rchar_bytes"] = sum(b["rchar"] - a["rchar"] for a, b in io)
    if seconds > 0:
        out["load_gbps"] = out["file_bytes"] / seconds / 1e9
    return out


def _identity(spec: BootSpec, version: str | None) -> dict[str, Any]:
    return {"model": spec.model, "model_path": spec.model_ref, "loader": spec.loader,
            "compile_cache": spec.compile_cache, "page_cache": spec.page_cache,
            "entrypoint": spec.entrypoint, "vllm_version": version}


def _engine_config(scan: Any) -> dict[str, Any]:
    if scan is None:
        return {}
    from harness.logs import engine_config

    return engine_config(scan.facts)


def _scan_logs(msgs: list[str], version: str | None):
    """vLLM's own log records of the boot, through the log reader (the second source)."""
    try:
        from harness.logs import scan_lines
    except ImportError:  # the log reader is optional for a boot
        return None
    return scan_lines(msgs, version)
