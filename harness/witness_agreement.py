"""The three witnesses of a boot's phases side by side: the probes, vLLM's log, its spans.

The probes time the calls the harness wraps; vLLM's log prints durations of some of the same
calls ("Initializing model took", "Loading weights took"); its OpenTelemetry spans time
others from inside (``document.span_phases``). Where two of them time the same thing they
should agree within 5 % + 0.05 s; a row says where they do not, for the run page and
compare to show.
"""

from __future__ import annotations

from typing import Any

from document.boot_result import BootResult
from document.span_phases import AGREEMENT_ABS_S, AGREEMENT_REL
from harness.registry import LOG_PROBE_PAIRS

__all__ = ["disagreements", "witness_rows"]

# What more than one witness can time: the phases the spans cover whole, and the parts the
# log prints (LOG_PROBE_PAIRS) or the spans time.
_ROWS = ("model_loading", "model_loading.model_init", "model_loading.load_weights",
         "torch_compile", "torch_compile.dynamo_transform", "torch_compile.inductor_compile",
         "cuda_graph_capture", "kv_cache_profiling.kv_cache_allocation")


def witness_rows(result: BootResult) -> list[dict[str, Any]]:
    """Per phase or part two witnesses time: {"name", "probes_s", "log_s", "spans_s",
    "agrees"} (``agrees`` None where only one witness has it)."""
    if result.source != "probe":  # a log's or a trace's phases are that witness itself
        return []
    witnessed = result.evidence.span_phases
    log_of = {part: result.log_durations.get(key) for key, part in LOG_PROBE_PAIRS.items()}
    rows = []
    for name in _ROWS:
        probes = (result.subphases if "." in name else result.phases).get(name)
        spans = None
        if witnessed is not None:
            spans = (witnessed.subphases if "." in name else witnessed.phases).get(name)
        log = log_of.get(name)
        others = [v for v in (log, spans) if v is not None]
        if probes is None or not others:
            continue
        tolerance = AGREEMENT_REL * probes + AGREEMENT_ABS_S
        rows.append({"name": name, "probes_s": probes, "log_s": log, "spans_s": spans,
                     "agrees": all(abs(v - probes) <= tolerance for v in others)})
    return rows


def disagreements(result: BootResult) -> list[str]:
    """One line per phase or part whose witnesses disagree."""
    out = []
    for row in witness_rows(result):
        if row["agrees"] is False:
            said = ", ".join(f"{w} {row[f'{w}_s']:.2f} s" for w in ("log", "spans")
                             if row[f"{w}_s"] is not None)
            out.append(f"{row['name']}: probes {row['probes_s']:.2f} s, {said}")
    return out
