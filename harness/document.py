"""The result document, typed: the one reader (``read_run``, ``read_cells``, ``read_results``),
the one writer (``write_run``) and the one definition of a cell (its id, its axes, its headline
round).

A result document is pytest-benchmark's JSON (``pytest benchmarks/ --benchmark-json``, and
what gate, history, merge, compact and ingest write): each measured cell is an ``Entry`` of
``benchmarks`` whose ``extra_info`` (``CellInfo``) holds the BootResult fields of its headline
round at the top and every round under ``rounds``; cells pytest-benchmark leaves out (errors,
skips, cells with no measured round) are ``UnrecordedCell``s under ``coldstart.unrecorded``,
so a failure is never lost. The models allow keys they do not name (pytest-benchmark's own,
or a later writer's) and keep them: a document read and written again is the same document.
``docs/format.md`` describes the format; ``coldstart schema run`` prints its JSON Schema.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.schema import (
    DOCUMENT_KEY,
    SCHEMA_VERSION,
    BootResult,
    SchemaError,
    cell_id,
    read_json,
    validation_summary,
)
from harness.secrets import environment_secrets, scrub

__all__ = ["AXIS_OPTIONS", "CELL_AXES", "CellInfo", "CellsLogLine", "cells_log_line", "Entry", "RunCell",
           "RunDocument", "RunMeta", "UnrecordedCell", "boot_of", "cell_axes", "cell_params",
           "check_version", "headline_round", "recorded_facts",
           "read_cells", "read_results", "read_run", "run_document", "write_run"]

# The five axes every cell has, in the order its id names them; a matrix file's own axes
# (engine arguments, environment variables) follow them (``BootResult.axes``).
CELL_AXES: tuple[str, ...] = ("model", "loader", "compile_cache", "page_cache", "entrypoint")
# The command-line option that narrows each axis (pytest benchmarks/, check, gate), so that
# a verdict can name the gate command that would decide it (analysis.verdict).
AXIS_OPTIONS: dict[str, str] = {"model": "models", "loader": "loaders",
                                "compile_cache": "compile-caches", "page_cache": "page-caches",
                                "entrypoint": "entrypoints"}


class CellInfo(BootResult):
    """A measured cell's ``extra_info``: its headline round's fields, and beside them every
    round, the checks the cell failed and the storage floor measured for it."""

    model_config = ConfigDict(extra="allow")

    rounds: list[BootResult] = Field(default_factory=list)
    checks_failed: list[str] = Field(default_factory=list)
    # benchmarks/test_cold_start.py: the storage's own read speed under the weights
    # (harness.pagecache.sequential_read_gbps: {"bytes", "gbps", "gbps_each"}), None where
    # it was not measured.
    storage_floor: dict[str, Any] | None = None
    # analysis.merge: the commit of the shard the cell came from, where shards disagree.
    commit_info: dict[str, Any] | None = None


class UnrecordedCell(BootResult):
    """A cell pytest-benchmark left out of ``benchmarks`` (failed, skipped, no measured
    round), with the checks it failed."""

    model_config = ConfigDict(extra="allow")

    checks_failed: list[str] = Field(default_factory=list)
    commit_info: dict[str, Any] | None = None  # as CellInfo's
    machine_info: dict[str, Any] | None = None  # analysis.merge: the shard's machine


class Entry(BaseModel):
    """One ``benchmarks`` entry: pytest-benchmark's fields and our ``extra_info``."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    fullname: str | None = None
    params: dict[str, Any] | None = None
    param: str | None = None
    group: str | None = None
    # pytest-benchmark's Stats over the measured rounds' wall_s (harness.schema.cell_stats).
    stats: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    # The name pytest-benchmark's CSV gives the row: the cell and the run (schema 3).
    fullfunc: str | None = None
    machine_info: dict[str, Any] | None = None  # analysis.merge: the shard's machine
    extra_info: CellInfo


