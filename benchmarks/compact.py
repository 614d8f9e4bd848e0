"""A result document without timelines (``coldstart compact``).

Drops what a fit or a comparison does not read (per-process event timelines, log tails, the
rounds' copies of those), so a run can be kept as test data or attached to an issue.
``--keep-events`` keeps each cell's headline (median) round's events, all the run page's
timeline and ``coldstart trace --cell`` read, and drops only the rounds' copies. Its
pytest-benchmark ``stats`` are restated from the rounds' ``wall_s`` (:func:`restate_stats`), so
a run written before the two agreed reads the same to ``pytest-benchmark compare`` as to
``analysis.compare``.
"""

from __future__ import annotations

from harness.document import RunDocument
from harness.schema import DOCUMENT_KEY, STATS_TIMER, cell_stats, name_runs

DROPPED = ("events", "log_tail")


def as_json(doc: RunDocument) -> dict:
    """The document read (checked by the one reader) as the JSON it holds, to shrink."""
    return doc.model_dump(mode="json", exclude_unset=True)


def restate_stats(doc: dict) -> dict:
    """Make every entry's ``stats`` the statistics of its measured rounds' ``wall_s``.

    pytest-benchmark timed the whole of ``launch_boot`` (after readiness also the answer, the
    shutdown and the reading of the events: 3-4 s more than ``wall_s`` on the 2-core CPU
    machine); ``pytest benchmarks/`` now records the rounds' ``wall_s`` itself
    (benchmarks/conftest.py), and this brings a run written before that in line. An entry
    with no measured round has no time to state: it moves to ``coldstart.unrecorded``, where a
    run puts such a cell, with the checks it failed. ``stats.data`` is kept only where it was.
    """
    kept, unrecorded = [], []
    for bench in doc.get("benchmarks", []):
        extra = bench.get("extra_info") or {}
        old = bench.get("stats")
        if not isinstance(old, dict):  # analysis.ingest's entries: no pytest-benchmark timing
            kept.append(bench)
            continue
        new = cell_stats(extra, data="data" in old)
        if new is None:
            unrecorded.append({**{k: v for k, v in extra.items()
                                  if k not in ("rounds", "storage_floor")},
                               "checks_failed": extra.get("checks_failed") or []})
            continue
        bench["stats"] = new
        bench.setdefault("options", {})["timer"] = STATS_TIMER
        kept.append(bench)
    doc["benchmarks"] = kept
    if unrecorded:
        meta = doc.setdefault(DOCUMENT_KEY, {})
        meta["unrecorded"] = [*meta.get("unrecorded", []), *unrecorded]
    return name_runs(doc)


def upgrade(doc: dict) -> dict:
    """A document written before schema 3, as pytest-benchmark's own ``compare`` reads it:
    its stats restated (:func:`restate_stats`, with ``iterations``) and each entry named by
    its run (``fullfunc``). Nothing is dropped; the schema version it was measured with stays.
    """
    return restate_stats(doc)


def _strip(result: dict, keep_events: bool = False) -> dict:
    dropped = [k for k in DROPPED if not (keep_events and k == "events")]
    out = {k: v for k, v in result.items() if k not in dropped}
    evidence = dict(out.get("evidence") or {})
    evidence.pop("probe_durations_s", None)
    out["evidence"] = evidence
    return out


def compact(doc: dict, keep_events: bool = False) -> dict:
    """``doc`` without events and log tails; ``keep_events``: each cell's headline round
    (and each unrecorded cell) keeps its events, the rounds' copies go."""
    doc = restate_stats(doc)
    for bench in doc.get("benchmarks", []):
        extra = bench.get("extra_info") or {}
        rounds = extra.get("rounds") or []
        bench["extra_info"] = _strip(extra, keep_events)
        bench["extra_info"]["rounds"] = [_strip(r) for r in rounds]
        if isinstance(bench.get("stats"), dict):
            bench["stats"].pop("data", None)
    meta = doc.get(DOCUMENT_KEY) or {}
    meta["unrecorded"] = [_strip(r, keep_events) for r in meta.get("unrecorded", [])]
    return doc
