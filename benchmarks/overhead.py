"""python -m benchmarks.overhead: what the probes (or vLLM's tracing) cost a boot.

Boots the same model alternately with the probes and without them (a bare ``LLM(...)`` in a
fresh process group, only its readiness marked), in ABBA order so drift cancels, after one
discarded boot that warms the framework's own files in the page cache. Prints every pair and
the median ratio instrumented / bare. Exit 0 when the median is within the target
(<= 1.02), 1 when above it, 2 on bad input.

``--of spans``: the same, probed boots with vLLM's OpenTelemetry spans exported to the
harness's receiver against probed boots without (``BootSpec.spans``): what the third witness
costs. No target: the ratio is reported (exit 0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from coldstart.cli import check_output, run_program
from coldstart.errors import InputError
from harness.__main__ import resolve_model
from harness.boot import run_boot
from harness.spec import BootError, BootSpec

# The probes may cost at most 2 % of a boot's ready time (median of the pairs' ratios).
TARGET_RATIO = 1.02


def median_within_target(ratios: list[float], target: float = TARGET_RATIO
                         ) -> tuple[float, bool]:
    """The median of the pairs' instrumented / bare ratios, and whether it is <= ``target``."""
    median = statistics.median(ratios)
    return median, median <= target


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n")[0]
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--compile-cache", default="cold", choices=("cold", "off"))
    parser.add_argument("--of", default="probes", choices=("probes", "spans"),
                        help="what is measured: the probes (vs bare boots) or vLLM's tracing "
                             "(spans on vs off, probed both)")
    parser.add_argument("--out", type=Path, default=None, help="write the pairs as JSON")


def run(args: argparse.Namespace) -> int:
    if args.pairs < 1:
        raise InputError("--pairs must be >= 1")
    check_output(args.out, "--out")  # before the boots, not after them
    try:
        name, path = resolve_model(args.model)
    except BootError as exc:  # neither a model folder nor a fixture
        raise InputError(str(exc)) from None
    work = Path(tempfile.mkdtemp(prefix="coldstart-overhead-"))

    spans = args.of == "spans"

    def boot(instrument: bool, tag: str) -> dict:
        # instrument: the thing measured is on (the probes, or with --of spans the spans)
        spec = BootSpec(model=name, model_path=path, compile_cache=args.compile_cache,
                        instrument=instrument or spans, work_dir=work / tag,
                        spans="http/protobuf" if spans and instrument else None)
        result = run_boot(spec)
        if result.ready_s is None:
            raise SystemExit(f"overhead: error: boot {tag} failed: {result.error}")
        # what each boot measured and where its files are (a spans boot's export among them)
        evidence = getattr(result, "evidence", None)
        return {"ready_s": result.ready_s, "phases": getattr(result, "phases", {}),
                "work_dir": getattr(evidence, "work_dir", None)}

    print("overhead: one discarded boot to warm the framework's files", file=sys.stderr)
    boot(False, "discarded")
    pairs = []
    for i in range(args.pairs):
        order = (True, False) if i % 2 == 0 else (False, True)
        boots = {inst: boot(inst, f"{i}-{'probe' if inst else 'bare'}") for inst in order}
        walls = {inst: b["ready_s"] for inst, b in boots.items()}
        pairs.append({"instrumented_s": walls[True], "bare_s": walls[False],
                      "ratio": walls[True] / walls[False],
                      "instrumented": boots[True], "bare": boots[False]})
        print(f"pair {i + 1}: instrumented {walls[True]:.2f} s, bare {walls[False]:.2f} s, "
              f"ratio {walls[True] / walls[False]:.3f}", flush=True)
    ratios = [p["ratio"] for p in pairs]
    median, ok = median_within_target(ratios)
    what = "spans on/off" if spans else "instrumented/bare"
    print(f"median ratio {what} over {len(pairs)} pairs: {median:.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f}"
          + ("): measured, no target" if spans else
             f"; target <= {TARGET_RATIO}): {'within' if ok else 'ABOVE'} target"))
    if args.out:
        args.out.write_text(json.dumps({"model": name, "of": args.of,
                                        "compile_cache": args.compile_cache,
                                        "pairs": pairs, "median_ratio": median,
                                        "target_ratio": TARGET_RATIO, "within_target": ok},
                                       indent=2))
    return 0 if ok or spans else 1


def main(argv: list[str] | None = None) -> int:
    return run_program("benchmarks.overhead", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
