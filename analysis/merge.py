"""Merge the shards of one matrix, run on several machines, into one result document.

    coldstart merge RUN.json... [SHARD.json.cells.jsonl...] -o merged.json
        [--matrix M [axis options]] [--allow-missing]
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
else the matrix's name: a stale shard of another run; shards that selected different cells of
one matrix, runs narrowed by -k, merge and are counted against the whole matrix, said on
stderr); shards of different commits (unless
``--allow-mixed-commits``: then each cell keeps its commit in ``extra_info.commit_info``).
A cell takes its commit from its own record, else from its shard's document or cells log; a
shard whose commit nothing says is named on stderr (not checked), never passed as agreeing.

A shard's JSON that is not JSON (a pod killed while writing it) is read from its own cells log
instead (``JSON.cells.jsonl`` beside it), said on stderr; without that log it is refused.

The merged cells are counted against the matrix: ``--matrix`` (and the axis options
``benchmarks.check`` takes) names the cells expected, else the shards' ``matrix_cells`` says
how many. Fewer merged than expected is said in one line naming the missing cells (or their
number), and the merge exits 1 with ``merged.json`` written, unless ``--allow-missing``. Where
neither says the matrix's cells, that they were not counted is said.

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
from datetime import datetime
from pathlib import Path
from typing import Any

from analysis.dataset import group_machines, info_identity
from analysis.shards import (
    CELLS_LOG_SUFFIX,
    MergeError,
    Shard,
    ShardCell,
    joint_selection,
    raw_schema_versions,
    read_shard,
)
from harness.document import Entry, RunDocument, RunMeta, UnrecordedCell, read_run
from harness.schema import SCHEMA_VERSION

# Reading a shard is analysis.shards'.
__all__ = ["merge", "missing_cells"]


def _identity(cell: ShardCell) -> dict[str, Any]:
    platform = cell.fields().platform
    return info_identity(cell.machine_info, [platform] if platform else [])


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


def _check_matrices(shards: list[Shard]) -> dict[str, Any] | None:
    """Refuse shards of different matrices; the run's ``matrix_cells`` where known.

    The digests say it where every shard has one (a matrix file's path may differ between
    machines); else the matrix's name does. Shards of one matrix that selected different
    cells of it (runs narrowed by -k) merge, counted against the whole matrix
    (``joint_selection``)."""
    digests = {json.dumps(s.matrix_cells, sort_keys=True): s for s in shards if s.matrix_cells}
    named = {s.matrix: s for s in shards if s.matrix}
    joint = joint_selection([s.matrix_cells for s in digests.values()])
    if len(digests) > 1 and joint is None:
        where = "; ".join(f"{s.path}: {s.matrix or '?'}, {s.matrix_cells.get('count')} cells "
                          f"{str(s.matrix_cells.get('sha256'))[:12]}" for s in digests.values())
        raise MergeError(f"shards of different matrices ({where}): a stale shard of another "
                         "run? merge the shards of one run")
    if len(digests) > 1 and joint is not None and "sha256" not in joint:
        print("analysis.merge: the shards selected different cells of one matrix (runs "
              "narrowed by -k or axis options): the merged run is counted against the whole "
              "matrix", file=sys.stderr)
    if any(not s.matrix_cells for s in shards) and len(named) > 1:
        where = "; ".join(f"{s.path}: {m}" for m, s in named.items())
        raise MergeError(f"shards of different matrices ({where}): a stale shard of another "
                         "run? merge the shards of one run")
    return joint


def merge(paths: list[Path], *, prefer_newest: bool = False,
          allow_mixed_versions: bool = False,
          allow_mixed_commits: bool = False,
          program: str = "analysis.merge") -> RunDocument:
    """One result document from the shards at ``paths`` (see the module's doc); progress
    lines start with ``program``."""
    if not paths:
        raise MergeError("no input: give the shards' JSON documents and/or cells logs")
    paths = _whole_inputs(paths, program)
    raw = {p: raw_schema_versions(p) for p in paths}
    claimed = {v for vs in raw.values() for v in vs}
    if len(claimed) > 1:
        where = ", ".join(f"{p}: {sorted(map(str, vs))}" for p, vs in raw.items() if vs)
        raise MergeError(f"mixed schema versions ({where}): merge runs of one schema version")
    shards = []
    for i, p in enumerate(paths, 1):
        shard = read_shard(p, program)
        shards.append(shard)
        print(f"{program} [{i}/{len(paths)}] {p}: {len(shard.cells)} cells "
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

    chosen: dict[str, ShardCell] = {}
    order: list[str] = []
    for shard in shards:
        for cell in shard.cells:
            have = chosen.get(cell.cell)
            if have is None:
                chosen[cell.cell] = cell
                order.append(cell.cell)
            elif have.same_result() == cell.same_result():
                # One cell: its commit is whichever of the two says one (a document written
                # with no cell measured says none; its cells log's lines do).
                commit = have.commit_info or cell.commit_info
                if cell.from_json and not have.from_json:
                    chosen[cell.cell] = cell  # the entry with pytest-benchmark's statistics
                chosen[cell.cell].commit_info = commit
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
    unknown = sorted({c.source for c in cells if not c.commit_info})
    if commits and unknown:
        print(f"{program}: commit not checked for {', '.join(unknown)}: it says none (a shard "
              "written before commits were recorded?)", file=sys.stderr)
    if len(commits) > 1 and not allow_mixed_commits:
        where = "; ".join(f"{commits_at[k]}: {k[0]}{' (dirty)' if k[1] else ''}"
                          for k in commits)
        raise MergeError(f"shards of different commits ({where}): one run measures one "
                         "checkout; --allow-mixed-commits to merge anyway (each cell keeps "
                         "its commit)")
    machines = group_machines([_identity(c) for c in cells])
    docs = [s.doc for s in shards if s.doc is not None]
    infos = [c.machine_info for c in cells] or [s.doc.machine_info for s in shards
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
    commit_of = {id(c): c.commit_info if mixed_commits else None for c in cells}
    entries = [c.record.on_machine(c.machine_info, commit_of[id(c)]) for c in cells
               if isinstance(c.record, Entry)]
    unrecorded = [c.record.on_machine(c.machine_info, commit_of[id(c)]) for c in cells
                  if isinstance(c.record, UnrecordedCell)]
    versions = [d.version for d in docs if d.version]
    merged = RunDocument(
        machine_info=top,
        # One commit: it. Several (allowed): what they share; each cell says its own. No
        # cell: the documents' own, where they agree.
        commit_info=_common(list(commits.values())) if commits else _agreed(
            [d.commit_info for d in docs if d.commit_info]),
        benchmarks=entries,
        datetime=datetime.now().astimezone().isoformat(),
        coldstart=RunMeta(
            schema_version=schema.pop() if schema else SCHEMA_VERSION,
            matrix=matrices.pop() if len(matrices) == 1 else None,
            matrix_cells=fingerprint,
            rounds=rounds.pop() if rounds else None,
            written_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            unrecorded=unrecorded,
            merged_from=[{"path": str(s.path), "kind": s.kind, "host": s.host,
                          "cells": len(s.cells)} for s in shards],
            machines=len(machines)),
        # pytest-benchmark's, read by its own tools
        **({"version": versions[0]} if versions else {}))
    return merged.named()


def _whole_inputs(paths: list[Path], program: str) -> list[Path]:
    """``paths`` with a shard JSON that is not JSON (cut by a killed pod) replaced by its own
    cells log, which holds every cell the shard finished; refused without one."""
    out: list[Path] = []
    for path in paths:
        if path.suffix != CELLS_LOG_SUFFIX and path.is_file():
            try:
                json.loads(path.read_bytes())
            except (ValueError, UnicodeDecodeError) as exc:
                log = path.with_name(path.name + ".cells" + CELLS_LOG_SUFFIX)
                if not log.is_file():
                    raise MergeError(f"{path}: not JSON ({exc}), and no cells log beside it "
                                     f"({log}) to read its cells from") from exc
                print(f"{program}: {path}: not JSON ({exc}): a shard cut while writing it; "
                      f"its cells are read from {log}", file=sys.stderr)
                path = log
        if path not in out:
            out.append(path)
    return out


def missing_cells(merged: Path, expected: list[str] | None) -> tuple[int, list[str]]:
    """How many cells the merged run at ``merged`` lacks, and which where ``expected`` (the
    matrix's cell ids) names them; else counted from its ``matrix_cells``, unnamed. None
    where nothing says how many cells the matrix has."""
    doc = read_run(merged, MergeError)
    have = {c.id for c in doc.cells()}
    if expected is not None:
        gone = [c for c in expected if c not in have]
        return len(gone), gone
    digest = doc.coldstart.matrix_cells or {}
    # shards of different selections of one matrix are counted against the whole of it
    count = digest.get("count", (digest.get("matrix") or {}).get("count"))
    return (max(count - len(have), 0), []) if isinstance(count, int) else (-1, [])
