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
   (Bonferroni-corrected externally studentized residuals; ``analysis.model``); a phase that
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
   optimistic) and, with ``--holdout``, evaluates on models the fit never saw.

The boot's total is its wall time when every boot has one (the phases plus an unattributed
``residual`` fitted as a constant), else the sum of the phases. Error metrics come from
``sklearn.metrics``; cross-validation splits from ``sklearn.model_selection.LeaveOneOut``
(M. Stone, "Cross-validatory choice and assessment of statistical predictions", *JRSS B* 36,
1974).
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from analysis._cli import ArgumentParser, InputError, run_cli
from analysis.dataset import (
    Dataset,
    Row,
    build_dataset,
    config_label,
    input_machines,
    merged_machine,
    one_machine,
    read_inputs,
)
from analysis.features import (
    TRAIT_KINDS,
    ModelFeatures,
    feature_unit,
    feature_value,
    read_features_json,
)
from analysis.model import (
    MIN_POINTS_LINEAR,
    FitError,
    PhaseModel,
    Prediction,
    combine_predictions,
    fit_phase,
    screening_budget,
)
from harness.schema import PHASE_BY_NAME, PHASE_NAMES, SCHEMA_VERSION, SUBPHASE_NAMES

__all__ = ["CANDIDATE_FEATURES", "PREDICTOR_SCHEMA_VERSION", "RESIDUAL", "SPLIT_PHASES",
           "GroupFit", "fit_dataset", "fit_group", "main", "predictor_document"]

# Predictor file changelog (bump on any change a reader must know about):
# - 1 (2026-11-29): groups of per-phase PhaseModel objects plus a constant "residual".
# - 2 (2026-12-01): a group's "phases" may hold sub-phases ("torch_compile.dynamo_transform")
#   in place of their phase; "split" maps such a phase to them. The total is still the sum
#   of every entry; a phase's prediction is the sum of its sub-phases'.
PREDICTOR_SCHEMA_VERSION = 2

# The wall time the phases leave unexplained (process exit, KV-cache allocation where a
# reader does not attribute it), predicted as a constant.
RESIDUAL = "residual"

# The physical quantities each phase may scale with; the first is the driver the schema names.
# An empty tuple means constant per machine and vLLM version.
CANDIDATE_FEATURES: dict[str, tuple[str, ...]] = {
    "framework_bootstrap": (),
    # the tokenizer file is parsed: its bytes; the vocabulary is the number of entries
    "tokenizer_init": ("tokenizer_bytes", "vocab_size"),
    # bytes moved from storage to device memory; parameters when bytes are not known
    "model_loading": ("weight_bytes", "params"),
    # generated code loaded (or compiled) per graph piece; one piece per layer
    "torch_compile": ("compiled_graph_bytes", "layers"),
    # the profiling forward pass: FLOPs per token ~ active parameters; weight bytes read;
    # one launch sequence per layer; the KV-cache size per token sets the allocation
    "kv_cache_profiling": ("active_params", "params", "weight_bytes", "layers",
                           "kv_cache_bytes_per_token"),
    # one forward pass per capture size: weights read, parameters, or graph pieces captured
    "cuda_graph_capture": ("weight_bytes_x_capture_sizes", "params_x_capture_sizes",
                           "layers_x_capture_sizes"),
    # torch_compile's sub-phases (fitted in its place, see SPLIT_PHASES).
    # Dynamo traces the Python bytecode of the forward pass: the modules it steps through,
    # a fixed number per decoder layer; or the code the trace becomes
    "torch_compile.dynamo_transform": ("layers", "compiled_graph_bytes"),
    # Inductor generates and compiles code for the graph pieces (a cold cache)
    "torch_compile.inductor_compile": ("compiled_graph_bytes", "layers"),
    # the compiled code is loaded from the cache, one graph piece per layer
    "torch_compile.compiled_graph_load": ("compiled_graph_bytes", "layers"),
}

# Phases fitted as the sum of their sub-phases when every training model measured them and
# they add up to the phase (within SPLIT_TOLERANCE). torch_compile is three mechanisms
# (tracing, compiling, loading code) that scale with different things; the study fits
# Dynamo and graph loading apart too.
SPLIT_PHASES: tuple[str, ...] = ("torch_compile",)
# |phase - sum of its sub-phases| allowed, seconds and share of the phase (logged durations
# are rounded to 0.01 s; "torch.compile takes" can exceed its parts by that).
SPLIT_TOLERANCE_S = 0.05
SPLIT_TOLERANCE_FRACTION = 0.02
# Candidates whose criterion lies within this share of the best one tie, and the one listed
# first wins. Features proportional on the training models (params and weight_bytes of bf16
# checkpoints; layers and a compiled-graph size estimated from the layers) give the same
# lines, their scores differing by float rounding (1e-16 to 1e-5 relative on the CPU run):
# that noise must not choose. A real difference between two features on 17-19 models is
# orders of magnitude larger.
SCORE_TIE_FRACTION = 1e-3

