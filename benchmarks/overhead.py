"""What the probes (or vLLM's tracing) cost a boot (``coldstart overhead``).

Boots the same model alternately with the probes and without them (a bare ``LLM(...)`` in a
fresh process group, only its readiness marked), in ABBA order so drift cancels, after one
discarded boot that warms the framework's own files in the page cache. The verdict is the
median ratio instrumented / bare against the target (<= 1.02).

``of="spans"``: the same, probed boots with vLLM's OpenTelemetry spans exported to the
harness's receiver against probed boots without (``BootSpec.spans``): what the third witness
costs. No target: the ratio is reported.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

from harness.boot import run_boot
from harness.spec import BootSpec

# The probes may cost at most 2 % of a boot's ready time (median of the pairs' ratios).
TARGET_RATIO = 1.02
OVERHEAD_OF = ("probes", "spans")


class BootFailed(RuntimeError):
    """A boot of the pairs did not become ready: no ratio to take."""


def median_within_target(ratios: list[float], target: float = TARGET_RATIO
                         ) -> tuple[float, bool]:
    """The median of the pairs' instrumented / bare ratios, and whether it is <= ``target``."""
    median = statistics.median(ratios)
    return median, median <= target


def measure_pairs(name: str, path: Path, pairs: int, work: Path, *, compile_cache: str = "cold",
                  of: str = "probes", progress: Callable[[str], None] = lambda _m: None
                  ) -> list[dict]:
    """One discarded boot, then ``pairs`` pairs of boots (instrumented and not, ABBA), each
    pair with its ready times and ratio; ``progress`` hears each pair."""
    spans = of == "spans"

    def boot(instrument: bool, tag: str) -> dict:
        # instrument: the thing measured is on (the probes, or with of="spans" the spans)
        spec = BootSpec(model=name, model_path=path, compile_cache=compile_cache,
                        instrument=instrument or spans, work_dir=work / tag,
                        spans="http/protobuf" if spans and instrument else None)
        result = run_boot(spec)
        if result.ready_s is None:
            raise BootFailed(f"boot {tag} failed: {result.error}")
        # what each boot measured and where its files are (a spans boot's export among them)
        evidence = getattr(result, "evidence", None)
        return {"ready_s": result.ready_s, "phases": getattr(result, "phases", {}),
                "work_dir": getattr(evidence, "work_dir", None)}

    boot(False, "discarded")
    measured = []
    for i in range(pairs):
        order = (True, False) if i % 2 == 0 else (False, True)
        boots = {inst: boot(inst, f"{i}-{'probe' if inst else 'bare'}") for inst in order}
        walls = {inst: b["ready_s"] for inst, b in boots.items()}
        measured.append({"instrumented_s": walls[True], "bare_s": walls[False],
                         "ratio": walls[True] / walls[False],
                         "instrumented": boots[True], "bare": boots[False]})
        progress(f"pair {i + 1}: instrumented {walls[True]:.2f} s, bare {walls[False]:.2f} s, "
                 f"ratio {walls[True] / walls[False]:.3f}")
    return measured


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks.overhead"))
