"""Which feature a phase's line is fitted on, and which phases are fitted as their sub-phases.

1. A phase's feature is chosen among a short list of physically motivated candidates
   (``CANDIDATE_FEATURES``) by leave-one-model-out cross-validation on the training models
   only: the lowest mean squared error of the left-out models' phase seconds; ties go to the
   candidate listed first, the driver ``document.boot_result`` names. Cross-validation splits come from
   ``sklearn.model_selection.LeaveOneOut`` (M. Stone, "Cross-validatory choice and
   assessment of statistical predictions", *JRSS B* 36, 1974).
2. A phase of ``SPLIT_PHASES`` (torch_compile: Dynamo tracing, Inductor compiling, loading
   compiled graphs, three mechanisms) is fitted as the sum of its measured sub-phases, each
   with its own feature chosen as in 1, when every training model measured them and they add
   up to the phase; otherwise as one phase.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analysis.dataset import Row
from analysis.features.model_features import feature_unit, feature_value
from analysis.fit.targets import target_points, target_value
from analysis.regression import MIN_POINTS_LINEAR, FitError, fit_phase
from document.boot_result import SUBPHASE_NAMES

__all__ = ["CANDIDATE_FEATURES", "SCORE_TIE_FRACTION", "SPLIT_PHASES", "SPLIT_TOLERANCE_FRACTION",
           "SPLIT_TOLERANCE_S", "loo_errors", "select_feature", "split_targets"]

# The physical quantities each phase may scale with; the first is the driver the schema names.
# An empty tuple means constant per machine and vLLM version.
CANDIDATE_FEATURES: dict[str, tuple[str, ...]] = {
    "framework_bootstrap": (),
    # the tokenizer file is parsed: its bytes; the vocabulary is the number of entries
    "tokenizer_init": ("tokenizer_bytes", "vocab_size"),
    # bytes moved from storage to device memory; parameters when bytes are not known; the
    # seconds those bytes take at the boot's measured load bandwidth (the storage tier and
    # page cache as an input, analysis.storage)
    "model_loading": ("weight_bytes", "params", "weight_bytes_over_load_bandwidth"),
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


def loo_errors(target: str, rows: list[Row], feature: str | None,
               outlier_alpha: float | None) -> dict[str, float]:
    """Left-out model -> (predicted - measured) seconds, refitting without it each time.

    Raises
    ------
    FitError
        A fold cannot be fitted (the feature has one value once that model is left out);
        the message names the model.
    """
    from sklearn.model_selection import LeaveOneOut

    names, x, y = target_points(rows, target, feature)
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


def select_feature(phase: str, rows: list[Row], forced: str | None, outlier_alpha: float | None
                   ) -> tuple[str | None, list[dict[str, Any]], list[str]]:
    """The phase's feature and the cross-validation table that chose it.

    Each candidate is scored by the mean square of its leave-one-model-out errors of the phase
    on ``rows`` (the training models; each fold refits, outlier screening included): the
    textbook criterion, every model weighted alike. A model the screening sets aside in a fit
    still counts here, so a feature that describes it (the hybrid Mamba granite4.0-h's smaller
    compiled graphs) wins over one that only describes the others (docs/analysis-decisions.md, method
    change 4).
    """
    notes: list[str] = []
    if forced is not None:
        feature = None if forced == "constant" else forced
        return feature, [{"feature": forced, "loo_mse_s2": None,
                          "chosen": True, "why": "given with --feature"}], notes
    candidates = CANDIDATE_FEATURES.get(phase, ())
    measured = [r for r in rows if target_value(r, phase) is not None]
    seconds = [target_value(r, phase) for r in measured]
    if candidates and len(seconds) >= 2 and max(seconds) - min(seconds) == 0:
        notes.append(f"{seconds[0]:g} s for every training model: fitted as a constant")
        return None, [{"feature": c, "loo_mse_s2": None,
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
            table.append({"feature": c, "loo_mse_s2": None,
                          "chosen": False,
                          "why": f"unknown for {len(missing)} model(s): {', '.join(missing[:3])}"})
        elif len(values) < 2:
            table.append({"feature": c, "loo_mse_s2": None,
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
        table += [{"feature": c, "loo_mse_s2": None,
                   "chosen": c == usable[0], "why": ""} for c in usable]
        return usable[0], table, notes
    mse = {}
    for c in usable:
        try:
            errors = list(loo_errors(phase, measured, c, outlier_alpha).values())
        except FitError as exc:
            # One model alone gives the feature its spread (one 16-layer model among 4-layer
            # ones): without it the fold has no line, so the candidate has no score, and a
            # line whose slope rests on one model is not one the criterion can vouch for.
            table.append({"feature": c, "loo_mse_s2": None,
                          "chosen": False,
                          "why": f"not scored: a leave-one-out fold cannot be fitted ({exc})"})
            continue
        mse[c] = float(np.mean(np.square(errors)))
    scored = [c for c in usable if c in mse]
    if not scored:
        notes.append("no candidate feature could be cross-validated (a leave-one-out fold "
                     "has a single feature value): fitted as a constant")
        return None, table, notes
    lowest = min(mse[c] for c in scored)
    best = next(c for c in scored if mse[c] <= lowest * (1 + SCORE_TIE_FRACTION))
    table += [{"feature": c, "loo_mse_s2": mse[c], "chosen": c == best, "why": ""}
              for c in scored]
    return best, table, notes


def split_targets(phase: str, rows: list[Row]) -> tuple[list[str] | None, str | None]:
    """The sub-phases to fit in place of ``phase``, or None (fit the phase) and why.

    Every training model that measured the phase must have measured the same sub-phases
    (at least two), and they must add up to the phase within the tolerance.
    """
    measured = [r for r in rows if target_value(r, phase) is not None]
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
        total = target_value(r, phase)
        parts = sum(r.subphases[s] for s in present)
        if abs(total - parts) > max(SPLIT_TOLERANCE_S, SPLIT_TOLERANCE_FRACTION * total):
            off.append(f"{r.model} {total:.2f} s vs {parts:.2f} s")
    if off:
        return None, (f"its sub-phases do not add up to it ({'; '.join(off[:3])}): fitted as "
                      "one phase")
    return present, (f"fitted as the sum of its sub-phases {', '.join(present)}, each with its "
                     "own feature")

