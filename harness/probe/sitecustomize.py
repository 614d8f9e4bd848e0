"""vllm-coldstart probe: runs at the start of every Python process of a measured boot.

The harness puts this folder first on the child's PYTHONPATH, so the front end, the spawned
EngineCore and the spawned Worker (and any helper process they start) all run it before their
first import. It is inert unless COLDSTART_EVENTS is set.

It installs an import hook that, right after a target module has executed, replaces the
target functions in that module with timing wrappers. Nothing in vLLM is patched on disk and
nothing is wrapped before its module exists. Each interval is written as two JSON lines
(start, end) on ``time.monotonic_ns()``, the one clock every process of the machine shares,
to the boot's events file. vLLM's own log records are captured into the same file with the
monotonic instant they were emitted at.

It also records the exit status of every child a process of the boot reaps
(``process.reaped``): only a process's parent can wait for it, and every parent in the boot
runs this probe, so a Worker killed by the OOM killer is reported by the EngineCore that reaps
it, with the signal, whoever its parent is.

Standard library only, and cheap: this runs in every process, Inductor's compile workers too
(psutil is used for I/O counters where the boot's environment has it). A failure here is
recorded as a ``probe.error`` event and never breaks the boot.
"""

import json
import os
import sys
import time

_EVENTS_PATH = os.environ.get("COLDSTART_EVENTS")


def _chain_next_sitecustomize():
    # Keep the machine's own sitecustomize working: we shadow it by name.
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.abspath(entry or ".") == here or not os.path.isfile(candidate):
            continue
        with open(candidate) as fh:
            code = compile(fh.read(), candidate, "exec")
        exec(code, {"__name__": "_coldstart_chained_sitecustomize", "__file__": candidate})
        return


class _Recorder:
    def __init__(self, path):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.pid = os.getpid()

    def _process(self):
        mp = sys.modules.get("multiprocessing")
        try:
            return mp.current_process().name if mp else "MainProcess"
        except Exception:
            return "?"

    def write(self, record):
        record["pid"] = os.getpid()
        record["proc"] = self._process()
        # One write per line: O_APPEND keeps lines from different processes whole.
        os.write(self._fd, (json.dumps(record, default=str) + "\n").encode())