# Subphases whose correlation is reported beside the study's: fitted ones with their own
# feature; those of a phase fitted as one with the phase's feature.
REPORTED_SUBPHASES: tuple[str, ...] = ("torch_compile.dynamo_transform",
                                       "torch_compile.compiled_graph_load")

# A fit explaining less than this share of the variance is called poor in the report.
POOR_R2 = 0.5


# ------------------------------------------------------------------------------ helpers
def _xy(rows: list[Row], target: str, feature: str | None) -> tuple[list[str], list[float] | None,
                                                                      list[float]]:
    """Names, feature values and seconds of the rows that measured ``target``.

    ``target`` is a phase, a subphase (``phase.sub``) or ``residual``.
    """
    names, xs, ys = [], [], []
    for r in rows:
        y = _target_value(r, target)
        if y is None:
            continue
        x = None if feature is None else feature_value(r.features, feature)
        if feature is not None and x is None:
            continue
        names.append(r.model)
        xs.append(x)
        ys.append(y)
    return names, (None if feature is None else xs), ys


def _target_value(r: Row, target: str) -> float | None:
    if target == RESIDUAL:
        if r.wall_s is None:
            return None
        return r.wall_s - sum(v for v in r.phases.values() if v is not None)
    if "." in target:
        return r.subphases.get(target)
    return r.phases.get(target)


def _fit(target: str, rows: list[Row], feature: str | None,
         outlier_alpha: float | None) -> PhaseModel:
    names, x, y = _xy(rows, target, feature)
    scale, unit = feature_unit(feature) if feature else (1.0, "")
    return fit_phase(target, y, names, feature=feature, x=x, feature_scale=scale,
                     feature_unit=unit, outlier_alpha=outlier_alpha)


def _loo_errors(target: str, rows: list[Row], feature: str | None,
                outlier_alpha: float | None) -> dict[str, float]:
    """Left-out model -> (predicted - measured) seconds, refitting without it each time.

    Raises
    ------
    FitError
        A fold cannot be fitted (the feature has one value once that model is left out);
        the message names the model.
    """
    from sklearn.model_selection import LeaveOneOut

    names, x, y = _xy(rows, target, feature)
    scale, unit = feature_unit(feature) if feature else (1.0, "")
    errors = {}
    for train, test in LeaveOneOut().split(np.zeros(len(y))):
        i = int(test[0])
        try:
            m = fit_phase(target, [y[j] for j in train], [names[j] for j in train],
                          feature=feature, x=None if x is None else [x[j] for j in train],
                          feature_scale=scale, feature_unit=unit, outlier_alpha=outlier_alpha)
        except FitError as exc:
            raise FitError(f"without {names[i]}: {exc}") from exc
        errors[names[i]] = m.predict(None if x is None else x[i]).mean_s - y[i]
    return errors


def _metrics(predicted: list[float], measured: list[float]) -> dict[str, float]:
    from sklearn.metrics import (
        max_error,
        mean_absolute_error,
        mean_absolute_percentage_error,
        mean_squared_error,
    )

    mse = float(mean_squared_error(measured, predicted))
    return {"mse_s": mse, "rmse_s": math.sqrt(mse),
            "mae_s": float(mean_absolute_error(measured, predicted)),
            "max_error_s": float(max_error(measured, predicted)),
            "mape": float(mean_absolute_percentage_error(measured, predicted))}


def _pearson(x: list[float], y: list[float]) -> dict[str, Any]:
    from scipy import stats

    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"r": None, "ci_low": None, "ci_high": None, "n": n}
    res = stats.pearsonr(x, y)
    out: dict[str, Any] = {"r": float(res.statistic), "p_value": float(res.pvalue), "n": n,
                           "ci_low": None, "ci_high": None}
    if n > 3:  # Fisher's z needs n - 3 > 0
        ci = res.confidence_interval(confidence_level=0.95)
        out["ci_low"], out["ci_high"] = float(ci.low), float(ci.high)
    return out


