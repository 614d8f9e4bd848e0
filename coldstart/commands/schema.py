"""``coldstart schema [NAME]``: the JSON Schema of a document the suite writes or reads,
generated from its pydantic model (the one source of truth), so other tools can validate.

    coldstart schema                 # the names, with their models and versions
    coldstart schema boot-result -o boot-result.schema.json
    coldstart schema run FILE...     # is each FILE a run? one line each; else exit 2

A run document is pytest-benchmark's JSON (``run``); each cell's ``extra_info`` is a
``boot-result`` (its median round) with ``rounds`` (every round's); ``docs/format.md``
describes the whole.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from coldstart.cli import check_output, run_program
from document.errors import InputError, UsageError, unreadable

# name -> (module, model, what it is); imported only when asked, so this runs without vLLM.
DOCUMENTS: dict[str, tuple[str, str, str]] = {
    "run": ("document", "RunDocument",
            "a run: pytest benchmarks/ --benchmark-json, gate, history, merge, ingest, compact"),
    "cells-log-line": ("document", "CellsLogLine",
                       "one line of a run's cells log (OUT.json.cells.jsonl)"),
    "boot-result": ("document.boot_result", "BootResult",
                    "one boot (coldstart boot --out), a cell's extra_info, an ingested log"),
    "matrix-file": ("benchmarks.matrix.file_schema", "MatrixFile",
                    "a matrix file (pytest benchmarks/ --matrix FILE.yaml)"),
    "predictor-file": ("analysis.predictor_file", "PredictorFile",
                       "a predictor file (analysis.fit -> predictor.json, analysis/predictors/)"),
    "predictor-group": ("analysis.predictor_file", "PredictorGroup",
                        "one configuration of a predictor file"),
    "model-features": ("analysis.features.model_features", "ModelFeatures",
                       "one model's features (coldstart features; fit and predict --features "
                       "take one, a list, or NAME -> features)"),
}


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def check_file(name: str, path: Path) -> str:
    """What ``path`` holds, read as a ``name`` by the suite's own reader of that kind (the
    model, and the checks its reader adds: a run's versions and cells, a matrix file's
    models); a ``UserError`` line naming the file and what is wrong when it is not one: {}
    and a document of another kind (a compare document, a BootResult where a run is asked)
    are refused here as by the JSON Schema."""
    import importlib

    from document import cells_log_line, read_run
    from document.boot_result import SchemaError, read_json, validation_summary

    if name == "run":
        doc = read_run(path)
        return f"a run of {_count(len(doc.cells()), 'cell')}"
    if name == "matrix-file":
        from benchmarks.matrix.file import load
        from benchmarks.matrix.file_schema import MatrixFileError

        try:
            models, cells, _ = load(path)
        except MatrixFileError as exc:
            raise SchemaError(str(exc)) from None
        return (f"a matrix file of {_count(len(models), 'model')}, "
                f"{_count(len(cells), 'configuration')}")
    if name == "predictor-file":
        from analysis.predictor_file import load_predictor

        return f"a predictor file of {_count(len(load_predictor(path).groups), 'configuration')}"
    if name == "cells-log-line":
        text = path.read_text(errors="replace")
        try:  # a whole document (a BootResult, a run) on several lines is no cells log
            lines = [json.dumps(json.loads(text))]
        except json.JSONDecodeError:
            lines = [x for x in text.splitlines() if x.strip()]
        if not lines:
            raise SchemaError(f"{path}: empty: no cells-log line")
        for n, line in enumerate(lines, 1):
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SchemaError(f"{path}:{n}: not JSON ({exc})") from None
            cells_log_line(data, f"{path}:{n}")
        return f"a cells log of {_count(len(lines), 'line')}"
    module, model, what = DOCUMENTS[name]
    data = read_json(path)
    if not isinstance(data, dict):
        raise SchemaError(f"{path}: not {name} (a JSON {type(data).__name__})")
    try:
        getattr(importlib.import_module(module), model).model_validate(data)
    except ValueError as exc:  # pydantic's ValidationError, and a validator's own
        raise SchemaError(f"{path}: not {name}: {validation_summary(exc)}") from None
    return f"a {name}"


def json_schema(name: str) -> dict[str, Any]:
    import importlib

    module, model, _ = DOCUMENTS[name]
    schema = getattr(importlib.import_module(module), model).model_json_schema()
    schema["$id"] = f"vllm-coldstart/{name}"
    return schema


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("the JSON Schema of a document the suite writes or reads, from its "
                          "pydantic model")
    parser.add_argument("name", nargs="?", choices=sorted(DOCUMENTS))
    parser.add_argument("files", nargs="*", type=Path, metavar="FILE",
                        help="check that each FILE is a NAME (one line each) instead of "
                             "printing the schema; exit 2 at the first that is not")
    parser.add_argument("-o", "--out", type=Path, help="write here instead of standard output")


def run(args: argparse.Namespace) -> int:
    if args.name is None:
        for name, (module, model, what) in DOCUMENTS.items():
            print(f"{name:16} {module}.{model}: {what}")
        return 0
    if args.files:
        if args.out is not None:
            raise UsageError("-o writes a schema; with FILE nothing is written")
        for path in args.files:
            why = unreadable(path)
            if why is not None:
                raise InputError(f"{path}: {why}")
            print(f"{path}: {check_file(args.name, path)}")
        return 0
    check_output(args.out, "-o")
    text = json.dumps(json_schema(args.name), indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program("coldstart.commands.schema", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
