"""analysis.predict on a predictor fitted to the study's data (training models only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.predictor_file import (
    PredictorFile,
    PredictorGroup,
    load_predictor,
    write_predictor,
)
from analysis.study import STUDY_HOLDOUT, read_study
from coldstart.__main__ import main as coldstart


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, study_reference: Path) -> dict:
    ref = study_reference
    out = tmp_path_factory.mktemp("pred")
    figure = ref / "figures" / "figure-rest"
    assert coldstart(["fit", "--study", str(figure), "--holdout", ",".join(STUDY_HOLDOUT),
                     "--out-dir", str(out), "--json", str(out / "s.json"), "--quiet",
                     "--no-plots"]) == 0
    study = read_study(figure)
    gemma = out / "gemma.json"
    gemma.write_text(study.features["gemma-7b"].model_dump_json())
    return {"predictor": out / "predictor.json", "gemma": gemma,
            "summary": json.loads((out / "s.json").read_text()), "out": out}


def _measured_gbps(study_reference: Path, model: str) -> float:
    """The load bandwidth the study's boot of ``model`` measured (GB/s), as the fit reads it."""
    from analysis.storage import boot_load_bandwidth

    study = read_study(study_reference / "figures" / "figure-rest")
    boot = next(r for r in study.results if r.model == model)
    return boot_load_bandwidth(boot, study.features[model].weight_bytes) / 1e9


def test_prediction_matches_the_fit_holdout(fitted: dict, study_reference: Path,
                                            tmp_path: Path) -> None:
    # The held-out evaluation predicts each boot at the storage bandwidth it measured: the
    # same input given to predict gives the same total.
    out = tmp_path / "p.json"
    gbps = _measured_gbps(study_reference, "gemma-7b")
    assert coldstart(["predict", str(fitted["gemma"]), "--fit", str(fitted["predictor"]),
                         "--load-gbps", repr(gbps), "--json", str(out)]) == 0
    p = json.loads(out.read_text())
    assert p["storage"] == f"load bandwidth: {gbps:g} GB/s (--load-gbps)"
    # The predictor says which machine its seconds belong to: the study's n1.
    assert p["machine"]["gpu"] == "H100 NVL" and p["machine"]["node"] == "n1"
    assert "platform" not in p["machine"]
    held = fitted["summary"]["holdout"]["per_model"]["gemma-7b"]
    assert p["total"]["predicted_s"] == pytest.approx(held["predicted_s"])
    assert p["total"]["low_s"] < p["total"]["predicted_s"] < p["total"]["high_s"]
    assert set(p["phases"]) >= {"model_loading", "torch_compile", "residual",
                                "torch_compile.dynamo_transform",
                                "torch_compile.compiled_graph_load"}
    for v in p["phases"].values():
        assert v["low_s"] <= v["predicted_s"] <= v["high_s"]
    tc = p["phases"]["torch_compile"]
    assert tc["status"] == "sum of sub-phases"
    assert tc["predicted_s"] == pytest.approx(held["phases"]["torch_compile"]["predicted_s"])
    assert tc["predicted_s"] == pytest.approx(
        p["phases"]["torch_compile.dynamo_transform"]["predicted_s"]
        + p["phases"]["torch_compile.compiled_graph_load"]["predicted_s"])


def test_from_an_hf_config_and_overrides(fitted: dict, tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                               "intermediate_size": 11008, "num_hidden_layers": 32,
                               "num_attention_heads": 32, "vocab_size": 32000,
                               "torch_dtype": "float16"}))
    # A feature a line needs and the input lacks: exit 2, saying how to give it (the feature
    # of the tokenizer line, as the rule chose it).
    predictor = load_predictor(fitted["predictor"])
    tokenizer_feature = predictor.groups[0].phases["tokenizer_init"].feature
    bare = json.loads(fitted["gemma"].read_text()) | {tokenizer_feature: None}
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    argv = [str(tmp_path / "bare.json"), "--fit", str(fitted["predictor"])]
    assert coldstart(["predict", *argv]) == 2
    assert f"--set {tokenizer_feature}" in capsys.readouterr().err
    assert coldstart(["predict", *argv + ["--set", f"{tokenizer_feature}=256000"]]) == 0
    capsys.readouterr()
    out = tmp_path / "p.json"
    # No tokenizer files beside the config: their size is given by hand (a value, not a
    # measurement), and the config's vocabulary is its own.
    assert coldstart(["predict", str(cfg), "--fit", str(fitted["predictor"]), "--json", str(out),
                         "--set", "tokenizer_bytes=1842767"]) == 0
    p = json.loads(out.read_text())
    assert p["features"]["tokenizer_bytes"] == 1842767 and p["features"]["vocab_size"] == 32000
    # Llama-2-7B: 12.55 GiB loaded at about 2 s/GiB on the study's machine.
    assert p["phases"]["model_loading"]["predicted_s"] == pytest.approx(24.9, abs=0.5)
    assert "weight_bytes" in p["estimated_features"]


