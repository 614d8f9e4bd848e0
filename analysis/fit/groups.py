"""Fit every phase of each configuration of a data set: the group fit.

For every configuration (see ``analysis.dataset``) and every phase this chooses the phase's
feature (``analysis.fit.selection``), fits ``seconds = intercept + slope * feature`` by OLS
after screening outliers (Bonferroni-corrected externally studentized residuals;
``analysis.regression``), or the intercept alone for a phase that is constant per machine, or the
sum of its sub-phases' lines (``SPLIT_PHASES``); reports each phase's Pearson correlation with
its feature and its 95 % interval; and scores the summed prediction
(``analysis.fit.validate``).

The boot's total is its wall time when every boot has one (the phases plus an unattributed
``residual`` fitted as a constant), else the sum of the phases.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from analysis.dataset import Dataset, Row, config_key, config_label
from analysis.features.model_features import TRAIT_KINDS, feature_value
from analysis.fit.selection import SPLIT_PHASES, select_feature, split_targets
from analysis.fit.targets import RESIDUAL, fit_target, pearson, target_points, target_value
from analysis.fit.validate import cross_validate, evaluate_holdout, study_method_baseline
from analysis.regression import MIN_POINTS_LINEAR, FitError, PhaseModel
from document.boot_result import PHASE_NAMES, BootResult
from document.errors import InputError

__all__ = ["MIN_TRAINING_MODELS", "POOR_R2", "REPORTED_SUBPHASES", "GroupFit",
           "ShortConfiguration", "fit_dataset", "fit_group", "resolve_holdout",
           "short_configurations"]

# Every phase but framework_bootstrap is fitted on a feature, and a line needs 3 points
# (analysis.regression.MIN_POINTS_LINEAR: one residual degree of freedom for an interval): a
# configuration with fewer training models has no line to fit. It is reported, not fitted,
# so that it does not stop the fit of the others, and its boots need no model features.
MIN_TRAINING_MODELS = MIN_POINTS_LINEAR

# Subphases whose correlation is reported beside the study's: fitted ones with their own
# feature; those of a phase fitted as one with the phase's feature.
REPORTED_SUBPHASES: tuple[str, ...] = ("torch_compile.dynamo_transform",
                                       "torch_compile.compiled_graph_load")

# A fit explaining less than this share of the variance is called poor in the report.
POOR_R2 = 0.5


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


def _seconds(value: float) -> str:
    """Seconds as a note says them: milliseconds below 0.1 s, where 0.00 s would hide that
    a point and its line differ (a compile cache's graph loading takes milliseconds)."""
    return f"{value:.2f} s" if abs(value) >= 0.1 else f"{value * 1e3:.1f} ms"


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
                     f"(Bonferroni p = {p:.2g}): measured {_seconds(target_value(r, phase))}, "
                     f"the line says {_seconds(line)}")
    if model.feature is not None and model.r2 is not None and model.r2 < POOR_R2:
        notes.append(f"poor fit: {model.feature} explains R^2 = {model.r2:.2f} of the variance")
    # Which kinds of model sit off the line: mean |residual| by trait.
    kept = [by_name[n] for n in model.models]
    resid = {}
    for r in kept:
        x = None if model.feature is None else feature_value(r.features, model.feature)
        resid[r.model] = target_value(r, phase) - float(
            np.asarray(model.coefficients) @ model.row(x))
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
        y = target_value(r, phase)
        if y is None:
            continue
        total = 0.0
        for s in subs:
            m = models[s]
            x = None if m.feature is None else feature_value(r.features, m.feature)
            if m.feature is not None and x is None:
                break
            total += float(np.asarray(m.coefficients) @ m.row(x))
        else:
            names.append(r.model)
            fitted.append(total)
            measured.append(y)
    screened = sorted({n for s in subs for n in models[s].outliers})
    kept = [i for i, n in enumerate(names) if n not in screened]
    entry = pearson([fitted[i] for i in kept], [measured[i] for i in kept])
    everything = pearson(fitted, measured)
    features = {s: models[s].feature or "constant" for s in subs}
    entry.update(feature="sum of sub-phases: " + ", ".join(
        f"{s.split('.', 1)[1]} ~ {f}" for s, f in features.items()), subphases=features,
        outliers=screened, r_all=everything["r"], n_all=everything["n"])
    return entry


