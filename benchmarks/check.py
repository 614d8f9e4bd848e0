"""python -m benchmarks.check out.json [--matrix ... narrowing as for pytest]

Checks a benchmark JSON against the cells its matrix should hold: every cell present, every
one measured (or failed/skipped *on record*, which fails the check unless --allow-failed),
every measured cell with all six phases accounted for. Exit 0 good, 1 not, 2 unreadable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.matrix import AXES, select
from harness.schema import PHASE_NAMES, SchemaError, cell_id, read_results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.check", description=__doc__.split("\n")[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("--matrix", default="smoke")
    for axis, plural in (("model", "models"), ("loader", "loaders"),
                         ("compile_cache", "compile-caches"), ("page_cache", "page-caches"),
                         ("entrypoint", "entrypoints")):
        ap.add_argument(f"--{plural}", dest=axis, default=None)
    ap.add_argument("--allow-failed", action="store_true")
    args = ap.parse_args(argv)
    try:
        results = read_results(args.json)
        expected = select(args.matrix, **{a: getattr(args, a).split(",") if getattr(args, a)
                                          else None for a in AXES})
    except (SchemaError, ValueError) as exc:
        print(f"check: error: {exc}", file=sys.stderr)
        return 2
    by_cell = {cell_id({a: getattr(r, a) for a in AXES}): r for r in results}
    problems = []
    for cell in expected:
        r = by_cell.get(cell.id)
        if r is None:
            problems.append(f"{cell.id}: missing from {args.json}")
            continue
        line = f"{cell.id}: {r.state}"
        if r.state == "measured":
            unaccounted = [p for p in PHASE_NAMES if r.phases[p] is None
                           and not r.phase_notes.get(p)]
            if unaccounted:
                problems.append(f"{cell.id}: phases without value or reason: {unaccounted}")
            line += f", ready in {r.wall_s:.1f} s"
        else:
            detail = r.error or r.skip_reason
            line += f" ({detail})"
            if not args.allow_failed:
                problems.append(line)
        print(line)
    doc = json.loads(args.json.read_text())
    for key in ("machine_info", "coldstart"):
        if key not in doc:
            problems.append(f"no {key!r} in {args.json}")
    for p in problems:
        print(f"check: {p}", file=sys.stderr)
    print(f"check: {len(expected)} cells expected, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