def test_warns_when_the_lines_never_described_the_models_kind(
        study_reference: Path, tmp_path: Path, capsys) -> None:
    figure = study_reference / "figures" / "figure-rest"
    study = read_study(figure)
    small = tmp_path / "granite-h-3b.json"
    small.write_text(study.features["granite4.0-h-3b"].model_dump_json())
    # Trained with the 32 B hybrid only: the lines that set it aside (model loading, graph
    # loading among them) describe attention models only.
    assert coldstart(["fit", "--study", str(figure), "--holdout", "granite4.0-h-3b", "--out-dir",
                     str(tmp_path / "one"), "--quiet", "--no-plots"]) == 0
    out = tmp_path / "p.json"
    assert coldstart(["predict", str(small), "--fit", str(tmp_path / "one" / "predictor.json"),
                         "--json", str(out)]) == 0
    p = json.loads(out.read_text())
    warned = {name for name, v in p["phases"].items()
              if v["warnings"] and v["status"] == "fit"}
    phases = load_predictor(tmp_path / "one" / "predictor.json").groups[0].phases
    assert warned == {name for name, m in phases.items() if "granite4.0-h-32b" in m.outliers}
    assert warned and "tokenizer_init" not in warned
    # The hybrids' fast weight loading was their page cache (7.9 GB/s against about 0.55 for
    # every other boot), not their architecture: on the storage's bandwidth the 32 B hybrid
    # is on the model_loading line, which warns of nothing.
    assert "model_loading" not in warned
    measured = study.results[[r.model for r in study.results].index("granite4.0-h-3b")]
    gbps = _measured_gbps(study_reference, "granite4.0-h-3b")
    assert gbps > 5
    assert coldstart(["predict", str(small), "--fit", str(tmp_path / "one" / "predictor.json"),
                         "--load-gbps", repr(gbps), "--json", str(out)]) == 0
    cached = json.loads(out.read_text())["phases"]["model_loading"]
    assert cached["low_s"] <= measured.phases["model_loading"] <= cached["high_s"]
    # Without --load-gbps the training boots' median storage is assumed, and said: a cold
    # read of the 3 B hybrid's files takes many times what its cached boot took.
    assert p["storage"].startswith("load bandwidth: ") and "median" in p["storage"]
    assert p["phases"]["model_loading"]["predicted_s"] > 5 * measured.phases["model_loading"]
    assert p["total"]["warnings"] == []
    printed = capsys.readouterr().out
    assert all(f"warning: {name}: its hybrid Mamba training models" in printed
               for name in warned)
    # Trained without any hybrid: the whole prediction is flagged.
    assert coldstart(["fit", "--study", str(figure), "--holdout",
                      "granite4.0-h-3b,granite4.0-h-32b", "--out-dir", str(tmp_path / "none"),
                      "--quiet", "--no-plots"]) == 0
    assert coldstart(["predict", str(small), "--fit", str(tmp_path / "none" / "predictor.json"),
                         "--json", str(out)]) == 0
    p = json.loads(out.read_text())
    assert p["total"]["warnings"] == ["no hybrid Mamba model among the training models"]
    # A dense model gets none.
    dense = tmp_path / "llama.json"
    dense.write_text(study.features["llama3-3b"].model_dump_json())
    assert coldstart(["predict", str(dense), "--fit", str(tmp_path / "one" / "predictor.json"),
                         "--json", str(out)]) == 0
    p = json.loads(out.read_text())
    assert not p["total"]["warnings"] and not any(v["warnings"] for v in p["phases"].values())


