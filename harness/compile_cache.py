"""The compile cache a boot finds: where it lives, what it holds, and the warm one kept.

A cold boot gets a fresh, empty cache in its work folder; a warm boot gets the cache of its
configuration (``BootSpec.compile_cache_key``) under :func:`harness.spec.cache_home`, which a
measured cold boot of that configuration leaves behind (:func:`keep_as_warm_cache`) or a
priming boot fills (``primed.json`` marks it).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from document.boot_result import BootResult
from harness.spec import BootError, BootSpec, cache_home


def aot_cache_keys(cache_dir: Path) -> list[str]:
    """The AOT-compile keys (vLLM's hash folders) a compile cache holds, oldest first."""
    root = cache_dir / "vllm" / "torch_compile_cache" / "torch_aot_compile"
    if not root.is_dir():
        return []
    return [d.name for d in sorted(root.iterdir(), key=lambda d: d.stat().st_mtime)
            if d.is_dir()]


def compile_cache_dirs(spec: BootSpec, work: Path) -> dict[str, str]:
    """The cache folders the boot is given (vLLM's, Inductor's, Triton's), made if missing."""
    if spec.compile_cache == "warm":
        root = cache_home() / "compile-cache" / spec.compile_cache_key()
    elif spec.compile_cache == "relocated":
        root = relocated_root(work)
    else:  # cold (and off, where nothing is compiled): fresh, empty, thrown away
        root = work / "compile-cache"
    root.mkdir(parents=True, exist_ok=True)
    return {"VLLM_CACHE_ROOT": str(root / "vllm"),
            "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
            "TRITON_CACHE_DIR": str(root / "triton")}


def relocated_root(work: Path) -> Path:
    """Where a relocated boot sees its copy of the kept cache: inside its own work folder,
    a path no boot that built a cache used (another VLLM_CACHE_ROOT, another working
    directory: the child runs in ``work``)."""
    return work / "relocated" / "compile-cache"


def relocate_cache(spec: BootSpec, work: Path) -> Path:
    """Copy the kept cache of ``spec``'s configuration to :func:`relocated_root` (what a
    fleet does with a cache baked into an image or shared on a volume). Untimed."""
    source = primed_marker(spec).parent
    if not source.is_dir():
        raise BootError(f"compile_cache=relocated: no kept cache of this configuration at "
                        f"{source} to copy (boot its cold cell first, or let the boot prime it)")
    target = relocated_root(work)
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, symlinks=True)
    (target / "primed.json").unlink(missing_ok=True)
    return source


def builder_facts(spec: BootSpec) -> dict:
    """What the boot that filled the kept cache recorded of itself (``primed.json``): its
    working directory, cache folder and vLLM's AOT key inputs, where it recorded them."""
    try:
        return json.loads(primed_marker(spec).read_text())
    except (OSError, ValueError):
        return {}


def primed_marker(spec: BootSpec) -> Path:
    """The file that says the warm cache of ``spec``'s configuration was filled."""
    return cache_home() / "compile-cache" / spec.compile_cache_key() / "primed.json"


def builder_record(result: BootResult, cache_dir: Path) -> dict:
    """What a relocated boot holds its own key against: where this boot built the cache and
    the AOT key inputs it computed."""
    layers = result.evidence.compile_cache_layers
    return {"built_at": str(cache_dir), "built_cwd": result.evidence.work_dir,
            "key_factors": dict(layers.key_factors) if layers else {},
            "aot_keys": aot_cache_keys(cache_dir)}


def keep_as_warm_cache(spec: BootSpec, result: BootResult) -> bool:
    """Keep a measured cold boot's compile cache as the warm cache of its configuration.

    It is exactly what a warm boot of the same configuration needs, so the warm cell needs no
    priming boot of its own. Untimed: call it after the measurement. Copied into a sibling
    and renamed into place, so a concurrent reader never sees half a cache.
    """
    source = Path(result.evidence.work_dir or "") / "compile-cache"
    if spec.compile_cache != "cold" or result.state != "measured" or not source.is_dir():
        return False
    # A cache kept before (an earlier run, another checkout) is replaced: this boot's is the
    # one the warm boots of this run must reuse, made by this code in this environment.
    target = cache_home() / "compile-cache" / spec.compile_cache_key()
    staging = target.with_name(target.name + f".partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, symlinks=True)
    (staging / "primed.json").write_text(json.dumps({
        "primed_by": f"the measured cold boot in {result.evidence.work_dir}",
        "wall_s": result.wall_s, "vllm_version": result.vllm_version,
        **builder_record(result, source)}))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
    result.evidence.compile_cache_dir = str(target)  # the copy outlives the work folder
    return True
