"""``coldstart trace``: a boot's timeline as Chrome trace-event JSON, for Perfetto.

    coldstart trace boot.json -o boot.trace.json
    coldstart trace out.json --cell model=smollm2-135m-loader=... -o cell.trace.json

What the trace holds is ``harness.trace``'s to say.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coldstart.cli import check_output
from document.boot_result import SchemaError
from document.secrets import environment_secrets
from harness.trace import chrome_trace, find_boot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("json", help="a BootResult (coldstart boot --out) or a run's JSON")
    parser.add_argument("--cell", help="the cell's id (model=...-loader=...); its median round")
    parser.add_argument("-o", "--out", type=Path, required=True, help="the trace file to write")


def run(args: argparse.Namespace) -> int:
    check_output(args.out, "-o")
    title, result = find_boot(args.json, args.cell)
    if not result.events and not result.evidence.spans:
        raise SchemaError(f"{args.json}: {title}: the result holds no events (a compacted "
                          "run, coldstart compact, drops them): nothing to draw")
    # A run written before secrets were scrubbed at the boot still writes none here.
    trace = chrome_trace(result.redacted(environment_secrets()), title=title)
    args.out.write_text(json.dumps(trace) + "\n")
    slices = sum(e["ph"] == "X" for e in trace["traceEvents"])
    instants = sum(e["ph"] == "i" for e in trace["traceEvents"])
    tracks = sum(e["name"] == "process_name" for e in trace["traceEvents"])
    print(f"{args.out}: {tracks} tracks, {slices} slices, {instants} instants; open it in "
          "https://ui.perfetto.dev or chrome://tracing")
    return 0
