"""The result document's models and the one definition of a cell (its id, its axes, its
headline round), with the constructors every writer builds a document by: a cell from its
rounds (``CellInfo.of_rounds``, ``Entry.of_cell``, ``UnrecordedCell.of``), its rounds made
again from a gate's slots (``Entry.with_rounds``). The whole run over them is
``document.run.RunDocument``.

A result document is pytest-benchmark's JSON (``pytest benchmarks/ --benchmark-json``, and
what gate, history, merge, compact and ingest write): each measured cell is an ``Entry`` of
``benchmarks`` whose ``extra_info`` (``CellInfo``) holds the BootResult fields of its headline
round at the top and every round under ``rounds``; cells pytest-benchmark leaves out (errors,
skips, cells with no measured round) are ``UnrecordedCell``s under ``coldstart.unrecorded``,
so a failure is never lost. The models allow keys they do not name (pytest-benchmark's own,
or a later writer's) and keep them: a document read and written again is the same document.
A document is written with the fields set on it (``exclude_unset``): a constructor sets what
a writer writes, so each builds its models from whole dumps, never from defaults.
``docs/format.md`` describes the format; ``coldstart schema run`` prints its JSON Schema.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from document.boot_result import (
    NOT_APPLICABLE_PREFIX,
    PHASE_NAMES,
    SCHEMA_VERSION,
    BootResult,
    SchemaError,
    cell_id,
)
from document.gate_record import GateRecord

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

    @classmethod
    def of_rounds(cls, rounds: list[BootResult], *, headline: BootResult | None = None,
                  **fields: Any) -> CellInfo:
        """A cell's ``extra_info`` from its rounds: the headline round's fields (the median
        round, ``headline_round``, unless given) at the top, every round below, and
        ``fields`` (checks_failed, storage_floor) beside them."""
        head = headline if headline is not None else headline_round(rounds)
        return cls.model_validate({**head.model_dump(mode="json"),
                                   "rounds": [r.model_dump(mode="json") for r in rounds],
                                   **fields})

    def walls(self) -> list[float]:
        """The ``wall_s`` of the measured rounds, in the order they ran (see
        ``measured_walls``); a cell without rounds (an older document) is its headline."""
        return [float(r.wall_s) for r in (self.rounds or [self])
                if r.state == "measured" and r.wall_s is not None]

    def stats(self, *, data: bool = True) -> dict[str, Any] | None:
        """The cell's ``stats`` as pytest-benchmark writes them (``stats_of``)."""
        return stats_of(self.walls(), data=data)

    def as_json(self) -> dict[str, Any]:
        """What the document holds of it: the fields set, as JSON."""
        return self.model_dump(mode="json", exclude_unset=True)


class UnrecordedCell(BootResult):
    """A cell pytest-benchmark left out of ``benchmarks`` (failed, skipped, no measured
    round), with the checks it failed."""

    model_config = ConfigDict(extra="allow")

    checks_failed: list[str] = Field(default_factory=list)
    commit_info: dict[str, Any] | None = None  # as CellInfo's
    machine_info: dict[str, Any] | None = None  # analysis.merge: the shard's machine

    @classmethod
    def of(cls, result: BootResult, checks_failed: list[str] | None = None) -> UnrecordedCell:
        """An unrecorded cell of ``result`` (every field), with the checks it failed."""
        data = result.model_dump(mode="json")
        if checks_failed is not None:
            data["checks_failed"] = checks_failed
        return cls.model_validate(data)

    @classmethod
    def of_cell(cls, info: CellInfo) -> UnrecordedCell:
        """A measured cell's headline round moved to ``unrecorded`` (no measured round left to
        time it): its fields and its checks, not its rounds or its storage floor."""
        return cls.model_validate({
            **info.model_dump(mode="json", exclude_unset=True,
                              exclude={"rounds", "storage_floor"}),
            "checks_failed": info.checks_failed})

    def on_machine(self, machine_info: dict[str, Any],
                   commit_info: dict[str, Any] | None = None) -> UnrecordedCell:
        """The cell as a merged run keeps it: with its shard's machine (and commit)."""
        update: dict[str, Any] = {"machine_info": machine_info}
        if commit_info:
            update["commit_info"] = commit_info
        return self.model_copy(update=update)


