"""What is done to a written run: its ``stats`` restated from its rounds (``restate_stats``,
``benchmarks.compact --upgrade``) and the run compacted (``compact``: no event timelines, no
log tails), each on the typed document, in place, returning it."""

from __future__ import annotations

from typing import TypeVar

from document.boot_result import BootResult
from document.models import UnrecordedCell
from document.run import RunDocument

# What a compacted run drops from each round (the events of a cell's headline round are kept
# with ``keep_events``).
DROPPED = ("events", "log_tail")

Fields = TypeVar("Fields", bound=BootResult)


def restate_stats(doc: RunDocument) -> RunDocument:
    """Make every entry's ``stats`` the statistics of its measured rounds' ``wall_s``.

    pytest-benchmark timed the whole of ``launch_boot`` (after readiness also the answer, the
    shutdown and the reading of the events: 3-4 s more than ``wall_s`` on the 2-core CPU
    machine); ``pytest benchmarks/`` now records the rounds' ``wall_s`` itself
    (benchmarks/conftest.py), and this brings a run written before that in line. An entry
    with no measured round has no time to state: it moves to ``coldstart.unrecorded``, where a
    run puts such a cell, with the checks it failed. ``stats.data`` is kept only where it was.
    """
    kept, unrecorded = [], []
    for entry in doc.benchmarks:
        old = entry.stats
        if not isinstance(old, dict):  # analysis.ingest's entries: no pytest-benchmark timing
            kept.append(entry)
            continue
        new = entry.extra_info.stats(data="data" in old)
        if new is None:
            unrecorded.append(UnrecordedCell.of_cell(entry.extra_info))
            continue
        entry.timed(new)
        kept.append(entry)
    doc.benchmarks = kept
    for cell in unrecorded:
        doc.add_cell(cell)
    return doc.named()


def _strip(fields: Fields, keep_events: bool = False) -> Fields:
    """``fields`` without what a compacted run drops (the keys gone, not emptied), and
    without the probes' durations in its evidence."""
    dropped = {k for k in DROPPED if not (keep_events and k == "events")}
    data = fields.model_dump(mode="json", exclude_unset=True, exclude=dropped)
    evidence = dict(data.get("evidence") or {})
    evidence.pop("probe_durations_s", None)
    data["evidence"] = evidence
    return type(fields).model_validate(data)


def compact(doc: RunDocument, keep_events: bool = False) -> RunDocument:
    """``doc`` without events and log tails (its stats restated first); ``keep_events``: each
    cell's headline round (and each unrecorded cell) keeps its events, the rounds' copies go."""
    doc = restate_stats(doc)
    for entry in doc.benchmarks:
        info = _strip(entry.extra_info, keep_events)
        info.rounds = [_strip(r) for r in entry.extra_info.rounds]
        entry.extra_info = info
        if isinstance(entry.stats, dict):
            entry.stats = {k: v for k, v in entry.stats.items() if k != "data"}
    doc.coldstart.unrecorded = [_strip(r, keep_events) for r in doc.coldstart.unrecorded]
    return doc
