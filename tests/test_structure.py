"""The code's shape: modules of one job (450 lines at most), no import cycle, no private name
imported across modules. Read from the source with ast, so it holds without vLLM installed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("coldstart", "harness", "analysis", "fixtures", "benchmarks", "deploy")
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[tuple[str, str | None]]:
    """(module, imported name or None) for every import in the file, wherever it stands: a
    function-level import is still an edge, only a later one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[tuple[str, str | None]] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {(a.name, None) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found |= {(base, a.name) for a in node.names}
    return found


def _edges(name: str, path: Path) -> set[str]:
    targets = set()
    for module, imported in _imports(name, path):
        submodule = f"{module}.{imported}" if imported else None
        if submodule in MODULES:
            targets.add(submodule)
        elif module in MODULES:
            targets.add(module)
    # a module's own package is imported before it: that is no cycle of ours
    return {t for t in targets if t != name and not name.startswith(f"{t}.")}


GRAPH = {name: _edges(name, path) for name, path in MODULES.items()}


def test_the_graph_is_read():
    assert "harness.schema" in GRAPH["analysis.fit"] or any(
        "harness.schema" in GRAPH[m] for m in GRAPH if m.startswith("analysis."))


def import_cycles() -> list[list[str]]:
    """The strongly connected components of more than one module: each is a cycle."""
    names = sorted(GRAPH)
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a in names for b in GRAPH[a]]
    cols = [index[b] for a in names for b in GRAPH[a]]
    graph = csr_array(([1] * len(rows), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(graph, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, label in zip(names, labels):
        groups.setdefault(int(label), []).append(name)
    return sorted(g for g in groups.values() if len(g) > 1)


def test_the_cycle_finder_finds_a_cycle(monkeypatch):
    monkeypatch.setitem(GRAPH, "harness.schema", {*GRAPH["harness.schema"], "analysis.fit"})
    assert any({"harness.schema", "analysis.fit"} <= set(c) for c in import_cycles())


def test_no_import_cycle():
    assert import_cycles() == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_is_at_most_450_lines(name):
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name].relative_to(ROOT)}: {lines} lines"


def test_no_private_name_is_imported_from_another_module():
    private = []
    for name, path in MODULES.items():
        for module, imported in _imports(name, path):
            if imported and imported.startswith("_") and not imported.startswith("__") \
                    and module in MODULES and module != name:
                private.append(f"{name} imports {module}.{imported}")
    assert not private, "\n".join(sorted(private))
