"""Fit per-phase regressors from runs: ``fit_inputs`` (``inputs``) reads runs and study folders
and fits them, as ``coldstart fit RUN.json ...`` (``python -m analysis.fit``) does before it
writes a predictor file.

The group fit (``groups``: per configuration and phase, the feature chosen by ``selection``, its
line and its correlation), the data's targets (``targets``), held-out checks (``validate``,
``lomo``), the predictor document (``predictor_document``), what the fit answers for a run it
cannot fit (``unfittable``) and its markdown report (``markdown``).
"""
