"""Fit the white-box start-up predictor from result documents and study folders: one small
linear model per phase (``fit_inputs``, what ``coldstart fit`` and ``coldstart predictors
build`` run).

For every configuration (see ``analysis.dataset``) and every phase this

1. chooses the phase's feature among a short list of physically motivated candidates
   (``CANDIDATE_FEATURES``) by leave-one-model-out cross-validation on the training models
   only: the lowest mean squared error of the left-out models' phase seconds, after leaving
   out of that mean as many of the largest errors as the outlier screening of step 2 may
   leave out of a fit (20 %; none without screening or below 6 models); ties go to the
   candidate listed first, the driver ``document.boot_result`` names;
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
(terminal, markdown, plots); this module reads the inputs and fits them, and the command
(``coldstart.commands.fit``) writes and prints what it made.
"""

from __future__ import annotations

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
    GroupFit,
    ShortConfiguration,
    fit_dataset,
    resolve_holdout,
    short_configurations,
)
from analysis.fit.predictor_document import predictor_document
from analysis.fit.targets import RESIDUAL
from analysis.predictor_file import PredictorFile
from analysis.regression import FitError
from document.boot_result import PHASE_BY_NAME, PHASE_NAMES, SUBPHASE_NAMES, BootResult
from document.errors import InputError

__all__ = ["Fitted", "fit_inputs", "parse_forced"]


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

    def predictor(self) -> PredictorFile:
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
