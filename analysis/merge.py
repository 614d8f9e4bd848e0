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
from pathlib import Path
from typing import Any

from analysis.dataset import group_machines, info_identity
from analysis.shards import CELLS_LOG_SUFFIX, raw_schema_versions, read_shard
from document import RunDocument, read_run
from document.merging import MergeError, ShardCell

# Reading a shard is analysis.shards'; the checks that make shards one run are the
# document's (RunDocument.merged, document.merging).
__all__ = ["count_machines", "merge", "missing_cells"]


def _identity(cell: ShardCell) -> dict[str, Any]:
    platform = cell.fields().platform
    return info_identity(cell.machine_info, [platform] if platform else [])


def count_machines(cells: list[ShardCell]) -> int:
    """How many machines ``cells`` ran on (``analysis.dataset.group_machines``: identical
    nodes are one)."""
    return len(group_machines([_identity(c) for c in cells]))


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
    return RunDocument.merged(shards, prefer_newest=prefer_newest,
                              allow_mixed_versions=allow_mixed_versions,
                              allow_mixed_commits=allow_mixed_commits,
                              count_machines=count_machines, program=program,
                              say=lambda line: print(line, file=sys.stderr))


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


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("analysis.merge"))