def fit_group(rows: list[Row], *, holdout: list[str] | None = None,
              forced: dict[str, str] | None = None,
              outlier_alpha: float | None = 0.05, validate: bool = True) -> GroupFit:
    """Fit every phase of one configuration and evaluate the summed prediction.

    Parameters
    ----------
    rows : one per model, all of the same configuration.
    holdout : models kept out of every fit and evaluated at the end.
    forced : ``{phase: feature}`` to skip the selection (``"constant"`` for the intercept).
    outlier_alpha : level of the Bonferroni outlier screening (None: none).
    validate : cross-validate the summed prediction and fit the study's method beside it
        (False: the held-out models are evaluated, nothing else; a fold of
        ``analysis.fit.lomo``).

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
        if not any(target_value(r, phase) is not None for r in train_rows):
            targets.append(phase)  # not applicable, below
            continue
        subs, why = (None, None)
        if phase in SPLIT_PHASES and phase not in forced:
            subs, why = split_targets(phase, train_rows)
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
        measured = [r for r in train_rows if target_value(r, target) is not None]
        if not measured:
            models[target] = PhaseModel(phase=target, status="not_applicable",
                                        note="no training boot measured this phase")
            continue
        feature, table, target_notes = select_feature(target, train_rows, forced.get(target),
                                                      outlier_alpha)
        selection[target] = table
        model = fit_target(target, train_rows, feature, outlier_alpha)
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
        names, x, y = target_points(train_rows, target, feature)
        if feature is None:
            pcc[target] = {"r": None, "ci_low": None, "ci_high": None, "n": len(y),
                           "feature": "constant", "outliers": list(model.outliers)}
            continue
        kept = [i for i, n in enumerate(names) if n not in model.outliers]
        entry = pearson([x[i] for i in kept], [y[i] for i in kept])
        everything = pearson(x, y)
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
        names, x, y = target_points(train_rows, sub, m.feature)
        kept = [i for i, n in enumerate(names) if n not in m.outliers]
        if len(kept) >= 3:
            entry = pearson([x[i] for i in kept], [y[i] for i in kept])
            entry.update(feature=m.feature, outliers=[n for n in m.outliers if n in names])
            pcc[sub] = entry

    fit = GroupFit(key=dict(rows[0].config), train=[r.model for r in train_rows],
                   holdout=[r.model for r in hold_rows], measured_total=how, models=models,
                   selection=selection, pcc=pcc, notes=notes, rows=rows, split=split)
    if validate:
        fit.cv = cross_validate(train_rows, models, how, outlier_alpha)
    if hold_rows:
        fit.holdout_eval = evaluate_holdout(models, hold_rows, how, split)
    if validate:
        fit.baseline = study_method_baseline(train_rows, hold_rows)
    return fit


class ShortConfiguration(NamedTuple):
    """A configuration with fewer than ``MIN_TRAINING_MODELS`` training models."""

    key: tuple[tuple[str, str | None], ...]
    models: list[str]  # its training models
    held_out: list[str]

    @property
    def label(self) -> str:
        return config_label(self.key)

    def line(self) -> str:
        """What it has and what a fit needs, in one line."""
        n = len(self.models)
        has = f"{n} model{'' if n == 1 else 's'}" + (
            f" ({', '.join(self.models)})" if self.models else "")
        held = f", {len(self.held_out)} held out" if self.held_out else ""
        return (f"{self.label}: not fitted: {has}{held}; a fit needs at least "
                f"{MIN_TRAINING_MODELS} training models of one configuration")

    def as_json(self) -> dict[str, Any]:
        return {"config": dict(self.key), "models": self.models, "held_out": self.held_out,
                "needs": MIN_TRAINING_MODELS, "line": self.line()}


def short_configurations(results: list[BootResult], holdout: list[str]
                         ) -> dict[tuple[tuple[str, str | None], ...], ShortConfiguration]:
    """The configurations of the measured boots that have too few training models to fit
    (``MIN_TRAINING_MODELS``), by their key (``analysis.dataset.config_key``, a Row's
    ``config``). Counted from the boots alone: no model feature is needed."""
    models: dict[tuple[tuple[str, str | None], ...], list[str]] = {}
    for r in results:
        if r.state == "measured":
            names = models.setdefault(config_key(r), [])
            if r.model not in names:
                names.append(r.model)
    return {key: ShortConfiguration(key, [m for m in names if m not in holdout],
                                    [m for m in names if m in holdout])
            for key, names in models.items()
            if len([m for m in names if m not in holdout]) < MIN_TRAINING_MODELS}


def resolve_holdout(models: Iterable[str], names: list[str]) -> list[str]:
    """The held-out models as the data spells them (names match case-insensitively).

    Raises
    ------
    InputError
        A name is not one of ``models``.
    """
    known = {m.lower(): m for m in models}
    wanted = []
    for h in names:
        if h.lower() not in known:
            raise InputError(f"holdout model {h!r} is not in the data; models: "
                             f"{', '.join(sorted(known.values()))}")
        wanted.append(known[h.lower()])
    return wanted


def fit_dataset(data: Dataset, *, holdout: list[str] | None = None,
                forced: dict[str, str] | None = None,
                outlier_alpha: float | None = 0.05) -> list[GroupFit]:
    """Fit each configuration of the data set (see ``fit_group``)."""
    if not data.rows:
        raise FitError("no measured boots in the input")
    wanted = resolve_holdout((r.model for r in data.rows), holdout or [])
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