# --------------------------------------------------------------------------- the group fit
@dataclass
class GroupFit:
    """Everything fitted and measured for one configuration."""

    key: dict[str, str | None]
    train: list[str]
    holdout: list[str]
    measured_total: str  # "wall_s" or "phase_sum"
    models: dict[str, PhaseModel]  # phase (and "residual") -> model
    selection: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pcc: dict[str, dict[str, Any]] = field(default_factory=dict)
    cv: dict[str, Any] = field(default_factory=dict)
    holdout_eval: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    notes: dict[str, list[str]] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    split: dict[str, list[str]] = field(default_factory=dict)  # phase -> sub-phases fitted

    @property
    def label(self) -> str:
        return config_label(self.key)


def _trimmed_mse(errors: list[float], k: int) -> float:
    """Mean squared error after leaving out the ``k`` largest absolute errors."""
    sq = sorted(float(e) ** 2 for e in errors)
    kept = sq[:len(sq) - k] if 0 < k < len(sq) else sq
    return float(np.mean(kept))


def _select(phase: str, rows: list[Row], forced: str | None,
            outlier_alpha: float | None) -> tuple[str | None, list[dict[str, Any]], list[str]]:
    """The phase's feature and the cross-validation table that chose it.

    Each candidate is scored by the leave-one-model-out errors of the phase on ``rows`` (the
    training models): their mean square after leaving out the ``k`` largest, ``k`` = as many
    models as the outlier screening may leave out of a fit (``screening_budget``: 20 % of the
    models, 0 without screening or below 6 models). A fit is allowed to set that many models
    aside as not described by its line; the choice of its feature does the same, so that one
    or two models no candidate describes (the hybrid Mamba granite4.0-h) do not decide it.
    The plain LOO MSE is reported beside it.
    """
    notes: list[str] = []
    if forced is not None:
        feature = None if forced == "constant" else forced
        return feature, [{"feature": forced, "loo_mse_s2": None, "loo_trimmed_mse_s2": None,
                          "chosen": True, "why": "given with --feature"}], notes
    candidates = CANDIDATE_FEATURES.get(phase, ())
    measured = [r for r in rows if _target_value(r, phase) is not None]
    seconds = [_target_value(r, phase) for r in measured]
    if candidates and len(seconds) >= 2 and max(seconds) - min(seconds) == 0:
        notes.append(f"{seconds[0]:g} s for every training model: fitted as a constant")
        return None, [{"feature": c, "loo_mse_s2": None, "loo_trimmed_mse_s2": None,
                       "chosen": False, "why": "the phase has the same seconds for every model"}
                      for c in candidates], notes
    # A model none of whose candidates is known cannot be on any line of this phase: it is
    # left out of the choice (and so of the fit; fit_group notes it), rather than making
    # every candidate unusable and the phase a constant.
    known = [r for r in measured
             if any(feature_value(r.features, c) is not None for c in candidates)]
    if known:
        measured = known
    table: list[dict[str, Any]] = []
    usable = []
    for c in candidates:
        missing = [r.model for r in measured if feature_value(r.features, c) is None]
        values = {feature_value(r.features, c) for r in measured} - {None}
        if missing:
            table.append({"feature": c, "loo_mse_s2": None, "loo_trimmed_mse_s2": None,
                          "chosen": False,
                          "why": f"unknown for {len(missing)} model(s): {', '.join(missing[:3])}"})
        elif len(values) < 2:
            table.append({"feature": c, "loo_mse_s2": None, "loo_trimmed_mse_s2": None,
                          "chosen": False, "why": "same value for every model"})
        else:
            usable.append(c)
    if not usable:
        if candidates:
            notes.append("no candidate feature is known for every model: fitted as a constant")
        return None, table, notes
    if len(measured) <= MIN_POINTS_LINEAR:
        notes.append(f"{len(measured)} models are too few to compare features by "
                     f"cross-validation: took {usable[0]}")
        table += [{"feature": c, "loo_mse_s2": None, "loo_trimmed_mse_s2": None,
                   "chosen": c == usable[0], "why": ""} for c in usable]
        return usable[0], table, notes
    k = screening_budget(len(measured), outlier_alpha)
    mse, score = {}, {}
    for c in usable:
        try:
            errors = list(_loo_errors(phase, measured, c, outlier_alpha).values())
        except FitError as exc:
            # One model alone gives the feature its spread (one 16-layer model among 4-layer
            # ones): without it the fold has no line, so the candidate has no score, and a
            # line whose slope rests on one model is not one the criterion can vouch for.
            table.append({"feature": c, "loo_mse_s2": None, "loo_trimmed_mse_s2": None,
                          "chosen": False,
                          "why": f"not scored: a leave-one-out fold cannot be fitted ({exc})"})
            continue
        mse[c] = float(np.mean(np.square(errors)))
        score[c] = _trimmed_mse(errors, k)
    scored = [c for c in usable if c in score]
    if not scored:
        notes.append("no candidate feature could be cross-validated (a leave-one-out fold "
                     "has a single feature value): fitted as a constant")
        return None, table, notes
    lowest = min(score[c] for c in scored)
    best = next(c for c in scored if score[c] <= lowest * (1 + SCORE_TIE_FRACTION))
    table += [{"feature": c, "loo_mse_s2": mse[c], "loo_trimmed_mse_s2": score[c],
               "trimmed": k, "chosen": c == best, "why": ""} for c in scored]
    return best, table, notes


