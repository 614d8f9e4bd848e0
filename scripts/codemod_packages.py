"""Issue 30's packages, made by a program so that they can be made again on any tree.

    python scripts/codemod_packages.py            # the tree this script is in
    python scripts/codemod_packages.py --root DIR --dry-run

What it does, in this order; a second run finds nothing left to do and changes nothing:

1. **Moves** (``git mv``) the prefix modules into packages by job: ``analysis/fit_*`` into
   ``analysis/fit/``, ``analysis/report_*`` into ``analysis/report/`` (with its templates),
   the feature modules into ``analysis/features/``, ``harness/log_*`` into ``harness/logs/``,
   the span modules into ``harness/spans/``, ``benchmarks/matrix*`` into
   ``benchmarks/matrix/``, and the registry's data modules into ``harness/registry/``. A module
   of one of those prefixes added later is moved by the same rule (``PREFIX_RULES``). Names
   that meant two things get one meaning each: ``analysis.model`` (the regression) becomes
   ``analysis.regression``, so "model" is the Hugging Face model only; ``harness.study``
   becomes ``harness.study_columns`` and ``analysis.calibrate`` ``analysis.predictor_scale``,
   so ``analysis.study`` and ``benchmarks.calibrate`` are the only modules of those names.
   ``harness/log_compose_v0.py`` is folded into the composer (``harness.logs.compose``).
2. **One import path per name.** Every ``from X import name`` of the project's code, tests
   and scripts names the module that defines ``name`` (resolved on the tree before the move,
   through any chain of re-exports), except through a package ``__init__`` that re-exports
   it (``harness``, ``fixtures``, ``harness.registry``, ...). Then every module that is not a
   package ``__init__`` (nor a ``__main__``) loses the project imports it does not use (they
   were there to pass names through) and the names of its ``__all__`` it does not define.
3. **Package faces.** Each new package gets an ``__init__`` with one ``__all__``: the names
   the rest of the project imports from the package, re-exported from the submodules that
   can be imported first without a cycle (``eager_safe``), and a ``__main__`` where the old
   module was a program (``python -m analysis.fit out.json`` keeps working).
4. **Text**: every other mention of a moved module or file (docstrings, comments, strings,
   docs, pyproject.toml, CI files; never committed data) names the new one. A module whose
   old name is now its package's (``analysis.fit``, ``harness.logs``, ...) keeps its dotted
   name, and its old file path becomes the package's folder.

Imports are edited with the standard library's ``ast``, not libcst: the edits are whole
statements, which ``ast`` locates exactly (line and end line), regenerated in the project's
style, so the script needs nothing installed and runs with the project's own Python.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("coldstart", "harness", "analysis", "fixtures", "benchmarks", "deploy")
OTHER_PYTHON = ("tests", "scripts", "conftest.py")
THIS = "scripts/codemod_packages.py"
LINE = 100

# Old path -> new path, for files whose new name no prefix rule gives.
EXPLICIT: dict[str, str] = {
    "analysis/fit.py": "analysis/fit/cli.py",
    "analysis/report.py": "analysis/report/cli.py",
    "analysis/features.py": "analysis/features/cli.py",
    "analysis/feature_model.py": "analysis/features/model_features.py",
    "analysis/feature_files.py": "analysis/features/sources.py",
    "analysis/model_files.py": "analysis/features/model_files.py",
    "analysis/model_folder.py": "analysis/features/model_folder.py",
    "analysis/hf_config.py": "analysis/features/hf_config.py",
    "analysis/hub_model.py": "analysis/features/hub_model.py",
    "analysis/study_features.py": "analysis/features/study_models.py",
    "analysis/model.py": "analysis/regression.py",
    "analysis/calibrate.py": "analysis/predictor_scale.py",
    "harness/study.py": "harness/study_columns.py",
    "harness/logs.py": "harness/logs/reader.py",
    "harness/spans.py": "harness/spans/records.py",
    "harness/otlp_receiver.py": "harness/spans/receiver.py",
    # The log patterns are the registry's data (the registry imports them and the log reader
    # reads them through it): in harness/logs/ the registry would import the package that
    # imports the registry.
    "harness/log_patterns.py": "harness/registry/patterns.py",
    "harness/registry.py": "harness/registry/__init__.py",
    "harness/expectations.py": "harness/registry/expectations.py",
    "harness/probe_targets.py": "harness/registry/probe_targets.py",
    "harness/version_range.py": "harness/registry/version_range.py",
    "benchmarks/matrix.py": "benchmarks/matrix/plan.py",
    "benchmarks/matrixfile.py": "benchmarks/matrix/file.py",
}
# (folder, module name pattern, package folder, {leaf: new leaf}): a module of the folder
# whose name matches moves into the package as the pattern's group.
PREFIX_RULES: list[tuple[str, str, str, dict[str, str]]] = [
    ("analysis", r"fit_(\w+)", "analysis/fit",
     {"report": "markdown", "document": "predictor_document", "select": "selection"}),
    ("analysis", r"report_(\w+)", "analysis/report",
     {"run": "run_page", "comparison": "comparison_page"}),
    ("harness", r"log_(\w+)", "harness/logs", {}),
    ("harness", r"spans?_(\w+)", "harness/spans", {}),
    ("benchmarks", r"matrix_(\w+)", "benchmarks/matrix", {"yaml": "yaml_loader"}),
]
# A module folded into another: its definitions are appended there, its file removed.
FOLDS: dict[str, str] = {"harness/log_compose_v0.py": "harness/log_compose.py"}
FOLDERS: dict[str, str] = {"analysis/templates": "analysis/report/templates"}
# The new packages, with what their __init__ says; the ones with a program get a __main__.
NEW_PACKAGES: dict[str, str] = {
    "analysis/fit": "Fit per-phase regressors from runs: ``python -m analysis.fit RUN.json ...``"
                    " (``cli``) writes a predictor file.\n\n"
                    "The group fit (``groups``: per configuration and phase, the feature "
                    "chosen by ``selection``, its line and its correlation), the data's "
                    "targets (``targets``), held-out checks (``validate``, ``lomo``), the "
                    "predictor document (``predictor_document``), the summary of what the "
                    "fit needs (``summary``) and its markdown report (``markdown``).",
    "analysis/report": "A run, or two runs compared, as one self-contained HTML page: "
                       "``python -m analysis.report RUN.json [NEW.json]`` (``cli``).\n\n"
                       "A run as its cells (``cells``), the figures (``plots``), what both "
                       "pages share and the templates (``page``, ``templates/``), the run "
                       "page (``run_page``) and the comparison page (``comparison_page``).",
    "analysis/features": "Features of a model (the Hugging Face model a boot loads) that "
                         "explain its start-up phases, read without its weights; ``python "
                         "-m analysis.features RUN.json -o features.json`` (``cli``).\n\n"
                         "``ModelFeatures`` and a feature's value and unit "
                         "(``model_features``), the architecture from ``config.json`` "
                         "(``hf_config``), what a folder's files say (``model_files``), the "
                         "features of a folder, a config or a boot's model "
                         "(``model_folder``), of a hub model (``hub_model``), of the "
                         "reference study's models (``study_models``), and features from a "
                         "file of any kind (``sources``). Imports without vLLM or torch.",
    "harness/logs": "The log reader: a vLLM start-up log into the phase schema "
                    "(``reader.read_log``), the suite's second source after the probes.\n\n"
                    "Lines parsed and placed in time (``lines``), the boots of a log "
                    "(``boots``), a boot's lines matched against the registry's patterns "
                    "(``scan``, ``facts``, ``normalise``) and composed into phases "
                    "(``compose``: the V1 engine and the V0 engine).",
    "harness/spans": "vLLM's own OpenTelemetry start-up spans: the third witness of a boot's "
                     "phases.\n\n"
                     "Span records from OTLP or Jaeger exports (``records``), the OTLP "
                     "receiver a boot sends them to (``receiver``), spans mapped to phases "
                     "(``phases``), the boots of a span file (``boots``) and the witness a "
                     "boot records (``witness``).",
    "benchmarks/matrix": "The benchmark matrices as data: a cell is one point of the named "
                         "axes.\n\n"
                         "The cells of a built-in or given matrix (``plan``), the matrix "
                         "file's format (``schema``) and its reading (``file``, "
                         "``yaml_loader``).",
}
PROGRAMS = ("analysis/fit", "analysis/report", "analysis/features")
CLI_NAMES = ("add_arguments", "run", "main")
# Text that states what the moves make false, and code that reads a moved file's folder.
PATCHES: dict[str, list[tuple[str, str]]] = {
    "analysis/report/page.py": [
        ('jinja2.PackageLoader("analysis", "templates")',
         'jinja2.PackageLoader("analysis.report", "templates")')],
    "benchmarks/matrix/plan.py": [
        ('MATRIX_DIR = Path(__file__).parent / "matrices"',
         'MATRIX_DIR = Path(__file__).parents[1] / "matrices"')],
    # what the moves make false: names "importable from here" that no longer are
    "analysis/report/cli.py": [
        ("Here: the command line, and the names callers import. The work is done by",
         "Here: the command line. The work is done by"),
        ("lives in ``analysis.fit.markdown``; its two functions are still\nreachable here, for "
         "callers of the former ``analysis.report``, and imported only when asked\nfor: the "
         "pages do not need the fit.\n", "lives in ``analysis.fit.markdown``.\n"),
        ("from typing import TYPE_CHECKING, Any\n", "")],
    "analysis/features/cli.py": [
        ("Each job has its module, and every name stays importable from here:",
         "Each job has its module in this package:")],
    "analysis/fit/cli.py": [
        ("# The names this module held before it was split, importable from here as before.\n",
         "")],
    "analysis/compare.py": [
        ("analysis.metrics: every\n# name stays importable from here.\n", "analysis.metrics.\n")],
    "analysis/merge.py": [
        ("# Reading a shard is analysis.shards'; its names stay importable from here.\n",
         "# Reading a shard is analysis.shards'.\n")],
    "harness/boot.py": [
        ("The public entry: the names callers use are importable from here, wherever they live\n"
         "(the spec in harness.spec, the compile cache in harness.compile_cache, killing in\n"
         "harness.processes).\n",
         "The spec of a boot is harness.spec's, the compile cache harness.compile_cache's and\n"
         "killing harness.processes': callers import each name from the module that defines it.\n")],
    "harness/registry/__init__.py": [
        ("This module is the registry's one entry: every name is importable from here.",
         "This package is the registry's one entry: every name is importable from here.")],
    "harness/logs/compose.py": [
        ("Cut a scan of a V1-engine log (vLLM 0.8 .. 0.32+) into the six phases.",
         "Cut a scan of a log into the six phases: the V1 engine's (vLLM 0.8 .. 0.32+,\n"
         "``compose_v1``) and the V0 engine's (``compose_v0``)."),
        ("the table in ``harness.logs``; the V0 engine", "the table in ``harness.logs.reader``; "
         "the V0 engine"),
        ("is cut in ``harness.logs.compose``. The", "is cut by ``compose_v0`` (below). The")],
    "docs/analysis.md": [
        ("or of the study's `models_config.json`; every name of its parts "
         "(`analysis.features.model_features`, `hf_config`, `model_files`, `model_folder`, "
         "`study_features`, `feature_files`) is importable from it |",
         "or of the study's `models_config.json`; a package: `model_features`, `hf_config`, "
         "`model_files`, `model_folder`, `hub_model`, `study_models`, `sources` |"),
        ("| `analysis.fit` | the command: feature choice by cross-validation (`fit_select`), fits "
         "per configuration and PCCs (`fit_groups`, from `fit_targets`), LOO-CV and holdout "
         "(`fit_validate`), predictor file and `--json` (`fit_document`), report (`fit_report`) |",
         "| `analysis.fit` | a package: the command (`cli`), feature choice by cross-validation "
         "(`selection`), fits per configuration and PCCs (`groups`, from `targets`), LOO-CV and "
         "holdout (`validate`, `lomo`), predictor file and `--json` (`predictor_document`), "
         "report (`markdown`) |")],
    "harness/evidence.py": [
        ("# what the lines said (log_scan)", "# what the lines said (harness.logs.scan)")],
    "tests/test_report.py": [
        ('["package-data"]["analysis"]', '["package-data"]["analysis.report"]'),
        ('    templates = [p.relative_to(root / "analysis")\n'
         '                 for p in (root / "analysis" / "templates").iterdir()]',
         '    templates = [p.relative_to(root / "analysis" / "report")\n'
         '                 for p in (root / "analysis" / "report" / "templates").iterdir()]'),
        ("    # analysis.fit's main imports analysis.report; the fit's report (re-exported there) "
         "is\n    # imported only when asked for, so the pages import no fit and there is no "
         "cycle.\n",
         "    # The pages need no fit: importing them imports neither analysis.fit nor its "
         "markdown\n    # report.\n")],
    "pyproject.toml": [
        ('analysis = ["templates/*.html.j2"]', '"analysis.report" = ["templates/*.html.j2"]')],
}
# Module-level definitions to delete (path, name): analysis.report's __getattr__ kept the
# fit's markdown report reachable from the pages' module; the test of that shim goes too.
DELETE_DEFS: list[tuple[str, str]] = [
    ("analysis/report/cli.py", "__getattr__"),
    ("analysis/report/cli.py", "_FIT_REPORT"),
    ("analysis/report/cli.py", "TYPE_CHECKING"),
    ("tests/test_report.py", "test_the_fit_report_stays_reachable"),
]
# Packages whose __init__ is a face callers import through: a name imported from one of
# them stays imported from it.
FACES = ("harness", "fixtures", "analysis.predictors", "harness.registry")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".ini", ".txt", ".cfg", ".yaml", ".yml", ".j2", ".sh",
                 ".rst", ""}
TEXT_SKIP = ("tests/data", "docs/data", ".git", THIS)


def patched(text: str, rel: str) -> str:
    for old, new in PATCHES.get(rel, []):
        if old in text and not (old in new and new in text):
            text = text.replace(old, new)
        elif new and new not in text:
            print(f"warning: {rel}: the text to patch is not there (changed since?): "
                  f"{old[:60]!r}", file=sys.stderr)
    return text


def module_of(rel: str) -> str:
    parts = list(Path(rel).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def python_files(root: Path) -> list[str]:
    found = []
    for top in (*PACKAGES, *OTHER_PYTHON):
        path = root / top
        if path.is_file():
            found.append(top)
        elif path.is_dir():
            found += [str(p.relative_to(root)) for p in sorted(path.rglob("*.py"))
                      if "__pycache__" not in p.parts]
    return found


# ------------------------------------------------------------------------------ the moves
def planned_moves(root: Path) -> dict[str, str]:
    """Old path -> new path of every file still at its old place."""
    moves = {}
    for old, new in EXPLICIT.items():
        if (root / old).is_file() and not (root / new).exists():
            moves[old] = new
    for folder, pattern, package, leaves in PREFIX_RULES:
        for path in sorted((root / folder).glob("*.py")):
            old = f"{folder}/{path.name}"
            match = re.fullmatch(pattern, path.stem)
            if old in moves or old in FOLDS or old in EXPLICIT or not match:
                continue
            moves[old] = f"{package}/{leaves.get(match[1], match[1])}.py"
    targets = defaultdict(list)
    for old, new in moves.items():
        targets[new].append(old)
    clash = {n: o for n, o in targets.items() if len(o) > 1 or (root / n).exists()}
    if clash:
        raise SystemExit(f"moves would overwrite: {clash}")
    return moves


def module_map(root: Path, moves: dict[str, str]) -> dict[str, str]:
    """Old module -> new module, the folded ones included."""
    mapping = {module_of(o): module_of(n) for o, n in moves.items()}
    for old, into in FOLDS.items():
        if (root / old).is_file():
            mapping[module_of(old)] = mapping.get(module_of(into), module_of(into))
    return mapping


# ------------------------------------------------------------------------ the symbol table
@dataclass
class ModuleInfo:
    path: str
    is_package: bool
    defined: set[str] = field(default_factory=set)
    # local name -> (module, name) of a module-level "from module import name [as local]";
    # (module, None) for a module bound by an import
    bound: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    # the names its own code reads (its __all__ aside): an import of one stays
    used: set[str] = field(default_factory=set)


def _defined(body: list[ast.stmt], names: set[str]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) \
                and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            _defined(node.body, names)
            _defined(getattr(node, "orelse", []), names)
            _defined(getattr(node, "finalbody", []), names)
            for handler in getattr(node, "handlers", []):
                _defined(handler.body, names)


def _module_level_imports(body: list[ast.stmt]):
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try)):
            yield from _module_level_imports(node.body)
            yield from _module_level_imports(node.orelse)
            for handler in getattr(node, "handlers", []):
                yield from _module_level_imports(handler.body)


def symbol_table(root: Path, files: list[str]) -> dict[str, ModuleInfo]:
    table = {}
    for rel in files:
        if rel.split("/")[0] not in PACKAGES:
            continue
        tree = ast.parse((root / rel).read_text(), rel)
        info = ModuleInfo(rel, rel.endswith("__init__.py"))
        _defined(tree.body, info.defined)
        info.used = _used_names(ast.Module(body=[n for n in tree.body if not _is_all(n)],
                                           type_ignores=[]))
        for node in _module_level_imports(tree.body):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    info.bound[a.asname or a.name] = (node.module, a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        info.bound[a.asname] = (a.name, None)
        table[module_of(rel)] = info
    return table


def definer(table: dict[str, ModuleInfo], module: str, name: str,
            depth: int = 0) -> tuple[str, str | None] | None:
    """(module, name) where ``name`` imported from ``module`` is defined; (module, None) for
    a module; None outside the project."""
    info = table.get(module)
    if info is None or depth > 20:
        return None
    if name in info.defined:
        return module, name
    if name in info.bound:
        source, source_name = info.bound[name]
        if source_name is None:
            return (source, None) if source in table else None
        if f"{source}.{source_name}" in table:
            return f"{source}.{source_name}", None
        return definer(table, source, source_name, depth + 1) or (source, source_name)
    if f"{module}.{name}" in table:
        return f"{module}.{name}", None
    return None


# ----------------------------------------------------------------------- statement editing
def _type_rank(name: str) -> tuple[int, str]:
    # isort's order by type: CONSTANTS, Classes, functions
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def format_from(indent: str, module: str, names: list[tuple[str, str | None]],
                comment: str = "") -> str:
    parts = [n if a in (None, n) else f"{n} as {a}" for n, a in names]
    one = f"{indent}from {module} import {', '.join(parts)}"
    tail = f"  {comment}" if comment else ""
    if len(one + tail) <= LINE:
        return one + tail
    inner = "".join(f"{indent}    {p},\n" for p in parts)
    return f"{indent}from {module} import ({tail}\n{inner}{indent})"


def format_all(names: list[str]) -> str:
    prefix = "__all__ = ["
    lines, current = [], ""
    for i, name in enumerate(names):
        piece = f'"{name}"' + ("," if i < len(names) - 1 else "")
        candidate = f"{current} {piece}" if current else piece
        if current and len(prefix) + len(candidate) + 1 > LINE:
            lines.append(current)
            current = piece
        else:
            current = candidate
    lines.append(current)
    return prefix + ("\n" + " " * len(prefix)).join(lines) + "]"


def _comment(lines: list[str], node: ast.stmt) -> str:
    first = lines[node.lineno - 1]
    if "#" not in first:
        return ""
    comment = first[first.index("#"):].strip()
    return "" if "F401" in comment else comment


def apply_edits(text: str, edits: list[tuple[int, int, str | None]]) -> str:
    """Replace 1-based inclusive line ranges (None deletes them), from the bottom up."""
    lines = text.split("\n")
    for start, end, new in sorted(edits, key=lambda e: -e[0]):
        lines[start - 1:end] = [] if new is None else new.split("\n")
    return "\n".join(lines)


def project_module(name: str | None) -> bool:
    return bool(name) and name.split(".")[0] in PACKAGES


def rewrite_imports(text: str, rel: str, table: dict[str, ModuleInfo],
                    mapping: dict[str, str]) -> str:
    """Every project import names the defining module (old tree) under its new name."""
    tree = ast.parse(text, rel)
    lines = text.split("\n")
    edits = []
    new_of = lambda m: mapping.get(m, m)  # noqa: E731
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name in mapping for a in node.names):
                indent = lines[node.lineno - 1][:node.col_offset]
                parts = [new_of(a.name) + (f" as {a.asname}" if a.asname else "")
                         for a in node.names]
                edits.append((node.lineno, node.end_lineno, f"{indent}import {', '.join(parts)}"))
            continue
        if not isinstance(node, ast.ImportFrom) or node.level or not project_module(node.module):
            continue
        module = node.module
        out: dict[str, list[tuple[str, str | None]]] = {}
        for a in node.names:
            local = a.asname or a.name
            submodule = f"{module}.{a.name}"
            if submodule in table or submodule in mapping:
                parent, _, leaf = new_of(submodule).rpartition(".")
                out.setdefault(parent, []).append((leaf, local))
                continue
            if new_of(module) in FACES and module in table \
                    and (table[module].is_package or module in mapping):
                out.setdefault(new_of(module), []).append((a.name, a.asname))
                continue
            found = definer(table, module, a.name)
            if found is None:
                out.setdefault(new_of(module), []).append((a.name, a.asname))
            elif found[1] is None:
                parent, _, leaf = new_of(found[0]).rpartition(".")
                out.setdefault(parent, []).append((leaf, local))
            else:
                out.setdefault(new_of(found[0]), []).append((found[1], local))
        norm = lambda pairs: [(n, None if a in (None, n) else a) for n, a in pairs]  # noqa: E731
        if list(out) == [module] and norm(out[module]) == norm(
                (a.name, a.asname) for a in node.names):
            continue
        indent = lines[node.lineno - 1][:node.col_offset]
        comment = _comment(lines, node)
        statements = [format_from(indent, m, names, comment if i == 0 else "")
                      for i, (m, names) in enumerate(sorted(out.items()))]
        edits.append((node.lineno, node.end_lineno, "\n".join(statements)))
    return apply_edits(text, edits) if edits else text


def rewrite_attributes(text: str, rel: str, table: dict[str, ModuleInfo]) -> str:
    """``alias.name``, where ``alias`` is a project module that only passed ``name`` through,
    becomes ``name`` imported from the module that defines it, beside the alias's import."""
    tree = ast.parse(text, rel)
    lines = text.split("\n")
    aliases: dict[str, tuple[str, ast.stmt]] = {}  # local name -> (module, its import)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname: (a.name, node) for a in node.names
                            if a.asname and a.name in table})
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            aliases.update({a.asname or a.name: (f"{node.module}.{a.name}", node)
                            for a in node.names if f"{node.module}.{a.name}" in table})
    spans, imports = [], defaultdict(dict)
    taken = _bound_in(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and isinstance(node.ctx, ast.Load)
                and node.lineno == node.end_lineno):
            continue
        module, statement = aliases[node.value.id]
        info = table[module]
        # a name the module reads itself stays there (and a test may patch it there)
        if info.is_package or node.attr in info.defined | info.used \
                or node.attr.startswith("__"):
            continue
        if node.attr in taken:
            continue  # the file has a name of its own so called: attribute_warnings says so
        found = definer(table, module, node.attr)
        if found is None or found[1] is None or found[0] == module:
            continue
        spans.append((node.lineno, node.col_offset, node.end_col_offset, found[1]))
        imports[statement][found] = None
    if not spans:
        return text
    for line, start, end, name in sorted(spans, reverse=True):
        lines[line - 1] = lines[line - 1][:start] + name + lines[line - 1][end:]
    edits = []
    for statement, names in imports.items():
        indent = lines[statement.lineno - 1][:statement.col_offset]
        added = [format_from(indent, module, [(name, None)]) for module, name in names]
        kept = "\n".join(lines[statement.lineno - 1:statement.end_lineno])
        edits.append((statement.lineno, statement.end_lineno, "\n".join([kept, *added])))
    return apply_edits("\n".join(lines), edits)


