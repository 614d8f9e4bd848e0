"""``coldstart schema [NAME]``: the JSON Schema of a document the suite writes or reads,
generated from its pydantic model (the one source of truth), so other tools can validate.

    coldstart schema                 # the names, with their models and versions
    coldstart schema boot-result -o boot-result.schema.json

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

# name -> (module, model, what it is); imported only when asked, so this runs without vLLM.
DOCUMENTS: dict[str, tuple[str, str, str]] = {
    "run": ("harness.document", "RunDocument",
            "a run: pytest benchmarks/ --benchmark-json, gate, history, merge, ingest, compact"),
    "cells-log-line": ("harness.document", "CellsLogLine",
                       "one line of a run's cells log (OUT.json.cells.jsonl)"),
    "boot-result": ("harness.schema", "BootResult",
                    "one boot (python -m harness --out), a cell's extra_info, an ingested log"),
    "matrix-file": ("benchmarks.matrix_schema", "MatrixFile",
                    "a matrix file (pytest benchmarks/ --matrix FILE.yaml)"),
    "predictor-file": ("analysis.predictor_file", "PredictorFile",
                       "a predictor file (analysis.fit -> predictor.json, analysis/predictors/)"),
    "predictor-group": ("analysis.predictor_file", "PredictorGroup",
                        "one configuration of a predictor file"),
    "model-features": ("analysis.feature_model", "ModelFeatures",
                       "one model's features (coldstart features; fit and predict --features "
                       "take one, a list, or NAME -> features)"),
}


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
    parser.add_argument("-o", "--out", type=Path, help="write here instead of standard output")


def run(args: argparse.Namespace) -> int:
    if args.name is None:
        for name, (module, model, what) in DOCUMENTS.items():
            print(f"{name:16} {module}.{model}: {what}")
        return 0
    check_output(args.out, "-o")
    text = json.dumps(json_schema(args.name), indent=2) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program("coldstart.schema", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