def _split_targets(phase: str, rows: list[Row]) -> tuple[list[str] | None, str | None]:
    """The sub-phases to fit in place of ``phase``, or None (fit the phase) and why.

    Every training model that measured the phase must have measured the same sub-phases
    (at least two), and they must add up to the phase within the tolerance.
    """
    measured = [r for r in rows if _target_value(r, phase) is not None]
    subs = [s for s in SUBPHASE_NAMES if s.startswith(phase + ".")]
    present = [s for s in subs if any(s in r.subphases for r in measured)]
    if not present:
        return None, None
    if len(present) < 2:
        return None, (f"only {present[0]} of its sub-phases is measured: fitted as one phase")
    lacking = [r.model for r in measured if any(s not in r.subphases for s in present)]
    if lacking:
        return None, (f"not every model measured its sub-phases ({', '.join(lacking[:3])} "
                      "lack some): fitted as one phase")
    off = []
    for r in measured:
        total = _target_value(r, phase)
        parts = sum(r.subphases[s] for s in present)
        if abs(total - parts) > max(SPLIT_TOLERANCE_S, SPLIT_TOLERANCE_FRACTION * total):
            off.append(f"{r.model} {total:.2f} s vs {parts:.2f} s")
    if off:
        return None, (f"its sub-phases do not add up to it ({'; '.join(off[:3])}): fitted as "
                      "one phase")
    return present, (f"fitted as the sum of its sub-phases {', '.join(present)}, each with its "
                     "own feature")


def _predict_row(models: dict[str, PhaseModel], features: ModelFeatures,
                 alpha: float = 0.05) -> tuple[dict[str, Prediction], Prediction]:
    parts = {}
    for name, m in models.items():
        x = None if m.feature is None else feature_value(features, m.feature)
        parts[name] = m.predict(x, alpha)
    return parts, combine_predictions(list(parts.values()), alpha)


def _measured_total(r: Row, how: str) -> float | None:
    if how == "wall_s":
        return r.wall_s
    return sum(v for v in r.phases.values() if v is not None)


def _phase_notes(phase: str, model: PhaseModel, rows: list[Row]) -> list[str]:
    """Say when a fit is poor and which models (and what kind of models) make it so."""
    notes = []
    by_name = {r.model: r for r in rows}
    for name, p in model.outliers.items():
        r = by_name[name]
        x = None if model.feature is None else feature_value(r.features, model.feature)
        line = model.predict(x).mean_s
        traits = ", ".join(r.features.traits())
        notes.append(f"{name}{f' ({traits})' if traits else ''} left out as an outlier "
                     f"(Bonferroni p = {p:.2g}): measured {_target_value(r, phase):.2f} s, "
                     f"the line says {line:.2f} s")
    if model.feature is not None and model.r2 is not None and model.r2 < POOR_R2:
        notes.append(f"poor fit: {model.feature} explains R^2 = {model.r2:.2f} of the variance")
    # Which kinds of model sit off the line: mean |residual| by trait.
    kept = [by_name[n] for n in model.models]
    resid = {}
    for r in kept:
        x = None if model.feature is None else feature_value(r.features, model.feature)
        resid[r.model] = _target_value(r, phase) - float(
            np.asarray(model.coefficients) @ model._row(x))
    for trait in TRAIT_KINDS:
        members = [r.model for r in kept if trait in r.features.trait_kinds()]
        others = [n for n in resid if n not in members]
        if not members or not others:
            continue
        m_in = float(np.mean([abs(resid[n]) for n in members]))
        m_out = float(np.mean([abs(resid[n]) for n in others]))
        if m_in > 2 * m_out and m_in - m_out > 0.05:
            notes.append(f"{trait} models fit worse: mean |residual| {m_in:.2f} s against "
                         f"{m_out:.2f} s for the others ({', '.join(members)})")
    return notes


