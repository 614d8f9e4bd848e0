"""python -m benchmarks.compact out.json -o small.json: a result document without timelines.

Drops what a fit or a comparison does not read (per-process event timelines, log tails, the
rounds' copies of those), so a run can be kept as test data or attached to an issue.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.check import read_document
from harness.schema import DOCUMENT_KEY, SchemaError

DROPPED = ("events", "log_tail")


def _strip(result: dict) -> dict:
    out = {k: v for k, v in result.items() if k not in DROPPED}
    evidence = dict(out.get("evidence") or {})
    evidence.pop("probe_durations_s", None)
    out["evidence"] = evidence
    return out


def compact(doc: dict) -> dict:
    for bench in doc.get("benchmarks", []):
        extra = bench.get("extra_info") or {}
        rounds = extra.get("rounds") or []
        bench["extra_info"] = _strip(extra)
        bench["extra_info"]["rounds"] = [_strip(r) for r in rounds]
        if isinstance(bench.get("stats"), dict):
            bench["stats"].pop("data", None)
    meta = doc.get(DOCUMENT_KEY) or {}
    meta["unrecorded"] = [_strip(r) for r in meta.get("unrecorded", [])]
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compact", description=__doc__.split("\n")[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("-o", "--out", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        doc = compact(read_document(args.json))
        args.out.write_text(json.dumps(doc, indent=1) + "\n")
    except (SchemaError, OSError) as exc:
        print(f"benchmarks.compact: error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.json} ({args.json.stat().st_size:,} B) -> {args.out} ({args.out.stat().st_size:,} B)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