def test_bad_predictor_files(fitted: dict, tmp_path: Path, capsys) -> None:
    newer = json.loads(fitted["predictor"].read_text()) | {"predictor_schema_version": 99}
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    (tmp_path / "other.json").write_text("{}")
    for bad, words in ((tmp_path / "newer.json", "newer than this reader"),
                       (tmp_path / "other.json", "not a predictor file"),
                       (tmp_path / "missing.json", "no such file")):
        rc = coldstart(["predict", str(fitted["gemma"]), "--fit", str(bad)])
        err = capsys.readouterr().err
        assert rc == 2 and words in err and err.count("\n") == 1
    assert load_predictor(fitted["predictor"]).groups
    rc = coldstart(["predict", str(fitted["gemma"]), "--fit", str(fitted["predictor"]),
                  "--loader", "tensorizer"])
    assert rc == 2 and "no fitted configuration matches" in capsys.readouterr().err


def _damaged(doc: dict, how: str) -> dict:
    d = json.loads(json.dumps(doc))
    g = d["groups"][0]
    line = g["phases"]["model_loading"]
    match how:
        case "group without phases":
            del g["phases"]
        case "group without key":
            del g["key"]
        case "group not an object":
            d["groups"] = [1]
        case "groups not a list":
            d["groups"] = {"a": g}
        case "phase without coefficients":
            del line["coefficients"]
        case "covariance 1 x 1 for a line":
            line["covariance"] = [[0.01]]
        case "covariance rows ragged":
            line["covariance"] = [[0.01, 0.0], [0.0]]
        case "extra key in a phase":
            line["slope"] = 2.0
        case "extra key in a group":
            g["phase_models"] = {}
        case "unknown feature":
            line["feature"] = "weight_gigabytes"
        case "no degrees of freedom":
            line["df_resid"] = 0
        case "split names a sub-phase it lacks":
            g["split"]["torch_compile"].append("torch_compile.inductor_compile")
        case version:
            d["predictor_schema_version"] = json.loads(version.split("=", 1)[1])
    return d


