"""``coldstart fit RESULT.json ... [--study FIGURE_DIR] [--holdout NAME,...] [--features FILE]
[--out-dir DIR] [--json FILE]`` (also ``python -m analysis.fit``, the README's form): the
white-box start-up predictor, one small linear model per phase, fitted by
``analysis.fit.inputs.fit_inputs`` (the method is said there); here the options, the outputs
checked before the fit, the files written and the lines printed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from analysis.fit.groups import MIN_TRAINING_MODELS, GroupFit, ShortConfiguration
from analysis.fit.inputs import fit_inputs, parse_forced
from analysis.fit.lomo import lomo_line, nested_lomo
from analysis.fit.markdown import print_terminal, write_markdown
from analysis.fit.predictor_document import summary_json
from analysis.fit.unfittable import needed_run, needed_run_line, print_summary, summarize
from analysis.knobs import knob_effects, knob_lines, machine_label
from analysis.predictor_file import write_predictor
from coldstart.cli import check_output
from document.boot_result import BootResult
from document.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Fit one linear model per start-up phase; cross-validate; report."
    parser.add_argument("results", nargs="*", help="result documents (document.boot_result)")
    parser.add_argument("--study", action="append", default=[],
                        help="the reference study's figure folder or comparison_results.json")
    parser.add_argument("--study-logs", metavar="FOLDER",
                        help="read the study's model facts (weight bytes, capture sizes, "
                             "architecture) from the boot logs in FOLDER where a figure has "
                             "none of its own (figure-10 and -11 publish averages only)")
    parser.add_argument("--features", action="append", default=[],
                        help="JSON of model features by name (overrides model_path)")
    parser.add_argument("--holdout", default="", help="models to keep out: NAME,NAME,...")
    parser.add_argument("--feature", action="append", default=[], metavar="PHASE=FEATURE",
                        help="force a phase's (or sub-phase's) feature instead of choosing "
                             "it; a forced torch_compile is fitted as one phase")
    parser.add_argument("--no-outlier-screening", action="store_true")
    parser.add_argument("--lomo", action="store_true",
                        help="nested leave-one-model-out: refit the whole selection without "
                             "each model (held-out ones too) and predict it; in --json as "
                             "'lomo', and one line printed")
    parser.add_argument("--out-dir", default="results/fit-report",
                        help="folder for predictor.json, report.md and the plots")
    parser.add_argument("--predictor", help="predictor file (default OUT_DIR/predictor.json)")
    parser.add_argument("--json", help="write PCCs, holdout and CV errors as JSON here")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="no terminal tables")


def run(args: argparse.Namespace) -> int:
    if not args.results and not args.study:
        raise InputError("no input: give result files and/or --study FOLDER")
    if Path(args.out_dir).exists() and not Path(args.out_dir).is_dir():
        # Said before the fit, not after it (mkdir would raise FileExistsError there).
        raise InputError(f"--out-dir {args.out_dir}: is a file, not a folder")
    for path, option in ((args.json, "--json"), (args.predictor, "--predictor")):
        # a file in the out folder is fine: the folder is made for the fit
        if path and Path(path).parent.resolve() != Path(args.out_dir).resolve():
            check_output(path, option)
    forced = parse_forced(args.feature)
    outlier_alpha = None if args.no_outlier_screening else 0.05
    fitted = fit_inputs(args.results, study=args.study, study_logs=args.study_logs,
                        features=args.features,
                        holdout=[h.strip() for h in args.holdout.split(",") if h.strip()],
                        forced=forced, outlier_alpha=outlier_alpha)
    for line in fitted.left_out:  # said even with --quiet, before the fit's own lines
        print(line)
    if not fitted.fits:
        return _summarize(fitted.boots, list(fitted.short.values()), args,
                          machine_label(fitted.machine))
    fits, short = fitted.fits, fitted.short
    if not args.quiet:  # the knobs of the run, ranked, before the fit's lines
        for line in knob_lines(knob_effects(fitted.boots), machine_label(fitted.machine)):
            print(line)
    not_fitted = [c.line() for c in short.values()]

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    predictor_path = Path(args.predictor) if args.predictor else out_dir / "predictor.json"
    write_predictor(fitted.predictor(), predictor_path)
    md = write_markdown(fits, fitted.data, out_dir, plots=not args.no_plots,
                        predictor_path=predictor_path, not_fitted=not_fitted)
    lomo = _nested_lomo(fits, forced=forced, outlier_alpha=outlier_alpha) if args.lomo else None
    if args.json:
        doc = summary_json(fits, not_fitted=[c.as_json() for c in short.values()])
        doc["left_out"] = fitted.left_out
        if lomo is not None:
            doc["lomo"] = lomo[0]
            for group, figures in zip(doc["groups"], lomo):
                group["lomo"] = figures
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    if not args.quiet:
        print_terminal(fits, fitted.data)
    # Said even with --quiet: a configuration of the input was left out.
    for line in not_fitted:
        print(line)
    for f, figures in zip(fits, lomo or []):
        print(("" if len(fits) == 1 else f"{f.label}: ") + lomo_line(figures))
    if not args.quiet:
        print(f"predictor: {predictor_path}  report: {md}")
    return 0


def _nested_lomo(fits: list[GroupFit], *, forced: dict[str, str],
                 outlier_alpha: float | None) -> list[dict[str, Any]]:
    """``analysis.fit.lomo.nested_lomo`` of every group, over all its models."""
    return [nested_lomo(f.rows, forced=forced, outlier_alpha=outlier_alpha) for f in fits]


def _summarize(boots: list[BootResult], short: list[ShortConfiguration], args: Any,
               machine: str | None = None) -> int:
    """A run none of whose configurations can be fitted: what it measured, and the run a fit
    needs (``analysis.fit.unfittable``); no predictor is written. The first and last lines are
    said even with ``--quiet``."""
    summary = summarize(boots, machine)
    most = max(len(c.models) for c in short)
    print(f"nothing to fit: no configuration has the {MIN_TRAINING_MODELS} training models a "
          f"fit needs ({len(short)} configuration{'' if len(short) == 1 else 's'}, at most "
          f"{most} model{'' if most == 1 else 's'} in one); no predictor written")
    if not args.quiet:
        print_summary(summary)
    if args.json:
        doc = {"groups": [], "not_fitted": [c.as_json() for c in short], **summary,
               "needed_run": needed_run()}
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    print(needed_run_line())
    return 0