def _split_pcc(phase: str, subs: list[str], models: dict[str, PhaseModel],
               rows: list[Row]) -> dict[str, Any]:
    """A split phase's correlation: measured seconds against the sum of its sub-phase lines.

    Over the models no sub-phase fit screened out (``r``) and over all (``r_all``); with one
    feature per sub-phase there is no single feature to correlate with.
    """
    names, fitted, measured = [], [], []
    for r in rows:
        y = _target_value(r, phase)
        if y is None:
            continue
        total = 0.0
        for s in subs:
            m = models[s]
            x = None if m.feature is None else feature_value(r.features, m.feature)
            if m.feature is not None and x is None:
                break
            total += float(np.asarray(m.coefficients) @ m._row(x))
        else:
            names.append(r.model)
            fitted.append(total)
            measured.append(y)
    screened = sorted({n for s in subs for n in models[s].outliers})
    kept = [i for i, n in enumerate(names) if n not in screened]
    entry = _pearson([fitted[i] for i in kept], [measured[i] for i in kept])
    everything = _pearson(fitted, measured)
    features = {s: models[s].feature or "constant" for s in subs}
    entry.update(feature="sum of sub-phases: " + ", ".join(
        f"{s.split('.', 1)[1]} ~ {f}" for s, f in features.items()), subphases=features,
        outliers=screened, r_all=everything["r"], n_all=everything["n"])
    return entry


def fit_group(rows: list[Row], *, holdout: list[str] | None = None,
              forced: dict[str, str] | None = None,
              outlier_alpha: float | None = 0.05) -> GroupFit:
    """Fit every phase of one configuration and evaluate the summed prediction.

    Parameters
    ----------
    rows : one per model, all of the same configuration.
    holdout : models kept out of every fit and evaluated at the end.
    forced : ``{phase: feature}`` to skip the selection (``"constant"`` for the intercept).
    outlier_alpha : level of the Bonferroni outlier screening (None: none).

    Raises
    ------
    FitError
        A phase has fewer measured models than its fit needs.
    """
    holdout = list(holdout or [])
    forced = forced or {}
    train_rows = [r for r in rows if r.model not in holdout]
    hold_rows = [r for r in rows if r.model in holdout]
    if not train_rows:
        raise FitError("no models left to fit after the holdout")
    how = "wall_s" if all(r.wall_s is not None for r in rows) else "phase_sum"
    models: dict[str, PhaseModel] = {}
    selection: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, list[str]] = {}
    pcc: dict[str, dict[str, Any]] = {}
    split: dict[str, list[str]] = {}
    targets: list[str] = []
    for phase in PHASE_NAMES:
        if not any(_target_value(r, phase) is not None for r in train_rows):
            targets.append(phase)  # not applicable, below
            continue
        subs, why = (None, None)
        if phase in SPLIT_PHASES and phase not in forced:
            subs, why = _split_targets(phase, train_rows)
        if why:
            notes[phase] = [why]
        if subs:
            split[phase] = subs
            targets += subs
        else:
            targets.append(phase)
    if how == "wall_s":
        targets.append(RESIDUAL)
    for target in targets:
        measured = [r for r in train_rows if _target_value(r, target) is not None]
        if not measured:
            models[target] = PhaseModel(phase=target, status="not_applicable",
                                        note="no training boot measured this phase")
            continue
        feature, table, target_notes = _select(target, train_rows, forced.get(target),
                                               outlier_alpha)
        selection[target] = table
        model = _fit(target, train_rows, feature, outlier_alpha)
        models[target] = model
        if feature is not None:
            lacking = [r.model for r in measured if feature_value(r.features, feature) is None]
            if lacking:
                target_notes = target_notes + [
                    f"left out of this fit, {feature} unknown: {', '.join(lacking)}"]
        notes[target] = notes.get(target, []) + target_notes + _phase_notes(target, model,
                                                                            train_rows)
        if target == RESIDUAL:
            continue
        names, x, y = _xy(train_rows, target, feature)
        if feature is None:
            pcc[target] = {"r": None, "ci_low": None, "ci_high": None, "n": len(y),
                           "feature": "constant", "outliers": list(model.outliers)}
            continue
        kept = [i for i, n in enumerate(names) if n not in model.outliers]
        entry = _pearson([x[i] for i in kept], [y[i] for i in kept])
        everything = _pearson(x, y)
        entry.update(feature=feature, outliers=list(model.outliers), r_all=everything["r"],
                     n_all=everything["n"])
        pcc[target] = entry
    for phase, subs in split.items():
        pcc[phase] = _split_pcc(phase, subs, models, train_rows)
    for sub in REPORTED_SUBPHASES:
        phase = sub.split(".")[0]
        m = models.get(phase)
        if sub in pcc or m is None or m.feature is None:
            continue
        names, x, y = _xy(train_rows, sub, m.feature)
        kept = [i for i, n in enumerate(names) if n not in m.outliers]
        if len(kept) >= 3:
            entry = _pearson([x[i] for i in kept], [y[i] for i in kept])
            entry.update(feature=m.feature, outliers=[n for n in m.outliers if n in names])
            pcc[sub] = entry

    fit = GroupFit(key=dict(rows[0].config), train=[r.model for r in train_rows],
                   holdout=[r.model for r in hold_rows], measured_total=how, models=models,
                   selection=selection, pcc=pcc, notes=notes, rows=rows, split=split)
    fit.cv = _cross_validate(train_rows, models, how, outlier_alpha)
    if hold_rows:
        fit.holdout_eval = _evaluate(models, hold_rows, how, split)
    fit.baseline = study_method_baseline(train_rows, hold_rows)
    return fit


