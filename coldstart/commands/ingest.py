"""``coldstart ingest LOG... -o out.json``: vLLM start-up logs (or, with ``--spans``, exported
OpenTelemetry traces) as a result document (``analysis.ingest`` reads them). Every input,
and where the output goes, is checked before any is read: a typo costs nothing and writes
nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.ingest import ingest, ingest_spans
from coldstart.cli import check_output
from document import run_document, write_run
from document.errors import InputError, unreadable
from harness.logs.reader import not_a_log


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Read vLLM start-up logs (or, with --spans, exported OpenTelemetry "
                          "traces) into a vllm-coldstart result document.")
    parser.add_argument("logs", nargs="+", type=Path, metavar="LOG",
                        help="vLLM start-up log (with --spans: an exported trace file)")
    parser.add_argument("--spans", action="store_true",
                        help="the inputs are vLLM's start-up spans as exported: the "
                             "OpenTelemetry Collector's file exporter (OTLP JSON, JSON Lines) "
                             "or Jaeger's JSON")
    parser.add_argument("--vllm-version", default=None, metavar="VERSION",
                        help="with --spans: the vLLM release that exported them (spans do not "
                             "say; picks that release's span names, else the newest mapping)")
    parser.add_argument("--model", default=None,
                        help="with --spans: the model the boots served (spans do not say; "
                             "default: the file's name and the trace's number)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="result JSON to write")


def run(args: argparse.Namespace) -> int:
    if args.spans:
        for path in args.logs:
            if (why := unreadable(path)) is not None:
                raise InputError(f"{path}: {why}")
        check_output(args.output, "-o")
        document = ingest_spans(args.logs, args.vllm_version, args.model)
        write_run(document, args.output)
        _wrote(document, args.output, "failed")
        return 0
    if args.vllm_version or args.model:
        raise InputError("--vllm-version and --model are for --spans: a log names its own")
    # Check every input, and where the output goes, before reading any: a typo costs nothing
    # and writes nothing. A file that is not a log would be a failed boot named after it.
    for path in args.logs:
        why = unreadable(path) or not_a_log(path.read_text(encoding="utf-8", errors="replace"))
        if why is not None:
            raise InputError(f"{path}: {why}")
    check_output(args.output, "-o")
    try:
        document = ingest(args.logs)
    except OSError as exc:
        raise InputError(f"{exc.filename or ''}: {exc.strerror or exc}") from exc
    write_run(document, args.output)
    _wrote(document, args.output, "failed or skipped")
    return 0


def _wrote(document: dict, out: Path, unrecorded_are: str) -> None:
    typed = run_document(document, str(out))
    print(f"ingest: wrote {len(typed.benchmarks)} boots "
          f"(+{len(typed.coldstart.unrecorded)} {unrecorded_are}) to {out}", file=sys.stderr)
