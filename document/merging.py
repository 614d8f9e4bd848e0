"""A run merged from shards, with the checks that make it one run: what every shard of one
run must share (schema version, vLLM release, ``--rounds``, matrix, commit) and one result per
cell. ``RunDocument.merged`` is the way in; reading a shard from its file (a document or a
cells log) is ``analysis.shards``', and ``analysis.merge`` is the program (its docstring says
every refusal).

The checks are the model's, as pyperf's ``Benchmark.add_run`` refuses a run of another
benchmark: a merge that passes them is one run, whoever calls it. What is not the document's
to know is handed in: how many machines the cells ran on (``count_machines``: the machine
identity is the analysis' rule) and where notes go (``say``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from document.boot_result import SCHEMA_VERSION, SchemaError
from document.models import CellInfo, Entry, RunMeta, UnrecordedCell, boot_of

__all__ = ["MergeError", "Shard", "ShardCell", "joint_selection", "merge_shards"]


class MergeError(SchemaError):
    """Inputs that cannot be merged into one run (bad input: one line, exit 2)."""


@dataclass
class ShardCell:
    """One cell of a shard, as its document or its cells log holds it."""

    cell: str
    record: Entry | UnrecordedCell  # a benchmarks entry, or an unrecorded cell
    recorded: bool  # True: a benchmarks entry
    machine_info: dict[str, Any]
    source: str
    written_at: float
    from_json: bool
    commit_info: dict[str, Any] | None = None  # None: the input does not say

    def fields(self) -> CellInfo | UnrecordedCell:
        """The cell's result, typed: its entry's ``extra_info``, or its unrecorded record."""
        return self.record.extra_info if isinstance(self.record, Entry) else self.record

    def n_rounds(self) -> int:
        fields = self.fields()
        return len(fields.rounds) if isinstance(fields, CellInfo) and fields.rounds else 1

    def same_result(self) -> str:
        """The cell's result as canonical JSON: its headline round, every round, its checks."""
        fields = self.fields()
        headline = boot_of(fields)
        rounds = (fields.rounds if isinstance(fields, CellInfo) and fields.rounds
                  else [headline])
        return json.dumps({
            "result": headline.model_dump(mode="json"),
            "rounds": [r.model_dump(mode="json") for r in rounds],
            "checks_failed": fields.checks_failed}, sort_keys=True)


@dataclass
class Shard:
    """One input of a merge: its cells and what the merge checks across inputs."""

    path: Path
    kind: str  # "json" or "cells-log"
    schema_versions: set[int]
    vllm_versions: set[str]
    rounds: int | None
    matrix: str | None
    host: str | None
    cells: list[ShardCell]
    doc: Any = None  # the shard's document.run.RunDocument; None for a cells log
    matrix_cells: dict[str, Any] | None = None  # {"count", "sha256"}: which matrix (schema 3)
    run_rounds: set[int] | None = None  # the --rounds its cells log's lines say (schema 3)


def joint_selection(digests: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``matrix_cells`` of documents (or cells-log lines) merged into one run, or None
    where they are of different matrices.

    Of one selection: that selection (and the matrix's digest, where every one records the
    same; a document older than that digest says nothing of it). Of one matrix's cells but
    different selections (runs narrowed by -k or axis options, a cell re-run into a cells
    log): the matrix's digest alone, so that ``coldstart check`` expects every cell of the
    matrix rather than the cells any one of them selected."""
    if not digests:
        return None
    selections = {(d.get("count"), d.get("sha256")) for d in digests}
    wholes = [d.get("matrix") for d in digests]
    said = [w for w in wholes if w is not None]
    if any(w != said[0] for w in said):
        return None
    if len(selections) == 1:
        (count, sha), = selections
        return {"count": count, "sha256": sha} | (
            {"matrix": said[0]} if said and len(said) == len(wholes) else {})
    return {"matrix": said[0]} if said and len(said) == len(wholes) else None


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


def _check_matrices(shards: list[Shard], say: Callable[[str], None]
                    ) -> dict[str, Any] | None:
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
        say("analysis.merge: the shards selected different cells of one matrix (runs "
            "narrowed by -k or axis options): the merged run is counted against the whole "
            "matrix")
    if any(not s.matrix_cells for s in shards) and len(named) > 1:
        where = "; ".join(f"{s.path}: {m}" for m, s in named.items())
        raise MergeError(f"shards of different matrices ({where}): a stale shard of another "
                         "run? merge the shards of one run")
    return joint


def merge_shards(run: type, shards: list[Shard], *, prefer_newest: bool = False,
                 allow_mixed_versions: bool = False, allow_mixed_commits: bool = False,
                 count_machines: Callable[[list[ShardCell]], int],
                 say: Callable[[str], None], program: str = "analysis.merge") -> Any:
    """One ``run`` (``document.run.RunDocument``, whose ``merged`` this is) of ``shards``."""
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
    fingerprint = _check_matrices(shards, say)
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
        say(f"{program}: commit not checked for {', '.join(unknown)}: it says none (a shard "
              "written before commits were recorded?)")
    if len(commits) > 1 and not allow_mixed_commits:
        where = "; ".join(f"{commits_at[k]}: {k[0]}{' (dirty)' if k[1] else ''}"
                          for k in commits)
        raise MergeError(f"shards of different commits ({where}): one run measures one "
                         "checkout; --allow-mixed-commits to merge anyway (each cell keeps "
                         "its commit)")
    machines = count_machines(cells)
    docs = [s.doc for s in shards if s.doc is not None]
    infos = [c.machine_info for c in cells] or [s.doc.machine_info for s in shards
                                                if s.doc is not None]
    if machines <= 1:
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
    merged = run(
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
            machines=machines),
        # pytest-benchmark's, read by its own tools
        **({"version": versions[0]} if versions else {}))
    return merged.named()