def _complete(r: Row, models: dict[str, PhaseModel], how: str) -> bool:
    if how == "wall_s" and r.wall_s is None:
        return False
    return all(_target_value(r, p) is not None for p, m in models.items()
               if m.status == "fit" and p != RESIDUAL)


def _missing_feature(r: Row, models: dict[str, PhaseModel]) -> str | None:
    """A feature some fitted line needs that ``r`` lacks (and that line), or None."""
    for p, m in models.items():
        if m.status == "fit" and m.feature and feature_value(r.features, m.feature) is None:
            return f"{m.feature} (the {p} line)"
    return None


def _cross_validate(rows: list[Row], models: dict[str, PhaseModel], how: str,
                    outlier_alpha: float | None) -> dict[str, Any]:
    """Leave one model out: refit every phase without it, predict its total."""
    from sklearn.model_selection import LeaveOneOut

    complete = [r for r in rows if _complete(r, models, how)]
    # A model whose total cannot be predicted (a line's feature unknown) is not scored; it
    # still helps fit the lines whose features it has.
    left_out = {r.model: f"{missing} unknown" for r in complete
                if (missing := _missing_feature(r, models))}
    complete = [r for r in complete if r.model not in left_out]
    if len(complete) < MIN_POINTS_LINEAR + 1:
        return {"n": len(complete), "note": "too few complete models to cross-validate",
                "left_out": left_out}
    predicted, measured, per_model = [], [], {}
    fallbacks: list[str] = []
    for train, test in LeaveOneOut().split(np.zeros(len(complete))):
        left = complete[int(test[0])]
        others = [complete[j] for j in train]
        # Models with a missing phase still help fit the phases they measured.
        others += [r for r in rows if r not in complete]
        refit = {}
        try:
            for p, m in models.items():
                if m.status != "fit":
                    refit[p] = m
                    continue
                try:
                    refit[p] = _fit(p, others, m.feature, outlier_alpha)
                except FitError as exc:
                    if m.feature is None:
                        raise
                    # Without this model the feature has one value (or too few points): the
                    # fold predicts the phase by the others' mean, what a line through one
                    # x value amounts to. Counted in the figures, and said.
                    refit[p] = _fit(p, others, None, outlier_alpha)
                    fallbacks.append(f"without {left.model}: {p} fitted as a constant ({exc})")
        except FitError as exc:
            fallbacks.append(f"without {left.model}: no fit ({exc}); left out of the figures")
            continue
        _, total = _predict_row(refit, left.features)
        truth = _measured_total(left, how)
        predicted.append(total.mean_s)
        measured.append(truth)
        per_model[left.model] = {"predicted_s": total.mean_s, "measured_s": truth,
                                 "residual_s": truth - total.mean_s}
    if len(per_model) < 2:
        return {"n": len(per_model), "note": "too few models could be cross-validated",
                "fallbacks": fallbacks}
    out: dict[str, Any] = {"n": len(per_model), **_metrics(predicted, measured)}
    out["per_model"] = per_model
    out["fallbacks"] = fallbacks
    out["left_out"] = left_out
    # The same figures without the models some phase fit screened out: what the line does for
    # models like the ones it describes.
    screened = {n for m in models.values() for n in m.outliers}
    inliers = [n for n in per_model if n not in screened]
    if len(inliers) >= 2:
        out["excluding_outliers"] = {
            "n": len(inliers), "models_excluded": sorted(screened & set(per_model)),
            **_metrics([per_model[n]["predicted_s"] for n in inliers],
                       [per_model[n]["measured_s"] for n in inliers])}
    return out