def merge_module_imports(text: str, rel: str) -> str:
    """Module-level ``from M import`` statements of one project module become one (the
    first), names sorted by type as isort does."""
    tree = ast.parse(text, rel)
    lines = text.split("\n")
    by_module: dict[str, list[ast.ImportFrom]] = defaultdict(list)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and not node.level and project_module(node.module):
            by_module[node.module].append(node)
    edits = []
    for module, nodes in by_module.items():
        if len(nodes) < 2:
            continue
        names: dict[tuple[str, str | None], None] = {}
        for node in nodes:
            names.update({(a.name, a.asname): None for a in node.names})
        ordered = sorted(names, key=lambda na: _type_rank(na[0]))
        first = nodes[0]
        edits.append((first.lineno, first.end_lineno,
                      format_from("", module, ordered, _comment(lines, first))))
        edits += [(n.lineno, n.end_lineno, None) for n in nodes[1:]]
    return apply_edits(text, edits) if edits else text


def _used_names(tree: ast.Module) -> set[str]:
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.fullmatch(r"[\w\[\], .|]+", node.value):
            used |= set(re.findall(r"[A-Za-z_]\w*", node.value))  # a string annotation
    return used


def _is_all(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)


def _bound_in(tree: ast.Module) -> set[str]:
    """Every name the file binds anywhere: assigned, a parameter, a definition, an import."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def drop_pass_through(text: str, rel: str) -> str:
    """A module that is no package ``__init__`` keeps only the project imports it uses, and
    an ``__all__`` of what it defines."""
    if Path(rel).name in ("__init__.py", "__main__.py") or rel.split("/")[0] not in PACKAGES:
        return text
    tree = ast.parse(text, rel)
    lines = text.split("\n")
    all_node = next((n for n in tree.body if _is_all(n)), None)
    body = [n for n in tree.body if n is not all_node]
    used = _used_names(ast.Module(body=body, type_ignores=[]))
    # names the module binds by import are not "used" by the import statement itself
    edits = []
    for node in _module_level_imports(tree.body):
        if not isinstance(node, ast.ImportFrom) or node.level or not project_module(node.module):
            continue
        kept = [(a.name, a.asname) for a in node.names if (a.asname or a.name) in used]
        if len(kept) == len(node.names):
            continue
        indent = lines[node.lineno - 1][:node.col_offset]
        edits.append((node.lineno, node.end_lineno,
                      format_from(indent, node.module, kept, _comment(lines, node))
                      if kept else None))
    if all_node is not None and isinstance(all_node.value, (ast.List, ast.Tuple)):
        defined: set[str] = set()
        _defined(tree.body, defined)
        names = [e.value for e in all_node.value.elts if isinstance(e, ast.Constant)]
        kept_names = [n for n in names if n in defined]
        if kept_names != names:
            edits.append((all_node.lineno, all_node.end_lineno, format_all(kept_names)))
    return apply_edits(text, edits) if edits else text


def delete_definitions(text: str, rel: str, names: set[str]) -> str:
    """Remove module-level functions, assignments and ``if NAME:`` blocks named ``names``."""
    tree = ast.parse(text, rel)
    lines = text.split("\n")
    edits = []
    for node in tree.body:
        name = None
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            name = node.name
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name):
            name = node.test.id
        if name in names:
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            end = node.end_lineno
            while end < len(lines) and not lines[end].strip():
                end += 1  # the blank lines after it go with it
            edits.append((start, end, None))
    return apply_edits(text, edits) if edits else text


# ------------------------------------------------------------------------------ the fold
def fold(into_text: str, folded_text: str, folded_into: str) -> str:
    """``folded_text``'s definitions appended to ``into_text``; its imports merged in, less
    the ones of ``folded_into`` (the module it now is part of)."""
    into = ast.parse(into_text)
    folded = ast.parse(folded_text)
    folded_lines = folded_text.split("\n")
    present = {(n.module, a.name) for n in into.body if isinstance(n, ast.ImportFrom)
               for a in n.names} | {(None, a.name) for n in into.body
                                    if isinstance(n, ast.Import) for a in n.names}
    new_imports = []
    body_start = None
    for node in folded.body:
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant) \
                and body_start is None and node is folded.body[0]:
            continue  # the docstring
        if isinstance(node, ast.ImportFrom):
            if node.module in (folded_into, "__future__"):
                continue
            names = [(a.name, a.asname) for a in node.names if (node.module, a.name) not in present]
            if names:
                new_imports.append(format_from("", node.module, names))
            continue
        if isinstance(node, ast.Import):
            names = [a for a in node.names if (None, a.name) not in present]
            if names:
                new_imports.append("import " + ", ".join(a.name for a in names))
            continue
        if body_start is None:
            body_start = min([node.lineno, *(d.lineno for d in
                                             getattr(node, "decorator_list", []))])
    body = "\n".join(folded_lines[body_start - 1:]).strip("\n") if body_start else ""
    text = into_text.rstrip("\n")
    if new_imports:
        last = max(n.end_lineno for n in into.body if isinstance(n, (ast.Import, ast.ImportFrom)))
        text = apply_edits(text, [(last, last, text.split("\n")[last - 1] + "\n"
                                   + "\n".join(new_imports))])
    return f"{text}\n\n\n{body}\n" if body else text + "\n"


# ------------------------------------------------------------------------------ the text
def text_replacements(mapping: dict[str, str], moves: dict[str, str]) -> list[tuple[re.Pattern, str]]:
    """Dotted names and file paths of moved modules -> their new ones; a module whose old
    name is its package's keeps its dotted name, its file becomes the package's folder."""
    out = []
    for old, new in sorted(mapping.items(), key=lambda kv: -len(kv[0])):
        if new == old or new.startswith(f"{old}.") or module_of_package(new) == old:
            continue
        out.append((re.compile(rf"(?<![\w.]){re.escape(old)}(?![\w])"), new))
    for old, new in sorted(moves.items(), key=lambda kv: -len(kv[0])):
        target = new.rsplit("/", 1)[0] + "/" if Path(old).with_suffix("").as_posix() == \
            new.rsplit("/", 1)[0] else new
        out.append((re.compile(rf"(?<![\w./]){re.escape(old)}(?![\w])"), target))
    for old, new in FOLDERS.items():
        out.append((re.compile(rf"(?<![\w./]){re.escape(old)}(?![\w])"), new))
    return out


def module_of_package(module: str) -> str:
    return module.rpartition(".")[0]


def text_files(root: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                            check=True).stdout.split("\n")
    return [f for f in listed if f and Path(f).suffix in TEXT_SUFFIXES
            and not any(f == s or f.startswith(f"{s}/") for s in TEXT_SKIP)
            and (root / f).is_file()]


# --------------------------------------------------------------------------- package faces
def module_level_edges(root: Path) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    files = [f for f in python_files(root) if f.split("/")[0] in PACKAGES]
    modules = {module_of(f) for f in files}
    for rel in files:
        tree = ast.parse((root / rel).read_text(), rel)
        targets = set()
        for node in _module_level_imports(tree.body):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    targets.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        name = module_of(rel)
        # importing a submodule imports its packages first
        expanded = set()
        for t in targets & modules:
            parts = t.split(".")
            expanded |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        edges[name] = (expanded & modules) - {name}
    return edges


def eager_safe(package: str, submodule: str, edges: dict[str, set[str]]) -> bool:
    """Whether the package's ``__init__`` may import ``submodule`` at its top: no module
    outside the package that the submodule imports leads back into the package (it would
    then import a half-made package)."""
    inside = lambda m: m == package or m.startswith(f"{package}.")  # noqa: E731
    # the packages above it are imported before it, whatever the order below
    parts = package.split(".")
    above = {".".join(parts[:i]) for i in range(1, len(parts))}
    edges = {m: targets - above for m, targets in edges.items()}
    seen, stack = set(), [submodule]
    while stack:
        for target in edges.get(stack.pop(), ()):
            if target in seen:
                continue
            seen.add(target)
            if not inside(target):
                stack.append(target)
    outside = {m for m in seen if not inside(m)}

    def reaches(start: str) -> bool:
        visited, todo = set(), [start]
        while todo:
            for t in edges.get(todo.pop(), ()):
                if inside(t):
                    return True
                if t not in visited:
                    visited.add(t)
                    todo.append(t)
        return False

    return not any(reaches(m) for m in outside)


def package_init(root: Path, folder: str) -> str:
    package = folder.replace("/", ".")
    edges = module_level_edges(root)
    defined: dict[str, set[str]] = {}
    for path in sorted((root / folder).glob("*.py")):
        if path.stem in ("__init__", "__main__"):
            continue
        names: set[str] = set()
        _defined(ast.parse(path.read_text()).body, names)
        defined[f"{package}.{path.stem}"] = names
    owners: dict[str, list[str]] = defaultdict(list)
    for module, names in defined.items():
        for n in names:
            owners[n].append(module)
    wanted: dict[str, set[str]] = defaultdict(set)
    for rel in python_files(root):
        if module_of(rel) == package or module_of(rel).startswith(f"{package}."):
            continue
        for node in ast.walk(ast.parse((root / rel).read_text(), rel)):
            if isinstance(node, ast.ImportFrom) and node.module in defined:
                for a in node.names:
                    if not a.name.startswith("_") and a.name not in CLI_NAMES \
                            and len(owners[a.name]) == 1:
                        wanted[node.module].add(a.name)
    safe = {m for m in wanted if eager_safe(package, m, edges)}
    left_out = sorted(set(wanted) - safe)
    doc = NEW_PACKAGES[folder]
    if left_out:
        doc += ("\n\nImported by their own path, not from here: "
                + ", ".join(f"``{m}``" for m in left_out)
                + " (they import a module that imports this package).")
    body = ['"""' + _wrap_doc(doc) + '\n"""', ""]
    exported = []
    for module in sorted(safe):
        names = sorted(wanted[module], key=_type_rank)
        body.append(format_from("", module, [(n, None) for n in names]))
        exported += names
    body += ["", format_all(sorted(exported, key=_type_rank)), ""]
    return "\n".join(body)


def _wrap_doc(text: str) -> str:
    out = []
    for para in text.split("\n\n"):
        line = ""
        for word in para.split():
            if len(line) + len(word) + 1 > LINE - 4 and line:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
        out.append("")
    return "\n".join(out).rstrip("\n")


def package_main(folder: str) -> str:
    package = folder.replace("/", ".")
    return (f'"""``python -m {package}`` and ``coldstart {folder.rsplit("/", 1)[1]}``: see '
            f'``{package}.cli``."""\n\nimport sys\n\n'
            f"from {package}.cli import add_arguments, main, run\n\n"
            '__all__ = ["add_arguments", "run", "main"]\n\n'
            'if __name__ == "__main__":\n    sys.exit(main())\n')


