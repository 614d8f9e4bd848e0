"""Score the log reader on logs it has never seen: every printed duration a manifest lists.

    python scripts/heldout_check.py FOLDER [--manifest FILE] [--json OUT]

FOLDER holds the logs and, unless --manifest names another, ``manifest.json`` in the form of
``tests/data/logs/public/manifest.json`` (``harness.logs.transcripts`` says what is compared). One
line per printed duration that the reader missed, one per fact that disagrees, then the
score. Exit 0 where every printed duration is reproduced, 1 where one is not, 2 for a folder
or manifest that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.logs.transcripts import check_manifest, fact_agrees  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--manifest", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write the whole report here")
    args = parser.parse_args(argv)
    manifest = args.manifest or args.folder / "manifest.json"
    if not manifest.is_file():
        print(f"error: no manifest at {manifest}", file=sys.stderr)
        return 2
    try:
        report = check_manifest(args.folder, manifest)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: cannot read {manifest}: {exc}", file=sys.stderr)
        return 2
    for log in report["per_log"]:
        if log["error"]:
            print(f"{log['file']}: the reader raised {log['error']}")
        for o in log["durations"]:
            if not o["reproduced"]:
                where = o["target"] or "any duration read"
                boot = f", boot {o['boot']}" if o["boot"] else ""
                print(f"{log['file']}: MISSED {o['words']} = {o['printed']:g} s "
                      f"({where}{boot}): read {o['got']}")
        for name, fact in log["facts"].items():
            if not fact_agrees(name, fact):
                print(f"{log['file']}: fact {name}: expected {fact['expected']}, "
                      f"read {fact['read']}")
    print(f"{report['logs']} logs: {report['reproduced']} of {report['printed']} printed "
          f"durations reproduced within 5 % + 0.05 s ({report['mapped_reproduced']} of "
          f"{report['mapped']} mapped to a phase, a subphase or the total); "
          f"{report['facts_agreeing']} of {report['facts_checked']} facts agree; "
          f"{len(report['crashed'])} logs raised")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0 if report["reproduced"] == report["printed"] and not report["crashed"] else 1


if __name__ == "__main__":
    sys.exit(main())