def _evaluate(models: dict[str, PhaseModel], rows: list[Row], how: str,
              split: dict[str, list[str]] | None = None) -> dict[str, Any]:
    predicted, measured, per_model = [], [], {}
    for r in rows:
        missing = _missing_feature(r, models)
        if missing:
            # Held-out models are the evaluation asked for: fewer of them would change the
            # headline figures without a word, so this is an error, not a note.
            raise FitError(f"held-out model {r.model}: {missing} unknown; give its features "
                           "(--features FILE)")
        parts, total = _predict_row(models, r.features)
        truth = _measured_total(r, how)
        if truth is None:
            continue
        predicted.append(total.mean_s)
        measured.append(truth)
        per_model[r.model] = {
            "predicted_s": total.mean_s, "measured_s": truth, "error_s": total.mean_s - truth,
            "low_s": total.low_s, "high_s": total.high_s,
            "inside_interval": total.low_s <= truth <= total.high_s,
            "extrapolated": total.extrapolated,
            "phases": {p: {"predicted_s": parts[p].mean_s, "measured_s": _target_value(r, p)}
                       for p in parts},
        }
        for phase, subs in (split or {}).items():
            # The split phase as a whole: the sum of its sub-phases.
            per_model[r.model]["phases"][phase] = {
                "predicted_s": sum(parts[s].mean_s for s in subs),
                "measured_s": _target_value(r, phase), "subphases": subs}
    if not per_model:
        return {"n": 0, "per_model": {}}
    return {"n": len(per_model), **_metrics(predicted, measured), "per_model": per_model}


# ----------------------------------------------------------------- the study's own method
# The reference study's predictor (its predictor/train_predictor.py): OLS per phase on the
# nominal size, the compiled-graph size, the tokenizer size and size x capture sizes, the
# mean of model_init and of framework_bootstrap as constants, trained on the dense models
# (that is the training set that reproduces the 25.3 s^2). Kept to show the gain.
_STUDY_METHOD: tuple[tuple[str, str | None], ...] = (
    ("model_loading.load_weights", "nominal_params"),
    ("torch_compile.dynamo_transform", "compiled_graph_bytes"),
    ("torch_compile.compiled_graph_load", "compiled_graph_bytes"),
    ("kv_cache_profiling", "nominal_params"),
    ("cuda_graph_capture", "nominal_params_x_capture_sizes"),
    ("tokenizer_init", "tokenizer_bytes"),
    ("model_loading.model_init", None),
    ("framework_bootstrap", None),
)


def study_method_baseline(train: list[Row], holdout: list[Row]) -> dict[str, Any] | None:
    """The study's features and method on this data, evaluated on the held-out models.

    Only for data that carries what the study used (nominal sizes, the subphases, wall
    time); None otherwise.
    """
    if not holdout or any(r.wall_s is None or r.features.nominal_params is None
                          for r in train + holdout):
        return None
    dense = [r for r in train if not r.features.moe]
    try:
        models = {t: _fit(t, dense, f, None) for t, f in _STUDY_METHOD}
    except FitError:
        return None
    predicted, measured, per_model = [], [], {}
    if any(_missing_feature(r, models) for r in holdout):
        return None
    for r in holdout:
        _, total = _predict_row(models, r.features)
        predicted.append(total.mean_s)
        measured.append(r.wall_s)
        per_model[r.model] = {"predicted_s": total.mean_s, "measured_s": r.wall_s}
    return {"method": "study (nominal size; dense training models; no residual)",
            "train": [r.model for r in dense], **_metrics(predicted, measured),
            "per_model": per_model}


# -------------------------------------------------------------------------------- driver
def fit_dataset(data: Dataset, *, holdout: list[str] | None = None,
                forced: dict[str, str] | None = None,
                outlier_alpha: float | None = 0.05) -> list[GroupFit]:
    """Fit each configuration of the data set (see ``fit_group``)."""
    if not data.rows:
        raise FitError("no measured boots in the input")
    known = {r.model.lower(): r.model for r in data.rows}
    wanted = []
    for h in holdout or []:
        if h.lower() not in known:
            raise InputError(f"holdout model {h!r} is not in the data; models: "
                             f"{', '.join(sorted(known.values()))}")
        wanted.append(known[h.lower()])
    groups: dict[Any, list[Row]] = {}
    for r in data.rows:
        groups.setdefault(r.config, []).append(r)
    fits = []
    for key, rows in groups.items():
        try:
            fits.append(fit_group(rows, holdout=wanted, forced=forced,
                                  outlier_alpha=outlier_alpha))
        except FitError as exc:
            label = config_label(key)
            raise FitError(f"{label}: {exc}" if len(groups) > 1 else str(exc)) from exc
    return fits


