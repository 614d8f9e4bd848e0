"""The code's shape: modules of one job (past 450 lines, a warning), no import cycle, no private name
imported across modules. Read from the source with ast, so it holds without vLLM installed."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("document", "coldstart", "harness", "analysis", "fixtures", "benchmarks", "deploy")
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


def _is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``"""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__"
                    for c in test.comparators))


def _nodes(tree: ast.AST):
    """Every node of the module but those under its main guard: a module run as a program
    (``python -m analysis.compare``, a form earlier docs used) is the front door's, and its
    imports there are the program's, not edges of the library."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not _is_main_guard(child))


def _imports(name: str, path: Path) -> set[tuple[str, str | None]]:
    """(module, imported name or None) for every import in the file, wherever it stands but
    under its main guard: a function-level import is still an edge, only a later one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[tuple[str, str | None]] = set()
    for node in _nodes(ast.parse(path.read_text(), str(path))):
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
    assert "document.boot_result" in GRAPH["analysis.fit"] or any(
        "document.boot_result" in GRAPH[m] for m in GRAPH if m.startswith("analysis."))


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
    monkeypatch.setitem(GRAPH, "document.boot_result",
                        {*GRAPH["document.boot_result"], "analysis.fit.groups"})
    assert any({"document.boot_result", "analysis.fit.groups"} <= set(c)
               for c in import_cycles())


def test_no_import_cycle():
    assert import_cycles() == []


class LongModule(UserWarning):
    """A module past MAX_LINES: a hint to look for a second job in it, not a failure (issue 30:
    a hard limit cut modules into prefix-named shards instead of packages by job)."""


def test_a_module_past_450_lines_is_warned_of():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    for name, lines in sorted(long.items()):
        warnings.warn(f"{MODULES[name].relative_to(ROOT)}: {lines} lines (over {MAX_LINES}): "
                      "does it do a second job?", LongModule, stacklevel=1)


def test_no_private_name_is_imported_from_another_module():
    private = []
    for name, path in MODULES.items():
        for module, imported in _imports(name, path):
            if imported and imported.startswith("_") and not imported.startswith("__") \
                    and module in MODULES and module != name:
                private.append(f"{name} imports {module}.{imported}")
    assert not private, "\n".join(sorted(private))


# ----------------------------------------------------------------- packages by job (issue 30)
PREFIXES = ("fit_", "report_", "log_", "matrix_", "matrixfile")
# A leaf name two layers both use, and why that is not two meanings.
SHARED_LEAVES = {
    "__main__": "coldstart's front door, and python -m analysis.fit, the README's kept form",
    "boots": "harness.logs.boots and harness.spans.boots: the boots one source holds (a log, "
             "an exported trace), each read into BootResults",
}
# The library (fixtures .. deploy) stands on the ground floor, the result document
# (``document``: the run and boot models, evidence, dates, secrets, span records, the error
# types), and below the command line (coldstart.cli, coldstart.commands: one thin module per
# verb) and the front door (coldstart): no library module imports argparse's layer (issues
# 30, 41).
LAYERS = ("document", "fixtures", "harness", "analysis", "benchmarks", "deploy",
          "coldstart.cli", "coldstart.commands", "coldstart")
# An import of a higher layer, each with its reason.
UPWARD = {
    ("analysis.fit.__main__", "coldstart.commands.fit"):
        "python -m analysis.fit, the README's form, is coldstart fit's own add_arguments and run",
    ("analysis.fit.__main__", "coldstart.cli"):
        "... run under the one error convention (run_program), named analysis.fit",
}
# What boots vLLM or drives its processes: the analysis side never reaches it.
BOOTING = ("harness.boot", "harness.launch", "harness.processes", "harness.pagecache",
           "harness._child")