def _install(recorder, targets):
    import functools
    import importlib.abc
    import importlib.util
    import logging

    def emit(event, kind, target, **extra):
        rec = {"t": time.monotonic_ns(), "e": event, "k": kind, "target": target}
        rec.update(extra)
        try:
            recorder.write(rec)
        except Exception:
            pass

    def io_counters():
        # psutil's counters are /proc/self/io's, named as there so readers need not care
        # which one a boot used; the file itself where psutil is not installed in the boot.
        try:
            import psutil

            c = psutil.Process().io_counters()
            return {"rchar": c.read_chars, "wchar": c.write_chars, "syscr": c.read_count,
                    "syscw": c.write_count, "read_bytes": c.read_bytes,
                    "write_bytes": c.write_bytes}
        except ImportError:
            pass
        except Exception:
            return None
        try:
            with open("/proc/self/io") as fh:
                return {k: int(v) for k, v in (line.split(": ") for line in fh)}
        except Exception:
            return None

    last_counters = {}

    def cache_counters():
        # Torch's own cache counters (Inductor's FX-graph cache, AOTAutograd's cache), as they
        # stand when a probed call ends, where torch's compiler is loaded in this process:
        # written only when they changed, so a process that compiles nothing writes none.
        utils = sys.modules.get("torch._dynamo.utils")
        counters = getattr(utils, "counters", None)
        if counters is None:
            return
        try:
            now = {f"{group}.{name}": int(n) for group in ("inductor", "aot_autograd")
                   for name, n in dict(counters.get(group) or {}).items()
                   if "cache" in name}
        except Exception:
            return
        if now and now != last_counters.get("v"):
            last_counters["v"] = now
            emit("torch.cache_counters", "mark", "torch._dynamo.utils:counters", counters=now)

    def timed_call(fn, event, target, io=False, record=False):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            extra = {"io": io_counters()} if io else {}
            emit(event, "start", target, **extra)
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:
                emit(event, "end", target, ok=False, error=f"{type(exc).__name__}: {exc}"[:500],
                     **({"io": io_counters()} if io else {}))
                cache_counters()
                raise
            emit(event, "end", target, ok=True, none=result is None,
                 **({"io": io_counters()} if io else {}))
            if record:  # a small value worth keeping (vLLM's cache-key inputs)
                emit(event + ".result", "mark", target, value=repr(result)[:1000])
            cache_counters()
            return result

        return wrapper

    class _TimedContext:
        def __init__(self, cm, event, target):
            self._cm, self._event, self._target = cm, event, target

        def __enter__(self):
            emit(self._event, "start", self._target)
            return self._cm.__enter__()

        def __exit__(self, exc_type, exc, tb):
            try:
                return self._cm.__exit__(exc_type, exc, tb)
            finally:
                emit(self._event, "end", self._target, ok=exc_type is None,
                     error=None if exc_type is None else f"{exc_type.__name__}: {exc}"[:500])
                cache_counters()

    def timed_context(fn, event, target, io=False, record=False):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return _TimedContext(fn(*args, **kwargs), event, target)

        return wrapper

    def wrap(module, spec):
        attr, event, kind = spec["attr"], spec["event"], spec["kind"]
        target = f"{module.__name__}:{attr}"
        make = timed_context if kind == "context" else timed_call
        owner = module
        parts = attr.split(".")
        for part in parts[:-1]:
            owner = getattr(owner, part, None)
            if owner is None:
                emit("probe.missing", "mark", target)
                return
        name = parts[-1]
        raw = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if raw is None:
            emit("probe.missing", "mark", target)
            return
        io, record = bool(spec.get("io")), bool(spec.get("record"))
        if isinstance(raw, staticmethod):
            new = staticmethod(make(raw.__func__, event, target, io, record))
        elif isinstance(raw, classmethod):
            new = classmethod(make(raw.__func__, event, target, io, record))
        else:
            new = make(raw, event, target, io, record)
        setattr(owner, name, new)

    by_module = {}
    for spec in targets:
        by_module.setdefault(spec["module"], []).append(spec)
    shims_by_module = {}
    wanted_shims = [s for s in os.environ.get("COLDSTART_SHIMS", "").split(",") if s]
    if wanted_shims:
        from _coldstart_shims import SHIMS

        for name in wanted_shims:
            module_name, fn = SHIMS[name]
            shims_by_module.setdefault(module_name, []).append((name, fn))
            by_module.setdefault(module_name, [])

    def instrument(module):
        # Shims first, so that the timing wrappers time the repaired behaviour.
        for name, fn in shims_by_module.get(module.__name__, ()):
            try:
                fn(module, emit)
            except Exception as exc:
                emit("probe.error", "mark", f"shim {name}", error=repr(exc))
        for spec in by_module.get(module.__name__, ()):
            try:
                wrap(module, spec)
            except Exception as exc:
                emit("probe.error", "mark", f"{module.__name__}:{spec['attr']}", error=repr(exc))
        if module.__name__ == "vllm.logger":
            attach_log_handler()
            # vLLM re-runs dictConfig when the engine starts (configure_logging), which drops
            # every handler of the 'vllm' logger: re-attach after each configuration.
            configure = getattr(module, "_configure_vllm_root_logger", None)
            if configure is not None:
                @functools.wraps(configure)
                def reconfigure(*args, **kwargs):
                    try:
                        return configure(*args, **kwargs)
                    finally:
                        attach_log_handler()

                module._configure_vllm_root_logger = reconfigure

    class _LogCapture(logging.Handler):
        def emit(self, record):
            try:
                recorder.write({"t": time.monotonic_ns(), "e": "log", "k": "log",
                                "created": record.created, "lvl": record.levelname,
                                "logger": record.name, "msg": record.getMessage()})
            except Exception:
                pass

    def attach_log_handler():
        # The 'vllm' logger does not propagate to the root logger, so attach to it directly.
        logger = logging.getLogger("vllm")
        if not any(isinstance(h, _LogCapture) for h in logger.handlers):
            handler = _LogCapture(level=logging.DEBUG)
            logger.addHandler(handler)

    class _Finder(importlib.abc.MetaPathFinder):
        def __init__(self):
            self._busy = set()

        def find_spec(self, fullname, path, target=None):
            if fullname not in by_module and fullname != "vllm.logger":
                return None
            if fullname in self._busy:
                return None
            self._busy.add(fullname)
            try:
                spec = importlib.util.find_spec(fullname)
            finally:
                self._busy.discard(fullname)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            original = spec.loader.exec_module

            def exec_module(module):
                original(module)
                instrument(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Finder())
    for name in list(by_module) + ["vllm.logger"]:
        if name in sys.modules:  # imported before us (rare): instrument in place
            instrument(sys.modules[name])
    return emit


def _record_reaping(emit):
    """Record the status of every child this process reaps, as it is reaped.

    multiprocessing (EngineCore, Worker) and subprocess (compile workers, the server) both
    reap through ``os.waitpid``, looked up when called or bound when subprocess is first
    imported, which is after this runs.
    """
    original = os.waitpid

    def waitpid(pid, options, /):
        reaped = original(pid, options)
        if reaped[0] > 0:
            emit("process.reaped", "mark", "os.waitpid", child=reaped[0], status=reaped[1])
        return reaped

    os.waitpid = waitpid


def _main():
    recorder = _Recorder(_EVENTS_PATH)
    targets = json.loads(os.environ.get("COLDSTART_PROBE_TARGETS", "[]"))
    emit = _install(recorder, targets)
    # orig_argv: sys.argv is only "-m" or "-c" this early for `python -m x` / `python -c`.
    emit("process.start", "mark", "sitecustomize",
         argv=" ".join(getattr(sys, "orig_argv", sys.argv)[1:])[:300], ppid=os.getppid())
    _record_reaping(emit)
    import atexit

    atexit.register(lambda: emit("process.exit", "mark", "atexit"))


if _EVENTS_PATH:
    try:
        _main()
    except Exception as _exc:  # never break the boot for a probe
        sys.stderr.write(f"vllm-coldstart probe disabled: {_exc!r}\n")
_chain_next_sitecustomize()