def predictor_document(fits: list[GroupFit], inputs: list[str], alpha: float = 0.05,
                       machine: dict[str, Any] | None = None) -> dict[str, Any]:
    """The versioned predictor file ``analysis.predict`` reads."""
    return {
        "predictor_schema_version": PREDICTOR_SCHEMA_VERSION,
        "result_schema_version": SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "inputs": inputs,
        # The machine the seconds were measured on (what the inputs say of it): the lines
        # predict that machine only.
        "machine": machine or {},
        "interval_level": 1 - alpha,
        "groups": [{
            "key": f.key,
            "train": f.train,
            "holdout": f.holdout,
            "measured_total": f.measured_total,
            "phases": {p: m.model_dump(mode="json") for p, m in f.models.items()},
            "split": f.split,
            # So predict can say when a model is of a kind the lines did not describe.
            "train_traits": {r.model: r.features.traits() for r in f.rows
                             if r.model in f.train and r.features.traits()},
        } for f in fits],
    }


def summary_json(fits: list[GroupFit]) -> dict[str, Any]:
    """``--json``: PCCs, holdout and cross-validation errors (first group at top level)."""
    def one(f: GroupFit) -> dict[str, Any]:
        hold = f.holdout_eval
        return {
            "config": f.key,
            "train": f.train,
            "pcc": f.pcc,
            "features": {p: m.feature or "constant" for p, m in f.models.items()
                         if m.status == "fit"},
            "selection": f.selection,
            "split": f.split,
            "cv": {k: v for k, v in f.cv.items()},
            "holdout": None if hold is None else {
                "mse_s": hold.get("mse_s"), "mae_s": hold.get("mae_s"),
                "max_error_s": hold.get("max_error_s"), "rmse_s": hold.get("rmse_s"),
                "mape": hold.get("mape"), "n": hold.get("n"),
                "per_model": hold.get("per_model", {})},
            "baseline_study_method": f.baseline,
            "notes": f.notes,
        }
    groups = [one(f) for f in fits]
    return {**groups[0], "groups": groups}


def _parse_forced(items: list[str]) -> dict[str, str]:
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


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="python -m analysis.fit",
        description="Fit one linear model per start-up phase; cross-validate; report.")
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
    parser.add_argument("--out-dir", default="results/fit-report",
                        help="folder for predictor.json, report.md and the plots")
    parser.add_argument("--predictor", help="predictor file (default OUT_DIR/predictor.json)")
    parser.add_argument("--json", help="write PCCs, holdout and CV errors as JSON here")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="no terminal tables")
    args = parser.parse_args(argv)
    if not args.results and not args.study:
        raise InputError("no input: give result files and/or --study FOLDER")
    if args.study_logs and not args.study:
        raise InputError("--study-logs needs --study FOLDER")
    args.results = list(dict.fromkeys(str(Path(p)) for p in args.results))
    if Path(args.out_dir).exists() and not Path(args.out_dir).is_dir():
        # Said before the fit, not after it (mkdir would raise FileExistsError there).
        raise InputError(f"--out-dir {args.out_dir}: is a file, not a folder")

    features: dict[str, ModelFeatures] = {}
    files = read_inputs(args.results)
    results = [r for boots in files.values() for r in boots]
    machines = input_machines(files)
    for s in args.study:
        from analysis.study import read_study

        study = read_study(s, logs=args.study_logs)
        results.extend(study.results)
        features.update(study.features)
        machines[str(s)] = study.machine
    mixed = one_machine(machines)
    if mixed:
        raise InputError(mixed)
    for f in args.features:
        features.update(read_features_json(f))
    inputs = [str(Path(p)) for p in args.results + args.study]
    data = build_dataset(results, features, inputs)
    holdout = [h.strip() for h in args.holdout.split(",") if h.strip()]
    fits = fit_dataset(data, holdout=holdout, forced=_parse_forced(args.feature),
                       outlier_alpha=None if args.no_outlier_screening else 0.05)

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    predictor_path = Path(args.predictor) if args.predictor else out_dir / "predictor.json"
    predictor_path.write_text(json.dumps(predictor_document(
        fits, inputs, machine=merged_machine(machines)), indent=2) + "\n")
    from analysis import report

    md = report.write_markdown(fits, data, out_dir, plots=not args.no_plots,
                               predictor_path=predictor_path)
    if args.json:
        Path(args.json).write_text(json.dumps(summary_json(fits), indent=2) + "\n")
    if not args.quiet:
        report.print_terminal(fits, data)
        print(f"predictor: {predictor_path}  report: {md}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli("analysis.fit", main))
