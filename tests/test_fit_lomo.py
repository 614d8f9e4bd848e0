"""Nested leave-one-model-out on the study's data: no choice has seen the model it predicts,
and the storage (the boot's load bandwidth) is an input the predictions use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import analysis.fit.groups as groups_module
import analysis.fit.lomo as lomo_module
from analysis.study import STUDY_HOLDOUT, read_study
from coldstart.__main__ import main as coldstart


@pytest.fixture(scope="module")
def nested(tmp_path_factory, study_reference: Path) -> dict:
    """``python -m analysis.fit --study figure-rest --lomo --json``, once, recording which
    models every feature choice of every fold was made on."""
    figure = study_reference / "figures" / "figure-rest"
    out = tmp_path_factory.mktemp("lomo")
    seen: dict[str, list[set[str]]] = {}
    fold: list[str] = []
    fit_group, select_feature = groups_module.fit_group, groups_module.select_feature

    def fold_fit(rows, *, holdout=None, **kwargs):
        fold[:] = list(holdout or [])
        try:
            return fit_group(rows, holdout=holdout, **kwargs)
        finally:
            fold.clear()

    def recorded_select(phase, rows, forced, outlier_alpha):
        if fold:
            seen.setdefault(fold[0], []).append({r.model for r in rows})
        return select_feature(phase, rows, forced, outlier_alpha)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lomo_module, "fit_group", fold_fit)
        mp.setattr(groups_module, "select_feature", recorded_select)
        assert coldstart(["fit", "--study", str(figure), "--lomo", "--out-dir", str(out), "--json",
                         str(out / "s.json"), "--quiet", "--no-plots"]) == 0
    study = read_study(figure)
    return {"lomo": json.loads((out / "s.json").read_text())["lomo"], "seen": seen,
            "models": {r.model for r in study.results}, "study": study}


def test_every_fold_chose_on_the_other_models_only(nested: dict) -> None:
    lomo, models = nested["lomo"], nested["models"]
    # Every study model has a complete log and is left out once, the held-out five too.
    assert set(lomo["per_model"]) == models and lomo["n"] == len(models) == 22
    assert set(STUDY_HOLDOUT) <= set(lomo["per_model"]) and lomo["not_scored"] == {}
    for left, v in lomo["per_model"].items():
        assert set(v["train"]) == models - {left}, left
        assert not any(left in screened for screened in v["outliers"].values()), left
        # every feature choice of the fold (one per phase and sub-phase) saw the others only
        choices = nested["seen"][left]
        assert len(choices) >= len(v["features"]), left
        assert all(left not in rows and rows <= models for rows in choices), left


def test_the_figures_are_those_of_the_folds(nested: dict) -> None:
    lomo = nested["lomo"]
    errors = {m: v["predicted_s"] - v["measured_s"] for m, v in lomo["per_model"].items()}
    assert lomo["mse_s"] == pytest.approx(sum(e * e for e in errors.values()) / len(errors))
    assert lomo["max_error_s"] == pytest.approx(max(abs(e) for e in errors.values()))
    assert lomo["worst_model"] == max(errors, key=lambda m: abs(errors[m]))
    walls = {r.model: r.wall_s for r in nested["study"].results}
    assert all(v["measured_s"] == pytest.approx(walls[m]) for m, v in lomo["per_model"].items())


def test_the_storage_is_what_a_cached_boot_needed(nested: dict) -> None:
    """granite4.0-h-32b's 60 GiB loaded from the page cache: told the bandwidth its boot
    measured, the fold that never saw it predicts its total to within a tenth of the error the
    training boots' median storage gives (about 110 s: the error of issue 19)."""
    v = nested["lomo"]["per_model"]["granite4.0-h-32b"]
    at_median = v["median_storage"]["error_s"]
    assert at_median > 0.5 * v["measured_s"]
    assert abs(v["error_s"]) < 0.1 * abs(at_median)
    assert all(f["features"]["model_loading"] == "weight_bytes_over_load_bandwidth"
               for f in nested["lomo"]["per_model"].values())
    # Every fold is scored both ways; on this data the median storage is the worse input.
    median = nested["lomo"]["median_storage"]
    assert median["n"] == nested["lomo"]["n"] and median["mse_s"] > nested["lomo"]["mse_s"]


def test_the_folds_predict_as_well_as_the_study_did_on_its_held_out_five(nested: dict) -> None:
    """Over all 22 models, each predicted by a fold that never saw it, the mean squared error
    is no worse than the study's own predictor on its five held-out models (the max error
    target of issue 19, 3 s, is not asserted: docs/analysis.md, "The result")."""
    from analysis.study import STUDY_REPORTED

    assert nested["lomo"]["mse_s"] <= STUDY_REPORTED["holdout_mse_s2"]
