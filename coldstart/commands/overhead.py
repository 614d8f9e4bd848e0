"""``coldstart overhead``: what the probes (or vLLM's tracing) cost a boot.

    coldstart overhead [--model smollm2-135m] [--pairs 5] [--of probes|spans] [--out FILE]

Boots the model in ABBA pairs, instrumented and bare (``benchmarks.overhead``), prints every
pair and the median ratio instrumented / bare. Exit 0 when the median is within the target
(<= 1.02), 1 when above it, 2 on bad input. ``--of spans``: vLLM's spans on against off, no
target (exit 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.overhead import (
    OVERHEAD_OF,
    TARGET_RATIO,
    BootFailed,
    measure_pairs,
    median_within_target,
)
from coldstart.cli import check_output
from document.errors import InputError
from harness.spec import BootError, resolve_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--compile-cache", default="cold", choices=("cold", "off"))
    parser.add_argument("--of", default="probes", choices=OVERHEAD_OF,
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
    print("overhead: one discarded boot to warm the framework's files", file=sys.stderr)
    try:
        pairs = measure_pairs(name, path, args.pairs, work, compile_cache=args.compile_cache,
                              of=args.of, progress=lambda line: print(line, flush=True))
    except BootFailed as exc:
        raise SystemExit(f"overhead: error: {exc}") from None
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
