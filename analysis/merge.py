"""Merge the shards of one matrix, run on several machines, into one result document.

    python -m analysis.merge RUN.json... [SHARD.json.cells.jsonl...] -o merged.json
        [--prefer newest] [--allow-mixed-versions] [--allow-mixed-commits]

Each input is a shard's ``--benchmark-json`` document or its cells log (``*.cells.jsonl``,
one line per cell as it ended): a shard whose JSON was never written (a killed pod, a
cancelled job) still gives the cells it finished. The merged document reads as one run does
(``benchmarks.check``, ``analysis.fit``, ``analysis.compare``, ``--resume``), with every cell
once, and every cell keeps the ``machine_info`` of the machine it ran on: ``analysis.fit``
and ``analysis.compare`` judge machines per cell, so shards of identical nodes are one
machine and shards of different GPUs are never pooled silently.

Refused (one line, exit 2): a cell present twice with different results (``--prefer newest``
keeps the one written last: a document's ``coldstart.written_at``, a cells log's
modification time); inputs of different schema versions; different vLLM versions (unless
``--allow-mixed-versions``); different ``--rounds`` (a cell's rounds are part of its result,
as ``--resume`` has it), and a cell with more rounds than its run's ``--rounds`` (rounds only
a cells log holds, of another run); shards of different matrices (``coldstart.matrix_cells``,
else the matrix's name: a stale shard of another run); shards of different commits (unless
``--allow-mixed-commits``: then each cell keeps its commit in ``extra_info.commit_info``).

A cells log's line that a killed process cut short, and that a retry then appended to (its
complete record on the same physical line), gives the retry's record; a cut last line is left
out with a note; any other line that is not a record is refused, naming the file and line.

Where a shard's JSON and its cells log both hold a cell with the same result, it is one cell,
the JSON's entry kept (it has pytest-benchmark's statistics). Within one cells log a later
line for a cell replaces an earlier one: a shard re-run into the same log.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from analysis._cli import ArgumentParser, InputError, run_cli
from analysis.dataset import MERGED_KEY, cell_identities, group_machines
from harness.schema import (
    DOCUMENT_KEY,
    SCHEMA_VERSION,
    BootResult,
    SchemaError,
    STATS_TIMER,
    benchmark_entry,
    cell_id,
    cell_stats,
    read_json,
    read_results,
    name_runs,
    validation_summary,
    write_document,
)

__all__ = ["MergeError", "merge", "main"]

# The benchmark matrix's axes (benchmarks.matrix.AXES; analysis does not import benchmarks):
# they name a cell whose result came without its params.
CELL_AXES: tuple[str, ...] = ("model", "loader", "compile_cache", "page_cache", "entrypoint")
CELLS_LOG_SUFFIX = ".jsonl"


class MergeError(SchemaError):
    """Inputs that cannot be merged into one run (bad input: one line, exit 2)."""


@dataclass
class _Cell:
    cell: str
    record: dict[str, Any]  # a benchmarks entry, or an unrecorded result (with checks_failed)
    recorded: bool  # True: a benchmarks entry
    machine_info: dict[str, Any]
    source: str
    written_at: float
    from_json: bool
    commit_info: dict[str, Any] | None = None  # None: the input does not say

    def n_rounds(self) -> int:
        fields = self.record["extra_info"] if self.recorded else self.record
        return len(fields.get("rounds") or [fields])

    def same_result(self) -> str:
        """The cell's result as canonical JSON: its headline round, every round, its checks."""
        fields = self.record["extra_info"] if self.recorded else self.record
        headline = BootResult.model_validate(
            {k: v for k, v in fields.items() if k in BootResult.model_fields})
        rounds = fields.get("rounds") or [fields]
        return json.dumps({
            "result": headline.model_dump(mode="json"),
            "rounds": [BootResult.model_validate(
                {k: v for k, v in r.items() if k in BootResult.model_fields}
            ).model_dump(mode="json") for r in rounds],
            "checks_failed": fields.get("checks_failed") or []}, sort_keys=True)


@dataclass
class _Shard:
    path: Path
    kind: str  # "json" or "cells-log"
    schema_versions: set[int]
    vllm_versions: set[str]
    rounds: int | None
    matrix: str | None
    host: str | None
    cells: list[_Cell]
    doc: dict[str, Any] | None = None
    matrix_cells: dict[str, Any] | None = None  # {"count", "sha256"}: which matrix (schema 3)
    run_rounds: set[int] | None = None  # the --rounds its cells log's lines say (schema 3)


