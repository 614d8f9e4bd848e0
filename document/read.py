"""The one reader of the result document: a file or its JSON, typed and checked (``read_run``,
``read_cells``, ``read_results``), each fault one ``SchemaError`` line naming the file and what
is wrong; and a cells log's line (``cells_log_line``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from document.boot_result import (
    DOCUMENT_KEY,
    SCHEMA_VERSION,
    BootResult,
    SchemaError,
    cell_id,
    read_json,
    validation_summary,
)
from document.models import (
    CellInfo,
    CellsLogLine,
    Entry,
    RunCell,
    UnrecordedCell,
    cell_axes,
)
from document.run import RunDocument


def check_version(version: Any, where: str) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SchemaError(f"{where}: schema_version {version!r} is not a version of this schema")
    if version > SCHEMA_VERSION:
        raise SchemaError(f"{where}: schema version {version} is newer than this reader "
                          f"({SCHEMA_VERSION})")


def _typed(model: type[BaseModel], data: Any, where: str, what: str) -> Any:
    if not isinstance(data, dict):
        raise SchemaError(f"{where}: not {what} (a JSON {type(data).__name__})")
    check_version(data.get("schema_version", SCHEMA_VERSION), where)
    try:
        return model.model_validate(data)
    except ValidationError as exc:  # pydantic's message names the field; keep it on one line
        raise SchemaError(f"{where}: not {what}: {validation_summary(exc)}") from exc


def _rounds_known(data: dict[str, Any]) -> dict[str, Any]:
    # A round is a BootResult: what a later writer of the same schema version added beside
    # its fields is not ours to refuse.
    return {k: v for k, v in data.items() if k in BootResult.model_fields}


def run_document(data: Any, where: str) -> RunDocument:
    """``data`` (a result document's JSON) typed, or one SchemaError line saying what in it
    is not a result document of this suite."""
    if not isinstance(data, dict):
        raise SchemaError(f"{where}: not a result document")
    if "benchmarks" not in data:
        raise SchemaError(f"{where}: no 'benchmarks' list and not a BootResult: not a "
                          "vllm-coldstart result")
    meta = data.get(DOCUMENT_KEY) or {}
    benchmarks = data["benchmarks"]
    unrecorded = meta.get("unrecorded", []) if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(benchmarks, list) \
            or not isinstance(unrecorded, list):
        raise SchemaError(f"{where}: 'benchmarks', '{DOCUMENT_KEY}' or its 'unrecorded' has "
                          "the wrong type: not a vllm-coldstart result")
    check_version(meta.get("schema_version", SCHEMA_VERSION), where)
    entries = []
    for i, bench in enumerate(benchmarks):
        if not isinstance(bench, dict):
            raise SchemaError(f"{where}: benchmark {i} is a JSON {type(bench).__name__}, "
                              "not an object")
        name = bench.get("name", i)
        extra = bench.get("extra_info") or {}
        if not isinstance(extra, dict):
            raise SchemaError(f"{where}: benchmark {name!r}: extra_info is not an object")
        if "phases" not in extra:
            raise SchemaError(f"{where}: benchmark {name!r} has no extra_info.phases: not "
                              "written by vllm-coldstart")
        rounds = extra.get("rounds")
        if rounds is not None and not isinstance(rounds, list):
            raise SchemaError(f"{where}: benchmark {name!r}: rounds is not a list")
        typed_rounds = [_typed(BootResult, _rounds_known(r) if isinstance(r, dict) else r,
                               f"{where}:{name} round {j}", "a BootResult")
                        for j, r in enumerate(rounds or [])]
        info = _typed(CellInfo, {k: v for k, v in extra.items() if k != "rounds"},
                      f"{where}:{name}", "a BootResult")
        if rounds is not None:
            info.rounds = typed_rounds
        entry = {**bench, "extra_info": info}
        try:
            entries.append(Entry.model_validate(entry))
        except ValidationError as exc:
            raise SchemaError(f"{where}: benchmark {name!r}: {validation_summary(exc)}") from exc
    typed_unrecorded = [_typed(UnrecordedCell, d, f"{where}:unrecorded[{i}]", "a BootResult")
                        for i, d in enumerate(unrecorded)]
    rest = {k: v for k, v in data.items() if k not in ("benchmarks", DOCUMENT_KEY)}
    try:
        doc = RunDocument.model_validate(
            {**rest, "benchmarks": [], DOCUMENT_KEY: {**meta, "unrecorded": typed_unrecorded}})
    except ValidationError as exc:
        raise SchemaError(f"{where}: {validation_summary(exc)}") from exc
    doc.benchmarks = entries
    return doc


def read_run(path: str | Path, error: type[SchemaError] = SchemaError) -> RunDocument:
    """A run (the JSON of ``pytest benchmarks/ --benchmark-json``), typed; one ``error`` line
    naming the file and what is wrong. A BootResult JSON or a list of them, which
    ``read_cells`` reads as results, is refused here, saying so: only a run says which cells
    were run and on what machine."""
    p = Path(path)
    data = read_json(p, error)
    if isinstance(data, dict) and "benchmarks" in data:
        try:
            return run_document(data, str(p))
        except SchemaError as exc:
            raise error(str(exc)) from None
    boots = _boots_of(data, p)
    if boots is None:
        return run_document(data, str(p))  # refused in the reader's words
    kind = "a list of results" if isinstance(data, list) else "a single BootResult"
    raise error(f"{p}: {kind}, not the JSON of `pytest benchmarks/ --benchmark-json`")


def _boots_of(data: Any, p: Path) -> list[BootResult] | None:
    """A BootResult JSON or a list of them (``coldstart boot``, the log reader), typed;
    None for anything else."""
    single = isinstance(data, dict) and "benchmarks" not in data and "state" in data \
        and "phases" in data
    if not (single or isinstance(data, list)):
        return None
    return [_typed(BootResult, _rounds_known(d) if isinstance(d, dict) else d,
                   str(p) if single else f"{p}[{i}]", "a BootResult")
            for i, d in enumerate([data] if single else data)]


def read_boots(path: str | Path) -> tuple[RunDocument | None, list[RunCell], bool]:
    """``read_cells``, and whether the file is a single BootResult (not a run, not a list)."""
    p = Path(path)
    data = read_json(p)
    boots = _boots_of(data, p)
    if boots is not None:
        cells = []
        for r in boots:
            axes = cell_axes(r)
            cells.append(RunCell(cell_id(axes) or r.model, axes, r, [r]))
        return None, cells, not isinstance(data, list)
    doc = run_document(data, str(p))
    return doc, doc.cells(), False


def read_cells(path: str | Path) -> tuple[RunDocument | None, list[RunCell]]:
    """A result document's cells; a BootResult JSON or a list of them (``coldstart boot``,
    the log reader) reads as one cell per boot, with no document (None)."""
    doc, cells, _single = read_boots(path)
    return doc, cells


def read_results(path: str | Path, *, all_rounds: bool = False) -> list[BootResult]:
    """Every boot in a result document, a BootResult JSON, or a list of them: each cell's
    headline (median) round, or every round with ``all_rounds``.

    Raises SchemaError when the file is missing, is not JSON, or does not hold this suite's
    schema.
    """
    doc, cells = read_cells(path)
    if doc is not None:
        return doc.results(all_rounds=all_rounds)
    return [c.headline for c in cells]


def cells_log_line(data: Any, where: str) -> CellsLogLine:
    """One cells-log line typed, or one SchemaError line saying what is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
        raise SchemaError(f"{where}: no 'result' object: not a cells log of "
                          "`pytest benchmarks/`")
    rounds = data.get("rounds")
    try:
        return CellsLogLine.model_validate({
            **data, "result": _rounds_known(data["result"]),
            "rounds": [_rounds_known(r) if isinstance(r, dict) else r
                       for r in rounds or [data["result"]]]})
    except ValidationError as exc:
        raise SchemaError(f"{where}: not a BootResult: {validation_summary(exc)}") from exc


def run_of_pytest_benchmark(data: dict[str, Any]) -> RunDocument:
    """pytest-benchmark's own JSON, as its ``update_json`` hook holds it, typed: the entries
    that carry our fields (one without, an error between the boot and ``extra_info``, is no
    result) and its own keys."""
    ours = [b for b in data.get("benchmarks") or []
            if isinstance(b, dict) and "phases" in (b.get("extra_info") or {})]
    return run_document({**data, "benchmarks": ours}, "pytest-benchmark's JSON")