TEST_FILES = {f"tests.{p.stem}": p for p in sorted((ROOT / "tests").glob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _defined(body: list[ast.stmt]) -> set[str]:
    """The names a module's own statements bind (not its imports)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target,
                                                                            ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            names |= _defined([*node.body, *getattr(node, "orelse", []),
                               *getattr(node, "finalbody", []),
                               *(s for h in getattr(node, "handlers", []) for s in h.body)])
    return names


DEFINED = {name: _defined(ast.parse(path.read_text()).body) for name, path in MODULES.items()}


def _layer(name: str) -> int:
    return next(i for i, layer in enumerate(LAYERS)
                if name == layer or name.startswith(f"{layer}."))


def _reachable(start: str) -> set[str]:
    """Every module importing ``start`` imports, its packages' ``__init__``s included."""
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        above = {".".join(parts[:i]) for i in range(1, len(parts))} & set(MODULES)
        for target in GRAPH.get(name, set()) | above:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_no_prefix_stands_in_for_a_package():
    prefixed = [name for name, path in MODULES.items()
                if path.name != "__init__.py" and path.stem.startswith(PREFIXES)]
    assert not prefixed, f"a package by job, not a prefix: {prefixed}"


def _verb_runs(verb_module: str, library: str) -> bool:
    """``coldstart.commands.X`` is the verb over ``library``: it imports it, or (a package)
    a module of it."""
    return any(t == library or t.startswith(f"{library}.")
               for t in _edges(verb_module, MODULES[verb_module]))


def same_named_modules(modules: list[str]) -> dict[str, list[str]]:
    """Leaf name -> the modules, at any depth, that share it with another job: all but a
    verb sharing the name of the one library module it runs, and the SHARED_LEAVES."""
    leaves: dict[str, list[str]] = {}
    for name in modules:
        leaves.setdefault(name.split(".")[-1], []).append(name)
    out = {}
    for leaf, names in leaves.items():
        if len(names) < 2 or leaf in SHARED_LEAVES:
            continue
        verbs = [n for n in names if n.startswith("coldstart.commands.")]
        rest = [n for n in names if n not in verbs]
        if len(verbs) == 1 and len(rest) == 1 and _verb_runs(verbs[0], rest[0]):
            continue
        out[leaf] = names
    return out


def test_a_module_name_means_one_thing_at_any_depth():
    twice = same_named_modules(list(MODULES))
    assert not twice, twice


def test_a_second_module_of_one_name_is_seen():
    assert same_named_modules(["harness.logs.check", "benchmarks.check",
                               "coldstart.commands.check"]) == {
        "check": ["harness.logs.check", "benchmarks.check", "coldstart.commands.check"]}
    assert same_named_modules(["analysis.fit.summary", "benchmarks.summary"])


def same_named_classes(modules: dict[str, Path]) -> dict[str, list[str]]:
    """Class name -> the modules that define a class of that name, where more than one does."""
    where: dict[str, list[str]] = {}
    for name, path in modules.items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(name)
    return {cls: names for cls, names in where.items() if len(names) > 1}


def test_a_class_name_means_one_thing_at_any_depth():
    twice = same_named_classes(MODULES)
    assert not twice, twice


def test_a_second_class_of_one_name_is_seen(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text("class Prepared:\n    pass\n")
    assert same_named_classes({n: tmp_path / f"{n}.py" for n in ("a", "b")}) == {
        "Prepared": ["a", "b"]}


def _from_imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module in MODULES:
            yield node.module, node.names, node.lineno


def names_passed_through(files: dict[str, Path]) -> list[str]:
    """``from X import name`` where X neither defines ``name`` nor is a package."""
    wrong = []
    for path in files.values():
        for module, aliases, line in _from_imports(path):
            if _is_package(module):
                continue
            for alias in aliases:
                if alias.name not in DEFINED[module] and f"{module}.{alias.name}" not in MODULES:
                    wrong.append(f"{path}:{line}: {alias.name} from {module}")
    return wrong


def test_a_name_is_imported_from_the_module_that_defines_it():
    """One import path per name: from the module that defines it, or through a package's
    ``__init__`` (the only modules that re-export)."""
    wrong = names_passed_through({**MODULES, **TEST_FILES, "conftest": ROOT / "conftest.py"})
    assert not wrong, "\n".join(wrong)


def test_a_name_passed_through_is_seen(tmp_path):
    # document.boot_result imports Evidence from document.evidence, where it is defined
    module = tmp_path / "passing.py"
    module.write_text("from document.evidence import Evidence\n"
                      "from document.boot_result import Evidence\n")
    assert [w.split(": ", 1)[1] for w in names_passed_through({"passing": module})] == [
        "Evidence from document.boot_result"]


@pytest.mark.parametrize("name", sorted(n for n in MODULES if MODULES[n].name not in (
    "__init__.py", "__main__.py")))
def test_only_a_package_init_re_exports(name):
    tree = ast.parse(MODULES[name].read_text())
    exported = next((node.value for node in tree.body if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)), None)
    if exported is None:
        return
    names = {e.value for e in getattr(exported, "elts", []) if isinstance(e, ast.Constant)}
    assert names <= DEFINED[name], f"{name} re-exports {sorted(names - DEFINED[name])}"


def _reexported(package: str) -> dict[str, str]:
    """name -> the submodule a package's ``__init__`` takes it from."""
    found = {}
    for node in ast.parse(MODULES[package].read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.startswith(f"{package}."):
            found.update({(a.asname or a.name): node.module for a in node.names})
    return found


FACES = {name: _reexported(name) for name in MODULES if _is_package(name) and _reexported(name)}


def second_paths(files: dict[str, Path], faces: dict[str, dict[str, str]]) -> list[str]:
    """Imports, from outside a package, of a name its ``__init__`` re-exports, taken from
    the submodule: a second path to one name."""
    wrong = []
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            for package, names in faces.items():
                if name == package or name.startswith(f"{package}."):
                    continue
                wrong += [f"{path}:{node.lineno}: {a.name} from {node.module}, not {package}"
                          for a in node.names if names.get(a.name) == node.module]
    return wrong


def test_a_name_a_package_re_exports_has_that_one_path():
    """A package's ``__init__`` is its public API, used by every caller, or re-exports
    nothing (issue 41): no caller outside it takes a re-exported name from the submodule."""
    wrong = second_paths({**MODULES, **TEST_FILES, "conftest": ROOT / "conftest.py"}, FACES)
    assert not wrong, "\n".join(wrong)


def test_a_second_path_is_seen(tmp_path):
    module = tmp_path / "second.py"
    module.write_text("from harness.registry.patterns import LOG_PATTERNS\n")
    assert [w.split(": ", 1)[1] for w in second_paths({"second": module}, FACES)] == [
        "LOG_PATTERNS from harness.registry.patterns, not harness.registry"]


def test_the_faces_are_the_registry_and_the_document():
    # every other package's __init__ is its docstring: each module by its own path
    assert set(FACES) == {"harness.registry", "document"}
    for package in FACES:
        tree = ast.parse(MODULES[package].read_text())
        alls = [n for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)]
        assert len(alls) == 1, package


@pytest.mark.parametrize("package", ["harness", "harness.spans", "harness.logs", "analysis.fit",
                                     "analysis.report", "analysis.features", "fixtures",
                                     "benchmarks.matrix"])
def test_a_face_no_caller_used_is_empty(package):
    # their re-exports were taken by one caller at most (issue 41): each module by its path
    tree = ast.parse(MODULES[package].read_text())
    assert not [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.Assign))]