def pyproject_packages(text: str, root: Path) -> str:
    match = re.search(r"^packages = \[(.*?)\]$", text, re.M)
    if not match:
        return text
    listed = re.findall(r'"([\w.]+)"', match[1])
    for folder in [*NEW_PACKAGES, "harness/registry"]:
        name = folder.replace("/", ".")
        if name not in listed and (root / folder / "__init__.py").is_file():
            parent = name.rsplit(".", 1)[0]
            at = max(i for i, p in enumerate(listed) if p == parent or p.startswith(f"{parent}."))
            listed.insert(at + 1, name)
    line = "packages = [" + ", ".join(f'"{p}"' for p in listed) + "]"
    if len(line) > LINE:
        line = "packages = [\n" + "".join(f'  "{p}",\n' for p in listed) + "]"
    return text[:match.start()] + line + text[match.end():]


def attribute_warnings(root: Path) -> list[str]:
    """``alias.name`` where ``alias`` is a project module that neither defines ``name`` nor
    is a package: a name the module passed through, which step 2 cannot see."""
    files = python_files(root)
    table = symbol_table(root, files)
    found = []
    for rel in files:
        tree = ast.parse((root / rel).read_text(), rel)
        modules: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update({a.asname: a.name for a in node.names if a.asname and a.name in table})
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                for a in node.names:
                    if f"{node.module}.{a.name}" in table:
                        modules[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in modules:
                info = table[modules[node.value.id]]
                if not info.is_package and node.attr not in info.defined \
                        and node.attr not in info.bound and not node.attr.startswith("__"):
                    found.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr} "
                                 f"({modules[node.value.id]} does not define it)")
    return found