class Entry(BaseModel):
    """One ``benchmarks`` entry: pytest-benchmark's fields and our ``extra_info``."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    fullname: str | None = None
    params: dict[str, Any] | None = None
    param: str | None = None
    group: str | None = None
    # pytest-benchmark's Stats over the measured rounds' wall_s (document.boot_result.cell_stats).
    stats: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    # The name pytest-benchmark's CSV gives the row: the cell and the run (schema 3).
    fullfunc: str | None = None
    machine_info: dict[str, Any] | None = None  # analysis.merge: the shard's machine
    extra_info: CellInfo

    @classmethod
    def of_cell(cls, info: CellInfo, *, name: str, params: dict[str, Any],
                fullname: str | None = None) -> Entry:
        """The entry of a cell, as pytest-benchmark names it, with no statistics yet."""
        return cls(name=name, fullname=fullname or name, params=params, param=cell_id(params),
                   group=None, stats=None, extra_info=info)

    def timed(self, stats: dict[str, Any]) -> None:
        """Make ``stats`` (the measured rounds' Stats) the entry's, saying what timed them."""
        self.stats = stats
        self.options = {**(self.options or {}), "timer": STATS_TIMER}

    def with_rounds(self, rounds: list[BootResult], *, checks_failed: list[str],
                    storage_floor: dict[str, Any] | None = None) -> Entry | None:
        """The entry of this cell with ``rounds`` as its rounds (a gate's side, whose rounds
        ran in separate documents): the headline, the stats and the checks made again from
        them. Refused (``SchemaError``) for a round of another cell or of another vLLM
        release than the others: a cell's rounds are of one cell, on one release. None
        where no round was measured: no time to state (the cell is then unrecorded)."""
        cid = str(self.param or cell_id(self.params or {}) or self.name)
        for r in rounds:
            if (other := cell_id(cell_axes(r))) != cid:
                raise SchemaError(f"{cid}: a round of another cell ({other}) among its rounds")
        versions = sorted({r.vllm_version for r in rounds if r.vllm_version})
        if len(versions) > 1:
            raise SchemaError(f"{cid}: rounds of different vLLM releases "
                              f"({', '.join(versions)}): a cell's rounds are of one release")
        info = CellInfo.of_rounds(rounds)
        stats = info.stats()
        if stats is None:
            return None
        info.storage_floor = storage_floor
        info.checks_failed = checks_failed
        entry = self.model_copy(update={"extra_info": info})
        entry.timed(stats)
        return entry

    def on_machine(self, machine_info: dict[str, Any],
                   commit_info: dict[str, Any] | None = None) -> Entry:
        """The entry as a merged run keeps it: with its shard's machine (and commit)."""
        update: dict[str, Any] = {"machine_info": machine_info}
        if commit_info:
            update["extra_info"] = self.extra_info.model_copy(
                update={"commit_info": commit_info})
        return self.model_copy(update=update)

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)


class RunMeta(BaseModel):
    """The document's ``coldstart`` object: what made the run, and the unrecorded cells."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    matrix: str | None = None
    # {"count", "sha256"} of the selected cells' ids: every shard of a run alike (schema 3);
    # "matrix": the same of every cell of the matrix they were selected from (later in 3).
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
    # gate and history (benchmarks.interleave.merge_side): the release's probe targets it
    # lacks, how the two releases' boots were interleaved, and (gate) which side this is.
    probe_targets_missing: list[str] | None = None
    interleaved: dict[str, Any] | None = None
    gate: GateRecord | None = None  # document.gate_record
    # analysis.merge: how many machines the merged cells ran on (analysis.machines).
    machines: int | None = None
    unrecorded: list[UnrecordedCell] = Field(default_factory=list)


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

    def measurement_problems(self) -> list[str]:
        """What makes a measured headline round no measurement (``coldstart check`` and the
        run page judge by it): a phase left empty where it applies, a probe problem, no wall
        time. Empty for a failed or skipped cell: its state says it."""
        r = self.headline
        if r.state != "measured":
            return []
        out = []
        missing = [p for p in PHASE_NAMES if r.phases[p] is None
                   and not r.phase_notes.get(p, "").startswith(NOT_APPLICABLE_PREFIX)]
        if missing:
            out.append(f"{self.id}: phases not measured: "
                       f"{ {p: r.phase_notes.get(p) for p in missing} }")
        if r.evidence.probe_problems:
            out.append(f"{self.id}: probe problems: {r.evidence.probe_problems}")
        if r.wall_s is None:
            out.append(f"{self.id}: measured, but no wall time")
        return out

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


# options.timer of every entry whose stats are the rounds' wall_s: what made the numbers, for
# whoever reads the JSON with pytest-benchmark's tools (it records its own timer there).
STATS_TIMER = "BootResult.wall_s of the measured rounds (launch to ready)"


def measured_walls(extra: dict[str, Any]) -> list[float]:
    """A cell's times: the ``wall_s`` of its measured rounds, in the order they ran, from
    its ``extra_info`` as JSON (pytest-benchmark's fixture holds it so).

    What pytest-benchmark's ``stats`` are made of, and what ``analysis.compare`` takes the
    median of. A failed or skipped round has no time: it stays in ``extra_info.rounds`` (and
    ``analysis.compare`` counts it as a failure or a skip), it never enters the statistics as
    a duration. An entry without rounds (an older document) is its headline round.
    """
    rounds = extra.get("rounds") or [extra]
    return [float(r["wall_s"]) for r in rounds if isinstance(r, dict)
            and r.get("state") == "measured" and r.get("wall_s") is not None]


def wall_stats(walls: list[float]):
    """pytest-benchmark's own Stats object over ``walls`` (its fields, its quartile rules)."""
    from pytest_benchmark.stats import Stats

    stats = Stats()
    for wall in walls:
        stats.update(wall)
    return stats


def stats_of(walls: list[float], *, data: bool = True) -> dict[str, Any] | None:
    """A cell's ``stats`` as pytest-benchmark writes them (its ``Stats`` fields, ``data``,
    ``iterations``), over its measured rounds' ``walls``; None when no round was measured.

    The one rule every writer of a document uses (``pytest benchmarks/``, gate and history,
    ``analysis.merge``, ``benchmarks.compact``), so a cell's stats and its rounds never differ.
    """
    if not walls:
        return None
    stats = wall_stats(walls)
    out = stats.as_dict()
    if data:
        out["data"] = list(stats.data)
    out["iterations"] = 1  # one boot per round: what pedantic(iterations=1) records
    return out


def benchmark_entry(result: BootResult, *, name: str, params: dict[str, Any],
                    rounds: list[BootResult] | None = None) -> dict[str, Any]:
    """``Entry.of_cell`` as JSON: a cell of ``result`` (headline) and ``rounds``, for a
    document built as JSON (test data, a hand-made document)."""
    info = CellInfo.of_rounds(rounds or [result], headline=result)
    return Entry.of_cell(info, name=name, params=params).as_json()