@pytest.mark.parametrize("how, words", [
    ("group without phases", "groups[0]: phases: Field required"),
    ("group without key", "groups[0]: key: Field required"),
    ("group not an object", "groups[0] is not an object"),
    ("groups not a list", "groups is not a list"),
    ("phase without coefficients", "phase model_loading: 0 coefficients, a line has 2"),
    ("covariance 1 x 1 for a line", "phase model_loading: covariance is not 2 x 2"),
    ("covariance rows ragged", "phase model_loading: covariance is not 2 x 2"),
    ("extra key in a phase", "phases.model_loading.slope: Extra inputs are not permitted"),
    ("extra key in a group", "phase_models: Extra inputs are not permitted"),
    ("unknown feature", "phase model_loading: unknown feature 'weight_gigabytes'"),
    ("no degrees of freedom", "phase model_loading: df_resid 0.0"),
    ("split names a sub-phase it lacks", "split torch_compile: sub-phases"),
    ("version=0", "predictor schema version 0 is not one this reader knows (1, 2, 3)"),
    ("version=-1", "predictor schema version -1 is not one this reader knows"),
    ("version=true", "predictor_schema_version True is not an integer"),
    ("version=1.5", "predictor_schema_version 1.5 is not an integer"),
    ("version=\"2\"", "predictor_schema_version '2' is not an integer"),
    ("version=4", "predictor schema version 4 is newer than this reader (3)"),
])
def test_a_damaged_predictor_file_is_one_line(fitted: dict, tmp_path: Path, capsys,
                                              how: str, words: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_damaged(json.loads(fitted["predictor"].read_text()), how)))
    rc = coldstart(["predict", str(fitted["gemma"]), "--fit", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"coldstart predict: error: {bad}") and words in err, err


def test_version_1_files_are_still_read(fitted: dict, tmp_path: Path) -> None:
    old = json.loads(fitted["predictor"].read_text())
    old["predictor_schema_version"] = 1
    for g in old["groups"]:  # what version 1 lacked
        del g["split"], g["train_traits"]
    (tmp_path / "v1.json").write_text(json.dumps(old))
    (group,) = load_predictor(tmp_path / "v1.json").groups
    assert group.train_traits is None and group.split == {}
    assert group.phases["model_loading"].coefficients == \
        old["groups"][0]["phases"]["model_loading"]["coefficients"]
    # rewritten (coldstart calibrate), it still says it predates the training models' traits
    again = write_predictor(load_predictor(tmp_path / "v1.json"), tmp_path / "again.json")
    assert "train_traits" not in json.loads(again.read_text())["groups"][0]


@pytest.mark.parametrize("item, words", [
    ("params=1.5", "params is a whole number"),
    ("params=1e999", "params is a whole number"),
    ("params=nan", "is not a number"),
    ("weight_bytes=-1", "weight_bytes cannot be negative"),
    ("dtype=5", "not a dtype"),
    ("moe=maybe", "moe is a flag"),
    ("source=me", "source is not a feature"),
    ("params_by_dtype=3", "params_by_dtype cannot be set"),
    ("estimated=x", "expected FEATURE=VALUE"),
])
def test_a_bad_set_is_one_line(fitted: dict, capsys, item: str, words: str) -> None:
    argv = [str(fitted["gemma"]), "--fit", str(fitted["predictor"]), "--set", item]
    assert coldstart(["predict", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and words in err, err


def test_set_overrides_reach_the_line(fitted: dict, tmp_path: Path) -> None:
    line = load_predictor(fitted["predictor"]).groups[0].phases["model_loading"]
    # The storage is an input: the line is on the seconds the weights take at the bandwidth.
    assert line.feature == "weight_bytes_over_load_bandwidth"
    out = tmp_path / "p.json"
    # 1.7e10 bytes written as a float, dtype and a flag given by name, a 2 GB/s storage
    assert coldstart(["predict", str(fitted["gemma"]), "--fit", str(fitted["predictor"]), "--set",
                         "weight_bytes=1.7e10", "--set", "dtype=float16", "--set", "moe=true",
                         "--load-gbps", "2", "--json", str(out)]) == 0
    p = json.loads(out.read_text())
    b0, b1 = line.coefficients
    assert line.feature_scale == 1.0 and line.feature_unit == "s"
    assert p["phases"]["model_loading"]["predicted_s"] == pytest.approx(b0 + b1 * 1.7e10 / 2e9)
    assert p["features"]["load_bandwidth"] == 2e9
    assert p["features"]["weight_bytes"] == 17_000_000_000 and p["features"]["moe"] is True
    assert p["features"]["dtype"] == "float16"


def test_usage_errors_are_one_line(fitted: dict, capsys) -> None:
    for argv, words in (([str(fitted["gemma"])], "the following arguments are required: --fit"),
                        ([str(fitted["gemma"]), "--fit", str(fitted["predictor"]), "--level",
                          "high"], "argument --level: invalid float value: 'high'")):
        assert coldstart(["predict", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("coldstart predict: error: ")
        assert words in err and "--help" in err


def test_negative_counts_are_refused(fitted: dict, tmp_path: Path, capsys) -> None:
    """A negative size is a damaged input: one line, not a prediction flagged as extrapolated."""
    bad = json.loads(fitted["gemma"].read_text()) | {"weight_bytes": -5}
    (tmp_path / "neg.json").write_text(json.dumps(bad))
    for argv, words in (([str(tmp_path / "neg.json"), "--fit", str(fitted["predictor"])],
                         "weight_bytes"),
                        ([str(fitted["gemma"]), "--fit", str(fitted["predictor"]),
                          "--capture-sizes", "-5"], "--capture-sizes -5: must be >= 0")):
        assert coldstart(["predict", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("coldstart predict: error: ")
        assert words in err


def test_a_configuration_of_a_matrix_files_axis_is_chosen_by_that_axis():
    from analysis.predict import choose_group
    from document.errors import InputError

    base = {"platform": "cpu", "loader": "safetensors", "compile_cache": "off"}
    predictor = PredictorFile(predictor_schema_version=3, groups=[
        PredictorGroup(key={**base, "max_model_len": "512"}, phases={}),
        PredictorGroup(key={**base, "max_model_len": "2048"}, phases={})])
    with pytest.raises(InputError, match="--axis NAME=VALUE"):
        choose_group(predictor, {"loader": "safetensors"})
    assert choose_group(predictor, {"loader": "safetensors", "max_model_len": "2048"}) \
        is predictor.groups[1]
