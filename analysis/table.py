"""coldstart table out.json [--markdown]: one row per cell, the phases as columns.

What an operator reads first: where the seconds of each configuration went, what the caches
did, and how fast the weights came in against what the storage gives.
"""

from __future__ import annotations

from document import CELL_AXES
from document.boot_result import PHASE_NAMES, BootResult
from document.evidence import WeightsFacts

SHORT = {"framework_bootstrap": "bootstrap", "tokenizer_init": "tokenizer",
         "model_loading": "loading", "torch_compile": "compile",
         "kv_cache_profiling": "kv profiling", "cuda_graph_capture": "graphs"}


def rows(results: list[BootResult]) -> tuple[list[str], list[list[str]]]:
    # The engine-argument and variable axes a matrix adds (VLLM_USE_AOT_COMPILE): without
    # them two cells that differ in one read as the same row.
    extra = list(dict.fromkeys(k for r in results for k in r.axes))
    headers = [*CELL_AXES, *extra, "state",
               *(SHORT[p] for p in PHASE_NAMES), "residual", "ready (s)", "ttft (s)",
               "compile cache seen", "weights GB/s", "of floor", "read from storage"]
    out = []
    for r in results:
        w = r.evidence.weights or WeightsFacts()

        def num(v, fmt="{:.2f}"):
            return "-" if v is None else fmt.format(v)

        out.append([*(getattr(r, axis) or "-" for axis in CELL_AXES),
                    *(str(r.axes[k]) if k in r.axes else "-" for k in extra), r.state,
                    *(num(r.phases[p]) for p in PHASE_NAMES),
                    num(r.residual_s), num(r.wall_s, "{:.1f}"), num(r.ttft_s, "{:.3f}"),
                    r.compile_cache_observed or "-", num(w.load_gbps),
                    num(w.fraction_of_floor, "{:.0%}"), num(w.storage_read_bytes, "{:,}")])
    return headers, out


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("analysis.table"))
