"""Turn vLLM start-up logs into a result document: ``coldstart ingest LOG... -o out.json``.

One record per boot, read by ``harness.logs.read_boots`` (a log a restarted pod appended
several boots to gives one record each, in order) and written with the suite's result
document functions, so ``document.read_results(out.json)`` reads it back like a
benchmark run. A boot that finished is a ``benchmarks`` entry; one that stops before start-up
finished (it died, or the log was cut) is kept, as a failed boot, under
``coldstart.unrecorded``; so is one that finished but times none of the six phases (a total
only), as a skipped boot with the reason: it is never fitted or compared as measured.

Each record keeps the start-up total the log prints (``printed_total_s``: the study driver's
"initialize_engine took", else vLLM's "init engine (profile, create kv cache, warmup model)
took") beside its phases, and the progress line shows it.

The model is the one the log names (the last part of a local path, or the hub id), else the
reference study's file name ``output_model_<name>...txt``, else the file's stem.

Exit status: 0 on success, 2 when a log is missing or unreadable, is not a vLLM log (empty,
a JSON document, or no line the log reader recognises: ``harness.logs.not_a_log``), or the
output's folder does not exist (one line ``coldstart ingest: error: ...`` naming the file, on
stderr, nothing written). A file that is not a log is never counted as a failed boot, and one
such file refuses the whole batch: a wrong path in a glob is said, not skipped. A log of a boot
that died early (only a traceback) is a log, and reads as a failed boot. A progress line per
log goes to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

from document import benchmark_entry, new_document
from document.boot_result import BootResult, cell_id
from document.errors import InputError
from harness.logs.reader import log_boots


def _params(result: BootResult, path: Path) -> dict[str, str]:
    # The path keeps two logs of one model (iterations 1..5 of the study) apart, the boot's
    # place in its log two boots of one log.
    params = {"model": result.model, "source": "log", "log": str(path)}
    if result.evidence.boot_in_log is not None:
        params["boot"] = f"{result.evidence.boot_in_log}of{result.evidence.boots_in_log}"
    return params


def ingest(paths: list[Path]) -> dict:
    """Read every log into one result document (``document.boot_result.new_document``)."""
    entries = []
    unrecorded = []
    for i, path in enumerate(paths, 1):
        boots = log_boots(path)
        for result in boots:
            read = sum(v is not None for v in result.phases.values())
            which = (f" boot {result.evidence.boot_in_log}/{len(boots)}"
                     if len(boots) > 1 else "")
            total = (f", printed total {result.printed_total_s:g} s"
                     if result.printed_total_s is not None else "")
            print(f"ingest [{i}/{len(paths)}] {path}{which}: {result.model}, {result.state}, "
                  f"vLLM {result.vllm_version or '?'} on {result.platform or '?'}, "
                  f"{read}/{len(result.phases)} phases in the log{total}", file=sys.stderr)
            _file(result, "log", _params(result, path), entries, unrecorded)
    return new_document(entries, unrecorded=unrecorded,
                        machine_info={"source": "analysis.ingest"})


def _file(result: BootResult, kind: str, params: dict[str, str], entries: list,
          unrecorded: list) -> None:
    """A measured boot as a benchmarks entry named ``kind[cell]``; any other kept unrecorded,
    never lost."""
    if result.state == "measured":
        entries.append(benchmark_entry(result, name=f"{kind}[{cell_id(params)}]",
                                       params=params))
    else:
        unrecorded.append(result)


def ingest_spans(paths: list[Path], vllm_version: str | None = None,
                 model: str | None = None) -> dict:
    """Exported traces (OTLP JSON, Jaeger JSON) into one result document: a boot per trace
    with a start-up span (``harness.spans.boots``), its phases those the spans witness."""
    from harness.spans.boots import span_boots

    entries, unrecorded = [], []
    for i, path in enumerate(paths, 1):
        boots, request_only = span_boots(path, vllm_version, model)
        if not boots:
            raise InputError(f"{path}: no start-up span in any trace ({request_only} trace(s) "
                             "of requests only): not a boot's spans")
        for n, result in enumerate(boots, 1):
            witnessed = result.evidence.span_phases
            read = sum(v is not None for v in result.phases.values())
            print(f"ingest --spans [{i}/{len(paths)}] {path} trace {n}/{len(boots)}: "
                  f"{len(result.evidence.spans or [])} spans, {read}/{len(result.phases)} "
                  "phases witnessed"
                  + (f"; names not mapped (kept): {', '.join(witnessed.unmapped)}"
                     if witnessed and witnessed.unmapped else "")
                  + (f"; {request_only} request trace(s) after readiness kept with the boot "
                     "before them" if request_only and n == 1 else ""), file=sys.stderr)
            _file(result, "spans", {"model": result.model, "source": "spans",
                                    "spans": str(path)}, entries, unrecorded)
    return new_document(entries, unrecorded=unrecorded,
                        machine_info={"source": "analysis.ingest --spans"})


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("analysis.ingest"))