def _epoch(stamp: Any) -> float | None:
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


def _raw_versions(path: Path) -> set[Any]:
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


def _read_document(path: Path) -> _Shard:
    read_results(path, all_rounds=True)  # refuses what is no result document, in its words
    doc = read_json(path)
    if not isinstance(doc, dict) or "benchmarks" not in doc:
        raise MergeError(f"{path}: not the JSON of `pytest benchmarks/ --benchmark-json` "
                         "(a single result or a list of them)")
    meta = doc.get(DOCUMENT_KEY) or {}
    info = doc.get("machine_info") if isinstance(doc.get("machine_info"), dict) else {}
    written = (_epoch(meta.get("written_at")) or _epoch(doc.get("datetime"))
               or path.stat().st_mtime)
    schema = {meta.get("schema_version", SCHEMA_VERSION)}
    vllm = {v} if (v := (info.get(DOCUMENT_KEY) or {}).get("vllm")) else set()
    commit = doc.get("commit_info") if isinstance(doc.get("commit_info"), dict) else None
    commit = commit or None
    cells = []
    for entry in doc["benchmarks"]:
        params = entry.get("params")
        cid = cell_id(params) if isinstance(params, dict) and params else str(entry.get("name"))
        # An input that is itself a merge keeps each cell's own machine.
        cell_info = entry.get("machine_info", info)
        clean = {k: v for k, v in entry.items() if k != "machine_info"}
        s, vv = _versions_of(entry["extra_info"])
        schema |= s
        vllm |= vv
        # An input that is itself a merge of commits keeps each cell's own.
        cells.append(_Cell(cid, clean, True, cell_info, str(path), written, True,
                           entry["extra_info"].get("commit_info") or commit))
    for result in meta.get("unrecorded", []):
        cid = cell_id({**{a: result.get(a) for a in CELL_AXES}, **(result.get("axes") or {})})
        cell_info = result.get("machine_info", info)
        clean = {k: v for k, v in result.items() if k != "machine_info"}
        s, vv = _versions_of(result)
        schema |= s
        vllm |= vv
        cells.append(_Cell(cid, clean, False, cell_info, str(path), written, True,
                           result.get("commit_info") or commit))
    host = meta.get("host") or info.get("node")
    return _Shard(path, "json", schema, vllm, meta.get("rounds"), meta.get("matrix"), host,
                  cells, doc,
                  meta["matrix_cells"] if isinstance(meta.get("matrix_cells"), dict) else None)


