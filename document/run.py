"""The run document: a whole result document (``RunDocument``) over the cell models of
``document.models``, with the rules that keep it one run: a cell is added once
(``add_cell``), shards become one run only when they are of one (``merged``, the checks in
``document.merging``), and every writer builds it by ``new`` and names its rows by
``named``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from document.boot_result import DOCUMENT_KEY, SCHEMA_VERSION, BootResult, SchemaError, cell_id
from document.machine_facts import MachineFacts
from document.merging import merge_shards
from document.models import (
    Entry,
    RunCell,
    RunMeta,
    UnrecordedCell,
    boot_of,
    cell_axes,
)


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

    @classmethod
    def new(cls, entries: list[Entry] | None = None,
            unrecorded: list[UnrecordedCell] | None = None,
            machine_info: dict[str, Any] | None = None, **fields: Any) -> RunDocument:
        """A run of ``entries`` and ``unrecorded`` cells on ``machine_info``; ``fields``: the
        document's other keys (commit_info, datetime, version)."""
        return cls(machine_info=machine_info or {}, commit_info=fields.pop("commit_info", {}),
                   benchmarks=entries or [], **fields,
                   coldstart=RunMeta(schema_version=SCHEMA_VERSION,
                                     unrecorded=list(unrecorded or [])))

    @classmethod
    def merged(cls, shards: list[Any], **options: Any) -> RunDocument:
        """One run of the shards of a matrix run on several machines (``document.merging.
        Shard``s, read by ``analysis.shards``), refused (``MergeError``) unless they are of
        one run: one schema version, one vLLM release (``allow_mixed_versions``), one
        ``--rounds``, one matrix, one commit (``allow_mixed_commits``: each cell keeps its
        own), one result per cell (``prefer_newest``: the one written last). Every cell keeps
        the machine it ran on. ``options``: those, ``count_machines`` and ``say``
        (``document.merging.merge_shards``)."""
        return merge_shards(cls, shards, **options)

    def cell_ids(self) -> set[str]:
        """The ids of every cell the run holds, measured or unrecorded."""
        return {c.id for c in self.cells()}

    def add_cell(self, cell: Entry | UnrecordedCell) -> None:
        """Add a measured cell (``Entry``) or an unrecorded one; refused (``SchemaError``)
        where the run already holds that cell: one run holds a cell once."""
        if isinstance(cell, Entry):
            params = cell.params or {}
            cid = str(cell.param or cell_id(params) or cell.name)
        else:
            cid = cell_id(cell_axes(boot_of(cell)))
        if cid in self.cell_ids():
            raise SchemaError(f"{cid}: already in this run; a run holds a cell once")
        if isinstance(cell, Entry):
            self.benchmarks = [*self.benchmarks, cell]
        else:
            self.coldstart.unrecorded = [*self.coldstart.unrecorded, cell]
            self.coldstart = self.coldstart  # a document that had no coldstart object gets one

    def run_label(self, cell: BootResult | None = None) -> str:
        """What tells a run apart in pytest-benchmark's tables and CSV: the release (gate and
        history's ``coldstart.release``, else the cell's vLLM) and when it was written."""
        facts = self.machine_facts
        release = self.coldstart.release
        vllm = (cell.vllm_version if cell is not None else None) or facts.vllm_version
        if not release and vllm:
            release = f"{facts.vllm_distribution or 'vllm'}=={vllm}"
        when = self.coldstart.written_at or self.datetime
        # a gate of a release against itself writes both sides in one second: its side
        # tells them apart
        gate = self.coldstart.gate
        side = gate.side if gate is not None and gate.of_one_release() else None
        return ", ".join(str(x) for x in (release, side, when) if x) or "unlabelled run"

    def named(self) -> RunDocument:
        """Give each measured entry the ``fullfunc`` pytest-benchmark's CSV names its row by
        (``fullname`` stays the cell's, what ``compare --between`` matches runs on)."""
        for entry in self.benchmarks:
            if isinstance(entry.stats, dict):
                entry.fullfunc = f"{entry.fullname or entry.name} " \
                                 f"({self.run_label(entry.extra_info)})"
        return self

    def as_json(self) -> dict[str, Any]:
        """The document as it is written (the fields set), as JSON."""
        return self.model_dump(mode="json", exclude_unset=True)

    @property
    def machine_facts(self) -> MachineFacts:
        """Our machine facts (``machine_info.coldstart``: CPU, GPUs, vLLM, ...)."""
        return recorded_facts(self.machine_info)


def recorded_facts(machine_info: Any) -> MachineFacts:
    """Our facts in a ``machine_info`` (a run's, or a merged cell's: its shard's machine):
    ``machine_info.coldstart`` (benchmarks/provenance.py); every fact unknown where there
    are none."""
    return MachineFacts.of(machine_info.get(DOCUMENT_KEY) if isinstance(machine_info, dict)
                           else None)


def new_document(entries: list[dict[str, Any]] | None = None,
                 unrecorded: list[BootResult] | None = None,
                 machine_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """``RunDocument.new`` as JSON, its ``entries`` as given (unchecked: a reader's test
    may hand it what a reader must refuse)."""
    doc = RunDocument.new(unrecorded=[UnrecordedCell.of(r) for r in unrecorded or []],
                          machine_info=machine_info).as_json()
    doc["benchmarks"] = list(entries or [])
    return doc
