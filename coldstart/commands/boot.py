"""``coldstart boot``: boot vLLM once, print the phases as they happen, write the BootResult.

    coldstart boot --model smollm2-135m --loader safetensors --compile-cache cold \\
        --page-cache warm [--out result.json]

``--model`` is a fixture name (``coldstart fixtures list``) or a model folder.
Exit codes: 0 measured, 1 the boot failed (the result is still written), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from coldstart.cli import check_output
from document.boot_result import (
    COMPILE_CACHE_MODES,
    ENTRYPOINTS,
    LOADERS,
    PAGE_CACHE_MODES,
    PHASES,
    BootResult,
)
from document.errors import InputError
from harness.boot import run_boot
from harness.spec import BootError, BootSpec, resolve_model


def _engine_arg(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"engine argument {text!r} is not KEY=VALUE")
    key, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip().replace("-", "_"), value


def render_table(result: BootResult) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{result.model}  loader={result.loader}  compile_cache="
                        f"{result.compile_cache}  page_cache={result.page_cache}  "
                        f"[{result.state}]")
    table.add_column("phase")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    table.add_column("note")
    wall = result.wall_s or 0.0
    for phase in PHASES:
        value = result.phases.get(phase.name)
        table.add_row(phase.name, "-" if value is None else f"{value:.3f}",
                      "" if value is None or not wall else f"{value / wall:.1%}",
                      result.phase_notes.get(phase.name, ""))
        for sub in phase.subphases:
            sv = result.subphases.get(f"{phase.name}.{sub}")
            if sv is not None:
                table.add_row(f"  .{sub}", f"{sv:.3f}", "", "")
    table.add_row("residual", f"{result.residual_s or 0:.3f}",
                  f"{(result.residual_s or 0) / wall:.1%}" if wall else "", "between phases")
    table.add_row("[b]wall (ready)[/b]", f"[b]{wall:.3f}[/b]", "", "")
    if result.ttft_s is not None:
        table.add_row("time to first token", f"{result.ttft_s:.3f}", "", "after ready")
    Console(stderr=True).print(table)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.splitlines()[0].partition(": ")[2]
    parser.add_argument("--model", required=True, help="fixture name or model folder")
    parser.add_argument("--loader", default="safetensors", choices=LOADERS)
    parser.add_argument("--compile-cache", default="cold", choices=COMPILE_CACHE_MODES)
    parser.add_argument("--page-cache", default="warm", choices=PAGE_CACHE_MODES)
    parser.add_argument("--entrypoint", default="offline", choices=ENTRYPOINTS)
    parser.add_argument("--engine-arg", action="append", type=_engine_arg, default=[],
                        metavar="KEY=VALUE", help="extra vLLM engine argument (repeatable)")
    parser.add_argument("--tensorizer-uri", type=Path,
                        help="serialized model for --loader tensorizer")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="hard limit for the boot (s)")
    parser.add_argument("--check-answer", action="store_true",
                        help="judge the answer against a float32 reference of this machine "
                             "(a real model: random weights answer nothing to judge)")
    parser.add_argument("--answer-reference", type=Path, metavar="FOLDER",
                        help="with --check-answer: the pristine model folder the answer should "
                             "come from (default: the folder booted)")
    parser.add_argument("--spans", nargs="?", const="http/protobuf", default=None,
                        choices=("http/protobuf", "grpc"), metavar="PROTOCOL",
                        help="record vLLM's own OpenTelemetry start-up spans (a receiver in "
                             "this process; http/protobuf unless grpc is named) and hold them "
                             "against the probes")
    parser.add_argument("--work-dir", type=Path, help="where the boot's log and events go")
    parser.add_argument("--out", type=Path, default=Path("boot_result.json"))


def span_lines(result) -> list[str]:
    """What the spans witnessed, a line per phase: the spans' seconds beside the probes', or
    why the spans have none."""
    witnessed = result.evidence.span_phases
    lines = [f"spans: {len(result.evidence.spans or [])} received, mapping of vLLM "
             f">= {witnessed.map_since}"
             + (f"; names not mapped (kept): {', '.join(witnessed.unmapped)}"
                if witnessed.unmapped else "")]
    for phase, seconds in witnessed.phases.items():
        agree = witnessed.agreement.get(phase)
        if agree is not None:
            lines.append(f"spans: {phase} {seconds:.2f} s, probes {agree['probes_s']:.2f} s: "
                         + ("agree" if agree["agrees"] else
                            f"DISAGREE (beyond {agree['tolerance_s']:.2f} s)"))
        elif seconds is None:
            lines.append(f"spans: {phase}: {witnessed.notes.get(phase, 'no span')}")
        else:
            lines.append(f"spans: {phase} {seconds:.2f} s (the probes have none)")
    return lines


def run(args: argparse.Namespace) -> int:
    def progress(msg: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)

    # Checked before the boot, not after it: a result is never lost to a bad --out.
    check_output(args.out, "--out")
    if args.answer_reference is not None and not (args.answer_reference / "config.json").is_file():
        raise InputError(f"--answer-reference {args.answer_reference}: not a model folder")
    try:
        name, path = resolve_model(args.model)
        tensorizer_uri = args.tensorizer_uri
        if args.loader == "tensorizer" and tensorizer_uri is None:
            from fixtures.tensorized import ensure_tensorized

            tensorizer_uri = ensure_tensorized(path, progress=progress)
        spec = BootSpec(model=name, model_path=path, loader=args.loader,
                        compile_cache=args.compile_cache, page_cache=args.page_cache,
                        entrypoint=args.entrypoint, engine_kwargs=dict(args.engine_arg),
                        timeout_s=args.timeout, check_answer=args.check_answer,
                        tensorizer_uri=tensorizer_uri, work_dir=args.work_dir,
                        spans=args.spans)
        result = run_boot(spec, progress=progress)
    except BootError as exc:  # a spec that cannot boot: said before any process starts
        raise InputError(str(exc)) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (BootInterrupted)
        print(f"error: interrupted ({exc or 'Ctrl-C'}); the boot's processes were killed",
              file=sys.stderr)
        return 130
    answer_failures: list[str] = []
    if args.check_answer and result.evidence.answer:
        from harness.correctness import judge_answer
        from harness.reference import ReferenceError

        try:  # after the boot, untimed; stored in evidence.answer.verdict
            answer_failures = judge_answer(result, args.answer_reference,
                                           progress=progress).failures
        except ReferenceError as exc:
            answer_failures = [f"not judged: {exc}"]
        for note in result.evidence.known_defects:
            progress(note.note)
    args.out.write_text(result.model_dump_json(indent=2) + "\n")
    render_table(result)
    if result.evidence.span_phases is not None:
        for line in span_lines(result):
            progress(line)
    progress(f"wrote {args.out}")
    if result.state != "measured":
        print(f"error: boot {result.state}: {result.reason}", file=sys.stderr)
        return 1
    if answer_failures:
        print(f"error: answer {result.response_text!r}: {'; '.join(answer_failures)}",
              file=sys.stderr)
        return 1
    return 0
