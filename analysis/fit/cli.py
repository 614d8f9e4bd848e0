"""Fit the white-box start-up predictor: one small linear model per phase.

    python -m analysis.fit results.json [more.json ...] [--study FIGURE_DIR]
        [--holdout NAME,...] [--features FILE] [--out-dir DIR] [--json FILE]

For every configuration (see ``analysis.dataset``) and every phase this

1. chooses the phase's feature among a short list of physically motivated candidates
   (``CANDIDATE_FEATURES``) by leave-one-model-out cross-validation on the training models
   only: the lowest mean squared error of the left-out models' phase seconds, after leaving
   out of that mean as many of the largest errors as the outlier screening of step 2 may
   leave out of a fit (20 %; none without screening or below 6 models); ties go to the
   candidate listed first, the driver ``harness.schema`` names;
2. fits ``seconds = intercept + slope * feature`` by OLS after screening outliers
   (Bonferroni-corrected externally studentized residuals; ``analysis.regression``); a phase that
   is constant per machine gets the intercept alone. A phase of ``SPLIT_PHASES``
   (torch_compile: Dynamo tracing, Inductor compiling, loading compiled graphs, three
   mechanisms) is fitted as the sum of its measured sub-phases, each with its own feature
   chosen as in step 1, when every training model measured them and they add up to the
   phase; otherwise as one phase. A sub-phase with the same seconds for every model (the
   graph load on a cold cache: 0) is a constant;
3. reports the Pearson correlation of the phase with its feature and its 95 % interval
   (``scipy.stats.pearsonr(...).confidence_interval()``, Fisher's z transform; R. A. Fisher,
   "On the probable error of a coefficient of correlation deduced from a small sample",
   *Metron* 1, 1921);
4. cross-validates the summed prediction leaving one model out at a time (every phase refitted
   without it; the features stay those chosen in step 1, so the figure is slightly
   optimistic) and, with ``--holdout``, evaluates on models the fit never saw;
5. with ``--lomo``, validates the whole method leaving each model out (held-out ones too):
   every choice of steps 1-2 made again without it (``analysis.fit.lomo``).

The boot's total is its wall time when every boot has one (the phases plus an unattributed
``residual`` fitted as a constant), else the sum of the phases. Error metrics come from
``sklearn.metrics``; cross-validation splits from ``sklearn.model_selection.LeaveOneOut``
(M. Stone, "Cross-validatory choice and assessment of statistical predictions", *JRSS B* 36,
1974).
The work is split by job: ``analysis.fit.targets`` (a row's seconds, a line's points,
errors and correlations), ``analysis.fit.selection`` (steps 1 and the split of step 2),
``analysis.fit.validate`` (step 4), ``analysis.fit.groups`` (the group fit),
``analysis.fit.predictor_document`` (the predictor file and ``--json``) and ``analysis.fit.markdown``
(terminal, markdown, plots); this module is the command, and its names stay importable
from here.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from analysis.dataset import (
    Dataset,
    build_dataset,
    config_key,
    input_machines,
    merged_machine,
    one_machine,
    read_inputs,
)
from analysis.features.model_features import ModelFeatures
from analysis.features.sources import read_features_json
from analysis.fit.groups import (
    MIN_TRAINING_MODELS,
    GroupFit,
    ShortConfiguration,
    fit_dataset,
    resolve_holdout,
    short_configurations,
)
from analysis.fit.lomo import lomo_line, nested_lomo
from analysis.fit.markdown import print_terminal, write_markdown
from analysis.fit.predictor_document import predictor_document, summary_json
from analysis.fit.summary import needed_run, needed_run_line, print_summary, summarize
from analysis.fit.targets import RESIDUAL
from analysis.knobs import knob_effects, knob_lines, machine_label
from analysis.predictor_file import write_predictor
from analysis.regression import FitError
from coldstart.cli import check_output, run_program
from coldstart.errors import InputError
from harness.schema import PHASE_BY_NAME, PHASE_NAMES, SUBPHASE_NAMES, BootResult

__all__ = ["Fitted", "fit_inputs", "main", "parse_forced"]


def parse_forced(items: Sequence[str]) -> dict[str, str]:
    """``--feature PHASE=FEATURE`` items as phase -> feature."""
    forced = {}
    for item in items:
        phase, sep, feature = item.partition("=")
        if not sep or (phase not in PHASE_BY_NAME and phase not in SUBPHASE_NAMES
                       and phase != RESIDUAL):
            raise InputError(f"--feature {item!r}: expected PHASE=FEATURE with a phase of "
                             f"{', '.join(PHASE_NAMES)} or a sub-phase (PHASE.SUB); forcing "
                             "a phase of SPLIT_PHASES fits it as one phase")
        forced[phase] = feature
    return forced


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Fit one linear model per start-up phase; cross-validate; report."
    parser.add_argument("results", nargs="*", help="result documents (harness.schema)")
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


@dataclass
class Fitted:
    """What ``fit_inputs`` made of its inputs: the configurations fitted (none when every
    one was too small), the data they were fitted on, and the ones set aside."""

    fits: list[GroupFit]
    data: Dataset | None
    inputs: list[str]  # the result files and study folders, as given
    machine: dict[str, Any]  # the one machine every input was measured on
    short: dict[Any, ShortConfiguration]  # configurations too small to fit, by key
    boots: list[BootResult]  # every round read (what a run with nothing to fit summarizes)
    # Cells measured that failed their checks, one line each: never fitted, always named.
    left_out: list[str] = field(default_factory=list)

    def predictor(self) -> dict[str, Any]:
        """The predictor file of the fitted configurations (``analysis.fit.predictor_document``)."""
        return predictor_document(self.fits, self.inputs, machine=self.machine)


def fit_inputs(results: Sequence[str], *, study: Sequence[str] = (),
               study_logs: str | None = None, features: Sequence[str] = (),
               holdout: Sequence[str] = (),
               forced: dict[str, str] | None = None,
               outlier_alpha: float | None = 0.05) -> Fitted:
    """Fit result documents and study folders: the library form of ``analysis.fit``'s
    command (``forced``: phase -> feature, as ``--feature``; ``outlier_alpha`` None is
    ``--no-outlier-screening``)."""
    if study_logs and not study:
        raise InputError("--study-logs needs --study FOLDER")
    results = list(dict.fromkeys(str(Path(p)) for p in results))
    model_features: dict[str, ModelFeatures] = {}
    files = read_inputs(results)
    # A cell that failed its checks (page cache not evicted, a probe that found nothing)
    # measured something other than its cell: it is left out and named, never fitted.
    failed_checks = [(p, c) for p, f in files.items() for c in f.cells if c.outcome != c.state]
    left_out = [f"left out, failed its checks: {p}: {c.id}: {'; '.join(c.checks_failed)[:200]}"
                for p, c in failed_checks]
    skip = {id(r) for _, c in failed_checks for r in (c.headline, *c.rounds)}
    boots = [r for f in files.values() for r in f.boots if id(r) not in skip]
    machines = input_machines(files)
    studied: list[BootResult] = []
    for s in study:
        from analysis.study import read_study

        read = read_study(s, logs=study_logs)
        studied.extend(read.results)
        model_features.update(read.features)
        machines[str(s)] = read.machine
    boots.extend(studied)
    mixed = one_machine(machines)
    if mixed:
        raise InputError(mixed)
    for f in features:
        model_features.update(read_features_json(f))
    inputs = [str(Path(p)) for p in [*results, *study]]
    measured = [r for r in boots if r.state == "measured"]
    if not measured:
        raise FitError("no measured boots in the input" + (
            f" (left out, failed their checks: {len(left_out)} cell(s))" if left_out else ""))
    held = resolve_holdout((r.model for r in measured), list(holdout))
    # Configurations too small to fit are set aside before any model feature is read: their
    # model folders need not be on this machine.
    short = short_configurations(measured, held)
    rounds = [r for f in files.values() for r in f.rounds if id(r) not in skip] + studied
    if all(config_key(r) in short for r in measured):
        return Fitted([], None, inputs, merged_machine(machines), short, rounds, left_out)
    data = build_dataset([r for r in boots if config_key(r) not in short or
                          r.state != "measured"], model_features, inputs)
    fitted_models = {r.model for r in data.rows}
    fits = fit_dataset(data, holdout=[h for h in held if h in fitted_models],
                       forced=forced or {}, outlier_alpha=outlier_alpha)
    return Fitted(fits, data, inputs, merged_machine(machines), short, rounds, left_out)


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
    needs (``analysis.fit.summary``); no predictor is written. The first and last lines are
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


def main(argv: list[str] | None = None) -> int:
    return run_program("analysis.fit", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