class RunMeta(BaseModel):
    """The document's ``coldstart`` object: what made the run, and the unrecorded cells."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    matrix: str | None = None
    # {"count", "sha256"} of the selected cells' ids: every shard of a run alike (schema 3).
    matrix_cells: dict[str, Any] | None = None
    rounds: int | None = None
    command: str | None = None  # pytest's arguments as given
    written_at: str | None = None
    host: str | None = None
    pid: int | None = None
    release: str | None = None  # gate and history: the release the run is of
    # analysis.merge: the shards a merged document was made of; its cells each carry their
    # machine's machine_info.
    merged_from: list[Any] | None = None
    # gate and history (benchmarks._rounds.merge_side): the release's probe targets it
    # lacks, how the two releases' boots were interleaved, and (gate) which side this is.
    probe_targets_missing: list[str] | None = None
    interleaved: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None
    unrecorded: list[UnrecordedCell] = Field(default_factory=list)


class RunDocument(BaseModel):
    """A whole result document."""

    model_config = ConfigDict(extra="allow")

    machine_info: dict[str, Any] = Field(default_factory=dict)
    commit_info: dict[str, Any] = Field(default_factory=dict)
    # Required, as the reader requires it (run_document): a document without it, {} or
    # another kind (a compare document, a BootResult), is no run, also to the JSON Schema.
    benchmarks: list[Entry]
    datetime: str | None = None
    version: str | None = None  # pytest-benchmark's version
    coldstart: RunMeta = Field(default_factory=RunMeta)

    def cells(self) -> list[RunCell]:
        """Every cell, measured ones (``benchmarks``) first, then the unrecorded ones."""
        out = []
        for entry in self.benchmarks:
            info = entry.extra_info
            head = boot_of(info)
            rounds = list(info.rounds) or [head]
            params = entry.params or {}
            cid = str(entry.param or cell_id(params) or entry.name)
            out.append(RunCell(cid, cell_axes(head, params), head, rounds,
                               list(info.checks_failed), True, entry))
        for u in self.coldstart.unrecorded:
            r = boot_of(u)
            axes = cell_axes(r)
            out.append(RunCell(cell_id(axes), axes, r, [r], list(u.checks_failed), False))
        return out

    def results(self, *, all_rounds: bool = False) -> list[BootResult]:
        """Each cell's headline round (every round with ``all_rounds``), the unrecorded last."""
        out: list[BootResult] = []
        for c in self.cells():
            out.extend(c.rounds if all_rounds and c.recorded else [c.headline])
        return out

    @property
    def machine_facts(self) -> dict[str, Any]:
        """Our machine facts (``machine_info.coldstart``: CPU, GPUs, vLLM, ...)."""
        return recorded_facts(self.machine_info)


def recorded_facts(machine_info: Any) -> dict[str, Any]:
    """Our facts in a ``machine_info`` (a run's, or a merged cell's: its shard's machine):
    ``machine_info.coldstart`` (benchmarks/provenance.py); {} where there are none."""
    facts = machine_info.get(DOCUMENT_KEY) if isinstance(machine_info, dict) else None
    return facts if isinstance(facts, dict) else {}


class CellsLogLine(BaseModel):
    """One line of a run's cells log (``OUT.json.cells.jsonl``): a cell as it ended, written
    at once, so a run killed before pytest-benchmark writes its JSON loses no cell;
    ``analysis.merge`` makes the run from these lines where the JSON is missing."""

    model_config = ConfigDict(extra="allow")

    cell: str | None = None
    params: dict[str, Any] | None = None
    machine_info: dict[str, Any] = Field(default_factory=dict)
    # What analysis.merge checks a log's shard by (schema 3): the matrix, the --rounds
    # asked, the checkout.
    matrix: str | None = None
    matrix_cells: dict[str, Any] | None = None
    run_rounds: int | None = None
    commit_info: dict[str, Any] | None = None
    checks_failed: list[str] = Field(default_factory=list)
    result: BootResult
    rounds: list[BootResult] = Field(default_factory=list)


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