def _log_records(path: Path, *, quiet: bool = False) -> list[tuple[int, Any]]:
    """The records of a cells log, ``[(line number, record)]``.

    A process killed while appending leaves its line cut, without a newline; a retry then
    appends its own record right after it, on the same physical line. Such a line gives the
    retry's record (the cut one is lost, said on stderr). A cut last line is left out (said);
    any other line that is not JSON is refused, naming the file and the line.
    """
    if not path.is_file():
        raise MergeError(f"{path}: no such file")
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
                print(f"analysis.merge: {path}:{n}: a cut record left out, the record "
                      "appended after it (a retry) kept", file=sys.stderr)
            out.append((n, retry))
        elif n == len(lines):  # the process died while writing it: that cell is lost
            if not quiet:
                print(f"analysis.merge: {path}:{n}: a cut last line left out ({error})",
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


def _read_cells_log(path: Path) -> _Shard:
    records = _log_records(path)
    written = path.stat().st_mtime
    by_cell: dict[str, _Cell] = {}
    schema: set[int] = set()
    vllm: set[str] = set()
    matrices: set[str] = set()
    fingerprints: list[dict[str, Any]] = []
    run_rounds: set[int] = set()
    host = None
    for n, entry in records:
        if not isinstance(entry, dict) or not isinstance(entry.get("result"), dict):
            raise MergeError(f"{path}:{n}: no 'result' object: not a cells log of "
                             "`pytest benchmarks/`")
        try:
            result = BootResult.model_validate(
                {k: v for k, v in entry["result"].items() if k in BootResult.model_fields})
            rounds = [BootResult.model_validate(
                {k: v for k, v in r.items() if k in BootResult.model_fields})
                for r in entry.get("rounds") or [entry["result"]]]
        except Exception as exc:
            raise MergeError(f"{path}:{n}: not a BootResult: {validation_summary(exc)}") \
                from exc
        params = entry.get("params") if isinstance(entry.get("params"), dict) else \
            {**{a: getattr(result, a) for a in CELL_AXES}, **result.axes}
        cid = entry.get("cell") or cell_id(params)
        checks = entry.get("checks_failed") or []
        info = entry.get("machine_info") if isinstance(entry.get("machine_info"), dict) else {}
        host = host or (info.get(DOCUMENT_KEY) or {}).get("host")
        if isinstance(entry.get("matrix"), str):
            matrices.add(entry["matrix"])
        if isinstance(entry.get("matrix_cells"), dict) \
                and entry["matrix_cells"] not in fingerprints:
            fingerprints.append(entry["matrix_cells"])
        if isinstance(entry.get("run_rounds"), int):
            run_rounds.add(entry["run_rounds"])
        commit = entry.get("commit_info") if isinstance(entry.get("commit_info"), dict) \
            else None
        record = benchmark_entry(result, name=f"test_cold_start[{cid}]", params=params,
                                 rounds=rounds)
        # as pytest names the cell in the shards that wrote their JSON (compare --between
        # matches runs' cells by it)
        record["fullname"] = f"benchmarks/test_cold_start.py::test_cold_start[{cid}]"
        stats = cell_stats(record["extra_info"])
        if stats is not None:
            # the statistics pytest-benchmark would have written: its Stats of the rounds
            record["stats"] = stats
            record["options"] = {"timer": STATS_TIMER}
            record["extra_info"]["checks_failed"] = checks
            recorded = True
        else:
            record = {**result.model_dump(mode="json"), "checks_failed": checks}
            recorded = False
        for r in rounds:
            s, vv = _versions_of(r.model_dump())
            schema |= s
            vllm |= vv
        by_cell[cid] = _Cell(cid, record, recorded, info, str(path), written, False,
                             commit or None)
    if not by_cell:
        print(f"analysis.merge: {path}: no cell in this cells log", file=sys.stderr)
    if len(matrices) > 1 or len(fingerprints) > 1:
        what = ", ".join([*sorted(matrices), *(f"{f.get('count')} cells "
                                                f"{str(f.get('sha256'))[:12]}"
                                                for f in fingerprints)])
        raise MergeError(f"{path}: lines of different matrices ({what}): a cells log of "
                         "several runs; merge the lines of one")
    # A log written before schema 3 does not say the --rounds it ran with (a cell stopped
    # early has fewer rounds than asked): merge judges it by its cells' rounds.
    return _Shard(path, "cells-log", schema, vllm, None, matrices.pop() if matrices else None,
                  host, list(by_cell.values()), None,
                  fingerprints[0] if fingerprints else None, run_rounds)


def _read(path: Path) -> _Shard:
    return _read_cells_log(path) if path.suffix == CELLS_LOG_SUFFIX else _read_document(path)


def _identity(cell: _Cell) -> dict[str, Any]:
    fields = cell.record["extra_info"] if cell.recorded else cell.record
    return cell_identities({"coldstart": {MERGED_KEY: []}, "benchmarks": [
        {"extra_info": fields, "machine_info": cell.machine_info}]})[0][1]


def _common(dicts: list[dict[str, Any]]) -> dict[str, Any]:
    """What every dict says alike (nested dicts compared key by key)."""
    if not dicts:
        return {}
    out = {}
    for key, value in dicts[0].items():
        others = [d.get(key) for d in dicts[1:]]
        if isinstance(value, dict) and all(isinstance(o, dict) for o in others):
            inner = _common([value, *others])
            if inner:
                out[key] = inner
        elif all(o == value for o in others) and all(key in d for d in dicts[1:]):
            out[key] = value
    return out


def _agreed(values: list[Any]) -> Any:
    return values[0] if values and all(v == values[0] for v in values) else {}


def _commit_key(commit: dict[str, Any]) -> tuple[Any, Any]:
    return commit.get("id"), bool(commit.get("dirty"))


def _check_matrices(shards: list[_Shard]) -> dict[str, Any] | None:
    """Refuse shards of different matrices; the run's ``matrix_cells`` where known.

    The digest of the selected cells says it where every shard has one (a matrix file's path
    may differ between machines); else the matrix's name does."""
    digests = {json.dumps(s.matrix_cells, sort_keys=True): s for s in shards if s.matrix_cells}
    named = {s.matrix: s for s in shards if s.matrix}
    if len(digests) > 1:
        where = "; ".join(f"{s.path}: {s.matrix or '?'}, {s.matrix_cells.get('count')} cells "
                          f"{str(s.matrix_cells.get('sha256'))[:12]}" for s in digests.values())
        raise MergeError(f"shards of different matrices ({where}): a stale shard of another "
                         "run? merge the shards of one run")
    if any(not s.matrix_cells for s in shards) and len(named) > 1:
        where = "; ".join(f"{s.path}: {m}" for m, s in named.items())
        raise MergeError(f"shards of different matrices ({where}): a stale shard of another "
                         "run? merge the shards of one run")
    return json.loads(next(iter(digests))) if digests else None


def merge(paths: list[Path], *, prefer_newest: bool = False,
          allow_mixed_versions: bool = False,
          allow_mixed_commits: bool = False) -> dict[str, Any]:
    """One result document from the shards at ``paths`` (see the module's doc)."""
    if not paths:
        raise MergeError("no input: give the shards' JSON documents and/or cells logs")
    raw = {p: _raw_versions(p) for p in paths}
    claimed = {v for vs in raw.values() for v in vs}
    if len(claimed) > 1:
        where = ", ".join(f"{p}: {sorted(map(str, vs))}" for p, vs in raw.items() if vs)
        raise MergeError(f"mixed schema versions ({where}): merge runs of one schema version")
    shards = []
    for i, p in enumerate(paths, 1):
        shard = _read(p)
        shards.append(shard)
        print(f"analysis.merge [{i}/{len(paths)}] {p}: {len(shard.cells)} cells "
              f"({shard.kind}{', ' + shard.host if shard.host else ''})")
    schema = {v for s in shards for v in s.schema_versions}
    if len(schema) > 1:
        raise MergeError(f"mixed schema versions {sorted(schema)}: merge runs of one schema "
                         "version")
    vllm = {v for s in shards for v in s.vllm_versions}
    if len(vllm) > 1 and not allow_mixed_versions:
        where = "; ".join(f"{s.path}: {', '.join(sorted(s.vllm_versions))}" for s in shards
                          if s.vllm_versions)
        raise MergeError(f"mixed vLLM versions ({where}): one run measures one release; "
                         "--allow-mixed-versions to merge anyway")
    fingerprint = _check_matrices(shards)
    rounds = {s.rounds for s in shards if s.rounds is not None} | \
        {r for s in shards for r in (s.run_rounds or ())}
    if len(rounds) > 1:
        where = "; ".join(f"{s.path}: {sorted({s.rounds} if s.rounds else s.run_rounds)}"
                          for s in shards if s.rounds or s.run_rounds)
        raise MergeError(f"shards ran with different --rounds ({where}): a cell's "
                         "rounds are part of its result")
    if rounds:
        asked = next(iter(rounds))
        for s in shards:
            for c in s.cells:
                if c.n_rounds() > asked:
                    raise MergeError(
                        f"{s.path}: {c.cell} has {c.n_rounds()} rounds, the run's --rounds is "
                        f"{asked}: rounds of another run (a cells log of a run with more "
                        "rounds?); merge the shards of one run")

    chosen: dict[str, _Cell] = {}
    order: list[str] = []
    for shard in shards:
        for cell in shard.cells:
            have = chosen.get(cell.cell)
            if have is None:
                chosen[cell.cell] = cell
                order.append(cell.cell)
            elif have.same_result() == cell.same_result():
                if cell.from_json and not have.from_json:
                    chosen[cell.cell] = cell  # the entry with pytest-benchmark's statistics
            elif prefer_newest:
                if cell.written_at > have.written_at:
                    chosen[cell.cell] = cell
            else:
                raise MergeError(f"{cell.cell}: in {have.source} and {cell.source} with "
                                 "different results; --prefer newest keeps the one written "
                                 "last")

    cells = [chosen[c] for c in order]
    # The kept cells' commits (a cell in a JSON and its log alike counts once).
    commits: dict[tuple[Any, Any], dict[str, Any]] = {}
    commits_at: dict[tuple[Any, Any], str] = {}
    for c in cells:
        if c.commit_info:
            commits.setdefault(_commit_key(c.commit_info), c.commit_info)
            commits_at.setdefault(_commit_key(c.commit_info), c.source)
    if len(commits) > 1 and not allow_mixed_commits:
        where = "; ".join(f"{commits_at[k]}: {k[0]}{' (dirty)' if k[1] else ''}"
                          for k in commits)
        raise MergeError(f"shards of different commits ({where}): one run measures one "
                         "checkout; --allow-mixed-commits to merge anyway (each cell keeps "
                         "its commit)")
    machines = group_machines([_identity(c) for c in cells])
    docs = [s.doc for s in shards if s.doc is not None]
    infos = [c.machine_info for c in cells] or [s.doc.get("machine_info") or {} for s in shards
                                                if s.doc is not None]
    if len(machines) <= 1:
        # One machine (or identical nodes): the richest description of it stands for all,
        # so a reader of one run's documents reads this one alike.
        top = max(infos, key=lambda i: len(json.dumps(i, default=str))) if infos else {}
    else:
        # Only what every machine shares; each cell says the rest of its own.
        top = _common(infos)
    matrices = {s.matrix for s in shards if s.matrix}
    mixed_commits = len(commits) > 1
    entries, unrecorded = [], []
    for c in cells:
        if c.recorded:
            entry = {**c.record, "machine_info": c.machine_info}
            if mixed_commits and c.commit_info:
                entry["extra_info"] = {**entry["extra_info"], "commit_info": c.commit_info}
            entries.append(entry)
        else:
            record = {**c.record, "machine_info": c.machine_info}
            if mixed_commits and c.commit_info:
                record["commit_info"] = c.commit_info
            unrecorded.append(record)
    merged: dict[str, Any] = {
        "machine_info": top,
        # One commit: it. Several (allowed): what they share; each cell says its own. No
        # cell: the documents' own, where they agree.
        "commit_info": _common(list(commits.values())) if commits else _agreed(
            [d.get("commit_info") for d in docs if d.get("commit_info")]),
        "benchmarks": entries,
        "datetime": datetime.now().astimezone().isoformat(),
        DOCUMENT_KEY: {
            "schema_version": schema.pop() if schema else SCHEMA_VERSION,
            "matrix": matrices.pop() if len(matrices) == 1 else None,
            "matrix_cells": fingerprint,
            "rounds": rounds.pop() if rounds else None,
            "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "unrecorded": unrecorded,
            MERGED_KEY: [{"path": str(s.path), "kind": s.kind, "host": s.host,
                          "cells": len(s.cells)} for s in shards],
            "machines": len(machines),
        },
    }
    versions = [d.get("version") for d in docs if d.get("version")]
    if versions:
        merged["version"] = versions[0]  # pytest-benchmark's, read by its own tools
    return name_runs(merged)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m analysis.merge",
                            description="Merge the shards of one matrix into one run.")
    parser.add_argument("inputs", nargs="+", type=Path,
                        help="shard documents (--benchmark-json) and cells logs (*.cells.jsonl)")
    parser.add_argument("-o", "--out", required=True, type=Path, help="the merged document")
    parser.add_argument("--prefer", choices=["newest"],
                        help="a cell found with different results: keep the one written last")
    parser.add_argument("--allow-mixed-versions", action="store_true",
                        help="merge shards of different vLLM versions")
    parser.add_argument("--allow-mixed-commits", action="store_true",
                        help="merge shards of different commits (each cell keeps its "
                             "commit_info in extra_info)")
    args = parser.parse_args(argv)
    if args.out.exists() and args.out.is_dir():
        raise InputError(f"-o {args.out}: is a folder")
    paths = list(dict.fromkeys(args.inputs))  # a file named twice is read once
    doc = merge(paths, prefer_newest=args.prefer == "newest",
                allow_mixed_versions=args.allow_mixed_versions,
                allow_mixed_commits=args.allow_mixed_commits)
    write_document(doc, args.out)
    meta = doc[DOCUMENT_KEY]
    print(f"analysis.merge: {len(doc['benchmarks']) + len(meta['unrecorded'])} cells "
          f"({len(doc['benchmarks'])} recorded, {len(meta['unrecorded'])} unrecorded) from "
          f"{len(paths)} inputs, {meta['machines']} machine(s) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("analysis.merge", main))
