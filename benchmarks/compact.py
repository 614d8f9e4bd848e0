"""python -m benchmarks.compact out.json -o small.json: a result document without timelines.

Drops what a fit or a comparison does not read (per-process event timelines, log tails, the
rounds' copies of those), so a run can be kept as test data or attached to an issue.
``--keep-events`` keeps each cell's headline (median) round's events, all the run page's
timeline and ``harness.trace --cell`` read, and drops only the rounds' copies. Its
pytest-benchmark ``stats`` are restated from the rounds' ``wall_s`` (:func:`restate_stats`), so
a run written before the two agreed reads the same to ``pytest-benchmark compare`` as to
``analysis.compare``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.check import read_document
from harness.schema import DOCUMENT_KEY, SchemaError

DROPPED = ("events", "log_tail")
# options.timer of every entry whose stats are the rounds' wall_s: what made the numbers, for
# whoever reads the JSON with pytest-benchmark's tools (it records its own timer there).
STATS_TIMER = "BootResult.wall_s of the measured rounds (launch to ready)"


def measured_walls(extra: dict[str, Any]) -> list[float]:
    """A cell's times: the ``wall_s`` of its measured rounds, in the order they ran.

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
        walls = measured_walls(extra)
        if not walls:
            unrecorded.append({**{k: v for k, v in extra.items()
                                  if k not in ("rounds", "storage_floor")},
                               "checks_failed": extra.get("checks_failed") or []})
            continue
        stats = wall_stats(walls)
        new = stats.as_dict()
        if "data" in old:
            new["data"] = list(stats.data)
        new["iterations"] = old.get("iterations", 1)
        bench["stats"] = new
        bench.setdefault("options", {})["timer"] = STATS_TIMER
        kept.append(bench)
    doc["benchmarks"] = kept
    if unrecorded:
        meta = doc.setdefault(DOCUMENT_KEY, {})
        meta["unrecorded"] = [*meta.get("unrecorded", []), *unrecorded]
    return doc


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compact", description=__doc__.split("\n")[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--keep-events", action="store_true",
                    help="keep each cell's headline round's events (the run page's timeline, "
                         "harness.trace --cell); drop only the rounds' copies")
    args = ap.parse_args(argv)
    try:
        doc = compact(read_document(args.json), keep_events=args.keep_events)
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    except (SchemaError, OSError) as exc:
        print(f"benchmarks.compact: error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.json} ({args.json.stat().st_size:,} B) -> {args.out} ({args.out.stat().st_size:,} B)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