# ----------------------------------------------------------------------------------- main
class Tree:
    def __init__(self, root: Path, dry_run: bool):
        self.root, self.dry_run, self.changed = root, dry_run, []

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        if path.is_file() and path.read_text() == text:
            return
        self.changed.append(rel)
        if not self.dry_run:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def git(self, *args: str) -> None:
        print("git", *args)
        if not self.dry_run:
            subprocess.run(["git", *args], cwd=self.root, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--dry-run", action="store_true", help="say what would change")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    tree = Tree(root, args.dry_run)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty and not args.dry_run:
        raise SystemExit(f"{root}: commit or stash first (the moves are git mv):\n{dirty}")

    moves = planned_moves(root)
    mapping = module_map(root, moves)
    files = python_files(root)
    table = symbol_table(root, files)

    # 1. contents under their old paths: fold, then imports to the defining modules
    texts = {rel: (root / rel).read_text() for rel in files if rel != THIS}
    for old, into in FOLDS.items():
        if old in texts:
            texts[into] = fold(texts[into], texts.pop(old), module_of(into))
    for rel in texts:
        texts[rel] = rewrite_imports(rewrite_attributes(texts[rel], rel, table), rel, table,
                                     mapping)

    # 2. the moves, then the contents at their new paths
    for old in FOLDS:
        if (root / old).is_file():
            tree.git("rm", "-q", old)
    for old, new in FOLDERS.items():
        if (root / old).is_dir() and not (root / new).exists():
            (root / new).parent.mkdir(parents=True, exist_ok=True)
            tree.git("mv", old, new)
    for old, new in moves.items():
        if not args.dry_run:
            (root / new).parent.mkdir(parents=True, exist_ok=True)
        tree.git("mv", old, new)
    replacements = text_replacements(mapping, moves)
    for rel, text in texts.items():
        new_rel = moves.get(rel, rel)
        for pattern, new in replacements:
            text = pattern.sub(new, text)
        text = patched(text, new_rel)
        names = {n for p, n in DELETE_DEFS if p == new_rel}
        if names:
            text = delete_definitions(text, new_rel, names)
        text = merge_module_imports(drop_pass_through(text, new_rel), new_rel)
        tree.write(new_rel, text)
    if args.dry_run:
        print(f"{len(moves)} moves; would change {len(tree.changed)} files")
        return 0

    # 3. the packages' faces
    for folder in NEW_PACKAGES:
        if not (root / folder).is_dir():
            continue
        if not (root / folder / "__init__.py").is_file():
            tree.write(f"{folder}/__init__.py", package_init(root, folder))
            tree.git("add", f"{folder}/__init__.py")
        if folder in PROGRAMS and (root / folder / "cli.py").is_file() \
                and not (root / folder / "__main__.py").is_file():
            tree.write(f"{folder}/__main__.py", package_main(folder))
            tree.git("add", f"{folder}/__main__.py")

    # 4. every other text file
    for rel in text_files(root):
        if rel.endswith(".py") and (rel in texts or rel in moves.values()):
            continue
        text = original = (root / rel).read_text()
        for pattern, new in replacements:
            text = pattern.sub(new, text)
        text = patched(text, rel)
        if rel == "pyproject.toml":
            text = pyproject_packages(text, root)
        if text != original:
            tree.write(rel, text)
    print(f"{len(moves)} moves, {len(set(tree.changed))} files written")
    warnings = attribute_warnings(root)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