@dataclass
class RunCell:
    """One cell of a run: its id, its axes, its headline (median) round and every round."""

    id: str
    axes: dict[str, str]
    headline: BootResult
    rounds: list[BootResult]
    checks_failed: list[str] = field(default_factory=list)
    recorded: bool = True  # a ``benchmarks`` entry (else ``coldstart.unrecorded``)
    entry: Entry | None = None

    @property
    def state(self) -> str:
        return self.headline.state

    @property
    def reason(self) -> str | None:
        r = self.headline
        return r.error or r.skip_reason or ("; ".join(self.checks_failed) or None)

    @property
    def outcome(self) -> str:
        """measured, failed or skipped, as a verdict counts the cell: one measured that failed
        its checks (page cache not evicted, a probe that found nothing) is failed."""
        return "failed" if self.state == "measured" and self.checks_failed else self.state

    def label(self, axes: list[str]) -> str:
        """The cell by ``axes`` (those that vary across the run), whole: never cut, so two
        cells never read the same."""
        return " · ".join(f"{a}={self.axes.get(a, '-')}" for a in axes) or self.id


def boot_of(fields: BootResult) -> BootResult:
    """The plain BootResult of a cell's fields (a ``CellInfo`` less its rounds and checks)."""
    if type(fields) is BootResult:
        return fields
    return BootResult.model_validate(fields.model_dump(include=set(BootResult.model_fields)))


def cell_params(result: BootResult) -> dict[str, Any]:
    """The test parameters of the cell ``result`` is a round of, as the benchmarks give them
    to pytest: the five axes, then the matrix file's own."""
    return {**{a: getattr(result, a) for a in CELL_AXES}, **result.axes}


def cell_axes(result: BootResult, params: dict[str, Any] | None = None) -> dict[str, str]:
    """The axes of the cell ``result`` is a round of: the five it has, then the matrix
    file's own (engine arguments, ...), as its test id names them."""
    out = {a: str(getattr(result, a)) for a in CELL_AXES if getattr(result, a) is not None}
    extra = params if params else result.axes
    out.update({str(k): str(v) for k, v in (extra or {}).items() if k not in out})
    return out


def headline_round(rounds: Iterable[BootResult]) -> BootResult:
    """The round a cell is shown and judged by: the measured round of median wall time (the
    lower of the two middle ones, so it is a real round), else the last failure, else the
    last round."""
    rounds = list(rounds)
    measured = [r for r in rounds if r.state == "measured" and r.wall_s is not None]
    if not measured:
        failed = [r for r in rounds if r.state == "failed"]
        return failed[-1] if failed else rounds[-1]
    target = statistics.median_low(sorted(r.wall_s for r in measured))
    return next(r for r in measured if r.wall_s == target)


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


def read_cells(path: str | Path) -> tuple[RunDocument | None, list[RunCell]]:
    """A result document's cells; a BootResult JSON or a list of them (``coldstart boot``,
    the log reader) reads as one cell per boot, with no document (None)."""
    p = Path(path)
    data = read_json(p)
    boots = _boots_of(data, p)
    if boots is not None:
        cells = []
        for r in boots:
            axes = cell_axes(r)
            cells.append(RunCell(cell_id(axes) or r.model, axes, r, [r]))
        return None, cells
    doc = run_document(data, str(p))
    return doc, doc.cells()


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


def write_run(doc: RunDocument | dict[str, Any], path: str | Path, *, indent: int = 2) -> None:
    """Write a result document, checked against the models first (a writer's mistake fails
    here, not in the reader of the file). The keys written are the ones given; a secret of
    this process's environment, or one a text shows, is not (``harness.secrets``)."""
    typed = doc if isinstance(doc, RunDocument) else run_document(doc, str(path))
    data = scrub(typed.model_dump(mode="json", exclude_unset=True), environment_secrets())
    Path(path).write_text(json.dumps(data, indent=indent, sort_keys=False) + "\n")