def test_imports_go_down_the_layers():
    upward = sorted(f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets
                    if _layer(b) > _layer(a) and (a, b) not in UPWARD)
    assert not upward, "\n".join(upward)
    stale = [pair for pair in UPWARD if pair[1] not in GRAPH.get(pair[0], ())]
    assert not stale, f"allowed but not made any more: {stale}"


FRONT_DOOR = ("coldstart",)
GROUND_FLOOR = "document"


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(f"{package}.")


def test_the_document_imports_nothing_of_the_project():
    """The ground floor: anything may import it, it imports only itself (at any depth, a
    function-level import included), so reading a result document needs no boot, no log
    reader and no command."""
    reached = {name: sorted(t for t in GRAPH[name] if not _in(t, GROUND_FLOOR))
               for name in MODULES if _in(name, GROUND_FLOOR)}
    assert not {k: v for k, v in reached.items() if v}, reached


def test_no_library_module_reaches_the_front_door():
    """The whiteboard rule: coldstart/ is the commands only; nothing of the library imports
    it, directly or through another module (the allowed old program forms aside)."""
    allowed = {a for a, _ in UPWARD}
    reached = {name: sorted(t for t in _reachable(name) if _in(t, FRONT_DOOR[0]))
               for name in MODULES if not _in(name, FRONT_DOOR[0]) and name not in allowed}
    assert not {k: v for k, v in reached.items() if v}, reached


def test_a_library_import_of_the_front_door_is_seen(monkeypatch):
    monkeypatch.setitem(GRAPH, "document.dates", {*GRAPH["document.dates"], "coldstart.cli"})
    with pytest.raises(AssertionError, match="document.dates"):
        test_the_document_imports_nothing_of_the_project()
    with pytest.raises(AssertionError, match="coldstart.cli"):
        test_no_library_module_reaches_the_front_door()


def test_the_analysis_side_never_reaches_what_boots():
    reached = {name: _reachable(name) & set(BOOTING) for name in MODULES
               if name.startswith("analysis")}
    assert not {k: v for k, v in reached.items() if v}, reached


def test_a_boot_reached_from_the_analysis_side_is_seen(monkeypatch):
    monkeypatch.setitem(GRAPH, "analysis.table", {*GRAPH["analysis.table"], "harness.boot"})
    assert "harness.boot" in _reachable("analysis.table")


# ------------------------------------------- the document through its models (issue 30)
RAW_KEYS = ("benchmarks", "extra_info")
# Where a result document is read, built and edited as JSON: its package (and the tests).
DOCUMENT_PACKAGE = "document"
# Verbs' ``run`` bodies that still read the document's raw keys, each with why; the lead
# empties this once the verbs' ``run`` have moved into coldstart.commands (issue 30).
RAW_KEY_RUN_BODIES: dict[str, str] = {}


def raw_key_uses(name: str, path: Path) -> list[str]:
    """``x["benchmarks"]`` / ``x["extra_info"]`` and ``x.get("benchmarks"...)`` in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" and node.args \
                and isinstance(node.args[0], ast.Constant):
            key = node.args[0].value
        if key in RAW_KEYS:
            found.append(f"{name}:{node.lineno}: {key!r}")
    return found


def test_the_documents_raw_keys_are_read_only_in_its_package():
    """A run is built, edited and read through document's models and their methods,
    never as dicts by its raw keys elsewhere."""
    raw = [use for name, path in MODULES.items()
           if not (name == DOCUMENT_PACKAGE or name.startswith(f"{DOCUMENT_PACKAGE}."))
           and name not in RAW_KEY_RUN_BODIES
           for use in raw_key_uses(name, path)]
    assert not raw, "\n".join(raw)


def test_a_raw_key_use_is_seen(tmp_path):
    module = tmp_path / "raw.py"
    module.write_text('a = doc["benchmarks"]\nb = e.get("extra_info") or {}\nc = d["stats"]\n')
    assert sorted(raw_key_uses("raw", module)) == ["raw:1: 'benchmarks'",
                                                   "raw:2: 'extra_info'"]
