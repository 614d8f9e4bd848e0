"""The shards ``analysis.merge`` merges, read: a shard's ``--benchmark-json`` document or its
cells log (``*.cells.jsonl``, one line per cell as it ended), each as a ``Shard`` of
``ShardCell``s with what the merge checks (schema and vLLM versions, ``--rounds``, matrix,
host, commit).

A cells log's line that a killed process cut short, and that a retry then appended to (its
complete record on the same physical line), gives the retry's record; a cut last line is left
out with a note; any other line that is not a record is refused, naming the file and line.
Within one cells log a later line for a cell replaces an earlier one.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from document import (
    CellInfo,
    Entry,
    UnrecordedCell,
    cell_axes,
    cell_params,
    cells_log_line,
    read_run,
)
from document.boot_result import DOCUMENT_KEY, SCHEMA_VERSION, SchemaError, cell_id, read_json
from document.errors import unreadable
from document.merging import MergeError, Shard, ShardCell, joint_selection

# What a shard is, and the checks of merging shards, are the document's (document.merging).
__all__ = ["CELLS_LOG_SUFFIX", "raw_schema_versions", "read_shard", "stamp_epoch"]

CELLS_LOG_SUFFIX = ".jsonl"


def stamp_epoch(stamp: Any) -> float | None:
    """Seconds since the epoch of an ISO time stamp (``written_at``), None if it is none."""
    if not isinstance(stamp, str):
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f%z"):
        try:
            return datetime.strptime(stamp, fmt).timestamp()
        except ValueError:
            continue
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def _versions_of(fields: dict[str, Any]) -> tuple[set[int], set[str]]:
    schema = fields.get("schema_version", SCHEMA_VERSION)
    vllm = fields.get("vllm_version")
    return {schema}, ({vllm} if vllm else set())


def raw_schema_versions(path: Path) -> set[Any]:
    """The schema versions a file claims, read before it is parsed: a file of a newer
    schema is refused as a mix with the others, not as unreadable."""
    found: set[Any] = set()
    if path.suffix == CELLS_LOG_SUFFIX:
        for _n, entry in _log_records(path, quiet=True):
            result = entry.get("result") if isinstance(entry, dict) else None
            if isinstance(result, dict):
                found.add(result.get("schema_version", SCHEMA_VERSION))
        return found
    doc = read_json(path, MergeError)
    meta = doc.get(DOCUMENT_KEY) if isinstance(doc, dict) else None
    if isinstance(meta, dict):
        found.add(meta.get("schema_version", SCHEMA_VERSION))
    return found


def _read_document(path: Path) -> Shard:
    doc = read_run(path, MergeError)
    meta, info = doc.coldstart, doc.machine_info
    written = (stamp_epoch(meta.written_at) or stamp_epoch(doc.datetime)
               or path.stat().st_mtime)
    schema = {meta.schema_version}
    vllm = {v} if (v := doc.machine_facts.vllm_version) else set()
    commit = doc.commit_info or None
    cells = []
    # An input that is itself a merge keeps each cell's own machine and commit.
    for entry in doc.benchmarks:
        fields = entry.extra_info
        cid = cell_id(entry.params) if entry.params else str(entry.name)
        cells.append(ShardCell(cid, entry, True, entry.machine_info or info, str(path),
                               written, True, fields.commit_info or commit))
        schema.add(fields.schema_version)
        vllm |= {fields.vllm_version} if fields.vllm_version else set()
    for result in meta.unrecorded:
        cid = cell_id(cell_axes(result))
        cells.append(ShardCell(cid, result, False, result.machine_info or info, str(path),
                               written, True, result.commit_info or commit))
        schema.add(result.schema_version)
        vllm |= {result.vllm_version} if result.vllm_version else set()
    host = meta.host or info.get("node")
    return Shard(path, "json", schema, vllm, meta.rounds, meta.matrix, host,
                 cells, doc, meta.matrix_cells)


def _log_records(path: Path, *, quiet: bool = False,
                 program: str = "analysis.merge") -> list[tuple[int, Any]]:
    """The records of a cells log, ``[(line number, record)]``.

    A process killed while appending leaves its line cut, without a newline; a retry then
    appends its own record right after it, on the same physical line. Such a line gives the
    retry's record (the cut one is lost, said on stderr). A cut last line is left out (said);
    any other line that is not JSON is refused, naming the file and the line.
    """
    if (why := unreadable(path)) is not None:
        raise MergeError(f"{path}: {why}")
    lines = path.read_text().splitlines()
    decoder = json.JSONDecoder()
    out = []
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        try:
            out.append((n, json.loads(text)))
            continue
        except json.JSONDecodeError as exc:
            error = exc
        retry = _retry_record(text, decoder)
        if retry is not None:
            if not quiet:
                print(f"{program}: {path}:{n}: a cut record left out, the record "
                      "appended after it (a retry) kept", file=sys.stderr)
            out.append((n, retry))
        elif n == len(lines):  # the process died while writing it: that cell is lost
            if not quiet:
                print(f"{program}: {path}:{n}: a cut last line left out ({error})",
                      file=sys.stderr)
        else:
            raise MergeError(f"{path}:{n}: not a JSON line ({error})") from error
    return out


def _retry_record(text: str, decoder: json.JSONDecoder) -> dict[str, Any] | None:
    """The complete record that ends ``text`` after a cut one, or None."""
    start = text.find("{", 1)
    while start != -1:
        try:
            record, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            record, end = None, -1
        if end == len(text) and isinstance(record, dict) \
                and isinstance(record.get("result"), dict):
            return record
        start = text.find("{", start + 1)
    return None


def _read_cells_log(path: Path, program: str) -> Shard:
    records = _log_records(path, program=program)
    written = path.stat().st_mtime
    by_cell: dict[str, ShardCell] = {}
    schema: set[int] = set()
    vllm: set[str] = set()
    matrices: set[str] = set()
    fingerprints: list[dict[str, Any]] = []
    run_rounds: set[int] = set()
    host = None
    for n, data in records:
        try:
            line = cells_log_line(data, f"{path}:{n}")
        except SchemaError as exc:
            raise MergeError(str(exc)) from exc
        result, rounds = line.result, line.rounds
        params = line.params if line.params is not None else cell_params(result)
        cid = line.cell or cell_id(params)
        checks = line.checks_failed
        info = line.machine_info
        host = host or info.get("node")
        if line.matrix is not None:
            matrices.add(line.matrix)
        if line.matrix_cells is not None and line.matrix_cells not in fingerprints:
            fingerprints.append(line.matrix_cells)
        if line.run_rounds is not None:
            run_rounds.add(line.run_rounds)
        commit = line.commit_info
        fields = CellInfo.of_rounds(rounds, headline=result)
        stats = fields.stats()
        if stats is not None:
            # as pytest names the cell in the shards that wrote their JSON (compare --between
            # matches runs' cells by it), with the statistics pytest-benchmark would have
            # written: its Stats of the rounds
            fields.checks_failed = checks
            record: Entry | UnrecordedCell = Entry.of_cell(
                fields, name=f"test_cold_start[{cid}]", params=params,
                fullname=f"benchmarks/test_cold_start.py::test_cold_start[{cid}]")
            record.timed(stats)
            recorded = True
        else:
            record = UnrecordedCell.of(result, checks)
            recorded = False
        for r in rounds:
            s, vv = _versions_of(r.model_dump())
            schema |= s
            vllm |= vv
        by_cell[cid] = ShardCell(cid, record, recorded, info, str(path), written, False,
                                 commit or None)
    if not by_cell:
        print(f"analysis.merge: {path}: no cell in this cells log", file=sys.stderr)
    joint = joint_selection(fingerprints)
    if len(matrices) > 1 or (fingerprints and joint is None):
        what = ", ".join([*sorted(matrices), *(f"{f.get('count')} cells "
                                                f"{str(f.get('sha256'))[:12]}"
                                                for f in fingerprints)])
        raise MergeError(f"{path}: lines of different matrices ({what}): a cells log of "
                         "several runs; merge the lines of one")
    if len(fingerprints) > 1:
        print(f"analysis.merge: {path}: lines of different selections of one matrix (a "
              f"re-run with -k or axis options): its cells are counted against the whole "
              f"matrix", file=sys.stderr)
    # A log written before schema 3 does not say the --rounds it ran with (a cell stopped
    # early has fewer rounds than asked): merge judges it by its cells' rounds.
    return Shard(path, "cells-log", schema, vllm, None, matrices.pop() if matrices else None,
                 host, list(by_cell.values()), None,
                 joint, run_rounds)


def read_shard(path: Path, program: str = "analysis.merge") -> Shard:
    """A shard's document, or its cells log (``CELLS_LOG_SUFFIX``), read and checked; what
    is left out is said in lines that start with ``program``."""
    if path.suffix == CELLS_LOG_SUFFIX:
        return _read_cells_log(path, program)
    return _read_document(path)

