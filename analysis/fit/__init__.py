"""Fit per-phase regressors from runs: ``fit_inputs`` (``inputs``) reads runs and study folders
and fits them, as ``coldstart fit RUN.json ...`` (``python -m analysis.fit``) does before it
writes a predictor file.

The group fit (``groups``: per configuration and phase, the feature chosen by ``selection``, its
line and its correlation), the data's targets (``targets``), held-out checks (``validate``,
``lomo``), the predictor document (``predictor_document``), the summary of what the fit needs
(``summary``) and its markdown report (``markdown``).
"""

from analysis.fit.groups import MIN_TRAINING_MODELS
from analysis.fit.selection import CANDIDATE_FEATURES
from analysis.fit.summary import needed_run, needed_run_line, summarize

__all__ = ["CANDIDATE_FEATURES", "MIN_TRAINING_MODELS", "needed_run", "needed_run_line",
           "summarize"]
