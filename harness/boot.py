"""One real vLLM boot, isolated in its own process group: BootSpec -> BootResult.

The parent prepares the untimed state (compile cache, page cache; here), starts the child as
a new session, enforces a hard timeout, kills the whole group when the boot is over or has
failed, and checks that nothing of it survived (harness.launch), then reads what the boot
left into its BootResult (harness.interpret). It times nothing itself except the launch
instant, the origin of the boot's clock: every other instant is written by the probes inside
the boot's own processes on the same monotonic clock.

The spec of a boot is harness.spec's, the compile cache harness.compile_cache's and
killing harness.processes': callers import each name from the module that defines it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Callable

from document.boot_result import BootResult
from document.evidence import BootSettings, Evidence, PageCacheFacts, Priming
from harness import pagecache
from harness.compile_cache import (
    aot_cache_keys,
    builder_record,
    compile_cache_dirs,
    keep_as_warm_cache,
    primed_marker,
    relocate_cache,
    relocated_root,
)
from harness.interpret import boot_identity
from harness.launch import launch_boot
from harness.registry import shims_for, wrap_targets_for
from harness.spec import BootSpec, PreparedBoot, installed_vllm_version

__all__ = ["PROBE_DIR", "discard_work_dir", "prepare_boot", "run_boot"]

PROBE_DIR = Path(__file__).parent / "probe"


def prepare_boot(spec: BootSpec, *, progress: Callable[[str], None] | None = None,
                 prime_if_needed: bool = True) -> PreparedBoot | BootResult:
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
                prime_if_needed: bool) -> PreparedBoot | BootResult:
    say = progress or (lambda _msg: None)
    work.mkdir(parents=True, exist_ok=True)
    evidence = Evidence(work_dir=str(work))

    reuses = spec.compile_cache in ("warm", "relocated")
    if reuses and prime_if_needed and not primed_marker(spec).exists():
        say("priming the compile cache (unmeasured boot)")
        primer = spec.model_copy(update={"work_dir": work / "priming", "page_cache": "warm",
                                         "compile_cache": "warm"})
        primed = run_boot(primer, progress=progress, prime_if_needed=False)
        evidence.priming = Priming(state=primed.state, error=primed.error,
                                   compile_cache_observed=primed.compile_cache_observed)
        if primed.state == "measured":
            primed_marker(spec).write_text(json.dumps({"primed_by": primed.model_dump(
                mode="json", include={"wall_s", "phases", "vllm_version"}),
                **builder_record(primed, primed_marker(spec).parent)}))

    if spec.compile_cache == "warm":
        # What the warm boot finds: a key it adds beside them is vLLM compiling again.
        evidence.aot_cache_keys_before = aot_cache_keys(primed_marker(spec).parent)
    elif spec.compile_cache == "relocated":
        say("copying the kept compile cache to another path (relocated)")
        evidence.relocated_from = str(relocate_cache(spec, work))
        evidence.aot_cache_keys_before = aot_cache_keys(relocated_root(work))

    env = spec.boot_env()
    evidence.settings = BootSettings.model_validate(spec.settings_used())
    env.update(compile_cache_dirs(spec, work))
    if spec.compile_cache == "cold":
        shutil.rmtree(work / "compile-cache", ignore_errors=True)
        env.update(compile_cache_dirs(spec, work))
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
            evidence.page_cache = PageCacheFacts(mode=spec.page_cache, note="hub model not on "
                                                 "this machine: downloaded by the boot")
        else:
            evidence.page_cache = PageCacheFacts.model_validate(
                pagecache.prepare(files, spec.page_cache))
    except pagecache.PageCacheError as exc:
        return BootResult(state="skipped", skip_reason=str(exc), **boot_identity(spec, version),
                          evidence=evidence)
    return PreparedBoot(spec, work, env, evidence, version, events_path, log_path,
                    child_result_path)


def discard_work_dir(result: BootResult) -> None:
    """Remove a measured or skipped boot's work folder (its log, events, cold compile cache).

    A failed boot's folder is kept: its log and events are what explains the failure.
    """
    work = result.evidence.work_dir
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
