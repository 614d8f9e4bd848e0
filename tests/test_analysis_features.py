"""Features read from a model folder without reading weights (analysis.features)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from analysis.features.model_features import ModelFeatures, feature_value
from analysis.features.model_files import (
    ESTIMATED_COMPILED_KIB_PER_LAYER,
    compiled_graph_bytes_from_cache,
    read_safetensors_header,
    tokenizer_bytes_in,
)
from analysis.features.model_folder import default_capture_sizes, from_hf_config, from_model_dir
from analysis.features.sources import load_features, read_features_json
from analysis.features.study_models import read_study_models_config
from document.errors import FeatureError

safetensors_numpy = pytest.importorskip("safetensors.numpy")

from coldstart.__main__ import main as coldstart
from tests.conftest import LLAMA_LIKE, llama_tensors  # noqa: E402


def test_safetensors_counts_match_the_arrays(llama_dir: Path) -> None:
    tensors = llama_tensors(LLAMA_LIKE)
    f = from_model_dir(llama_dir, platform="cuda", vllm_version="0.10.1.1")
    assert f.params == sum(a.size for a in tensors.values())
    assert f.weight_bytes == sum(a.nbytes for a in tensors.values())
    half = sum(a.nbytes for a in tensors.values() if a.dtype == np.float16)
    assert f.bytes_by_dtype == {"F16": half, "F32": 64 * 4}
    assert f.params_by_dtype["F32"] == 64
    assert f.active_params == f.params and not f.moe
    assert (f.layers, f.hidden_size, f.vocab_size) == (2, 64, 100)
    assert (f.attention_heads, f.kv_heads, f.head_dim) == (4, 2, 16)
    # K and V, every layer, 2 kv heads x 16 dims, 2 bytes
    assert f.kv_cache_bytes_per_token == 2 * 2 * 2 * 16 * 2
    assert f.tokenizer_bytes == 1234
    assert f.capture_sizes == 35
    assert f.compiled_graph_bytes == round(2 * ESTIMATED_COMPILED_KIB_PER_LAYER * 1024)
    assert f.estimated == ["compiled_graph_bytes"]
    assert f.model == "tiny-llama" and f.source == "model_dir"


def test_header_parser_agrees_with_safetensors_package(llama_dir: Path) -> None:
    from safetensors import safe_open

    shard = sorted(llama_dir.glob("*.safetensors"))[0]
    header = read_safetensors_header(shard)
    with safe_open(str(shard), framework="numpy") as fh:
        assert sorted(fh.keys()) == sorted(k for k in header if k != "__metadata__")
        for key in fh.keys():
            assert list(fh.get_slice(key).get_shape()) == header[key]["shape"]


def test_formula_params_match_the_tensors(llama_dir: Path) -> None:
    counted = from_model_dir(llama_dir)
    formula = from_hf_config(llama_dir / "config.json")
    # The formula leaves out the norms only.
    assert formula.params == counted.params - counted.params_by_dtype["F32"]
    assert {"params", "weight_bytes", "active_params"} <= set(formula.estimated)


def test_formula_on_llama2_7b(tmp_path: Path) -> None:
    cfg = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
           "num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000,
           "torch_dtype": "float16"}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    f = from_hf_config(p)
    assert f.params == pytest.approx(6.738e9, rel=1e-3)  # Llama-2-7B: 6,738,415,616 with norms
    assert f.weight_bytes == 2 * f.params


def test_moe_active_params_from_expert_tensors(tmp_path: Path) -> None:
    d = tmp_path / "tiny-moe"
    d.mkdir()
    cfg = LLAMA_LIKE | {"num_local_experts": 4, "num_experts_per_tok": 2}
    (d / "config.json").write_text(json.dumps(cfg))
    t = {"model.embed_tokens.weight": np.zeros((100, 64), np.float16)}
    for e in range(4):
        name = f"model.layers.0.block_sparse_moe.experts.{e}.w1.weight"
        t[name] = np.zeros((128, 64), np.float16)
    t["model.layers.0.mlp.shared_experts.up_proj.weight"] = np.zeros((128, 64), np.float16)
    safetensors_numpy.save_file(t, str(d / "model.safetensors"))
    f = from_model_dir(d)
    expert = 128 * 64
    assert f.moe and f.experts == 4 and f.active_experts == 2
    assert f.params == 100 * 64 + 5 * expert
    # shared experts always run; 2 of the 4 routed experts run per token
    assert f.active_params == 100 * 64 + expert + 2 * expert
    assert "MoE" in f.traits()


def test_tokenizer_files(tmp_path: Path) -> None:
    assert tokenizer_bytes_in(tmp_path) is None
    (tmp_path / "vocab.json").write_text("a" * 10)
    (tmp_path / "merges.txt").write_text("b" * 5)
    assert tokenizer_bytes_in(tmp_path) == 15
    (tmp_path / "tokenizer.json").write_text("c" * 7)
    assert tokenizer_bytes_in(tmp_path) == 7


def test_default_capture_sizes() -> None:
    assert default_capture_sizes("cpu", "0.32.0") == 0
    assert default_capture_sizes("cuda", "0.10.1.1") == 35  # what the study's logs list
    assert default_capture_sizes("cuda", "0.32.0") == 51
    assert default_capture_sizes("cuda", "0.10.1.1", max_num_seqs=512) == 67


def test_cpu_model_has_no_capture_sizes(llama_dir: Path) -> None:
    f = from_model_dir(llama_dir, platform="cpu", vllm_version="0.32.0")
    assert f.capture_sizes == 0
    assert feature_value(f, "weight_bytes_x_capture_sizes") == 0


def test_feature_values_and_products() -> None:
    f = ModelFeatures(model="m", params=10, layers=3, capture_sizes=5)
    assert feature_value(f, "params") == 10
    assert feature_value(f, "layers_x_capture_sizes") == 15
    assert feature_value(f, "constant") == 1
    assert feature_value(f, "weight_bytes") is None
    with pytest.raises(FeatureError):
        feature_value(f, "no_such_feature")


def test_compile_cache_index_counts_each_piece(tmp_path: Path) -> None:
    cache = tmp_path / "torch_compile_cache" / "abc" / "rank_0_0"
    (cache / "inductor_cache" / "aa").mkdir(parents=True)
    first = cache / "inductor_cache" / "aa" / "first.py"
    middle = cache / "inductor_cache" / "aa" / "middle.py"
    first.write_text("f" * 100)
    middle.write_text("m" * 40)
    index = {(None, 0, "inductor"): ("k0", "/elsewhere/first.py"),  # paths of another machine
             (None, 1, "inductor"): ("k1", "/elsewhere/middle.py"),
             (None, 2, "inductor"): ("k1", "/elsewhere/middle.py"),
             (8, 0, "inductor"): ("k9", "/elsewhere/first.py")}  # a specialised shape: left out
    (cache / "vllm_compile_cache.py").write_text(repr(index))
    assert compiled_graph_bytes_from_cache(tmp_path / "torch_compile_cache") == (180, "index")
    (cache / "vllm_compile_cache.py").unlink()
    assert compiled_graph_bytes_from_cache(tmp_path / "torch_compile_cache") == (140, "all_files")
    f = from_model_dir(_tiny(tmp_path), compile_cache_dir=tmp_path / "torch_compile_cache")
    assert f.compiled_graph_bytes == 140 and "compiled_graph_bytes" not in f.estimated


def _tiny(tmp_path: Path) -> Path:
    d = tmp_path / "tiny"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLAMA_LIKE))
    safetensors_numpy.save_file(llama_tensors(LLAMA_LIKE), str(d / "model.safetensors"))
    return d


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(FeatureError, match="no such model folder"):
        from_model_dir(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FeatureError, match="not a model folder"):
        from_model_dir(empty)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(FeatureError, match="safetensors"):
        from_model_dir(bad)
    with pytest.raises(FeatureError):
        load_features(tmp_path / "nothing.json")


def test_features_json_round_trip(llama_dir: Path, tmp_path: Path) -> None:
    f = from_model_dir(llama_dir)
    p = tmp_path / "features.json"
    p.write_text(json.dumps({f.model: f.model_dump(mode="json")}))
    assert read_features_json(p)[f.model] == f
    single = tmp_path / "one.json"
    single.write_text(json.dumps(f.model_dump(mode="json")))
    assert load_features(single, capture_sizes=7).capture_sizes == 7


# An MPT-style config.json (the key names of mosaicml/mpt-7b's configuration class), as a tool
# that drops "architectures" writes it: the layer count under MPT's own key.
MPT_7B_CONFIG = {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
                 "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432}


@pytest.mark.parametrize("name, config", [
    ("config.json", MPT_7B_CONFIG),
    ("mpt-7b.json", MPT_7B_CONFIG),
    ("config.json", {k: v for k, v in MPT_7B_CONFIG.items() if k != "model_type"}),
])
def test_a_config_without_architectures_is_read_as_a_config(tmp_path, name, config) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    assert load_features(path).layers == 32


def test_study_models_config(study_reference: Path) -> None:
    feats = read_study_models_config(study_reference / "models_config.json")
    assert len(feats) == 25
    gemma = feats["gemma-7b"]
    assert gemma.tokenizer_bytes == 17_500_000
    assert gemma.compiled_graph_bytes == 704 * 1024
    assert gemma.nominal_params == 7e9
    assert feats["qwen-14.3b"].moe and feats["qwen-14.3b"].active_params == 2.7e9
    # The per-layer constant used to estimate compiled-graph sizes is this file's median over
    # the models the study's predictor may learn from: its five held-out models play no part.
    from analysis.study import STUDY_HOLDOUT

    raw = json.loads((study_reference / "models_config.json").read_text())
    training = {name: e for name, e in raw.items() if name not in STUDY_HOLDOUT}
    assert len(training) == 20 and set(raw) - set(training) == set(STUDY_HOLDOUT)
    median = statistics.median(e["compiled_graph_sizes"] / e["layers"] for e in training.values())
    assert ESTIMATED_COMPILED_KIB_PER_LAYER == pytest.approx(median, abs=0.05)


def _config(tmp_path: Path, cfg: dict, name: str = "config.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


# apple/OpenELM-270M's config.json (the shape keys): heads per layer.
OPENELM_270M = {"architectures": ["OpenELMForCausalLM"], "model_type": "openelm",
                "num_transformer_layers": 16, "model_dim": 1280, "head_dim": 64,
                "num_query_heads": [12] * 5 + [16] * 7 + [20] * 4,
                "num_kv_heads": [3] * 5 + [4] * 7 + [5] * 4,
                "ffn_multipliers": [0.5 + 3.5 * i / 15 for i in range(16)],
                "ffn_dim_divisor": 256, "vocab_size": 32000, "torch_dtype": "float32",
                "share_input_output_layers": True}


def test_per_layer_head_counts(tmp_path: Path) -> None:
    f = from_hf_config(_config(tmp_path, OPENELM_270M))
    assert (f.layers, f.hidden_size, f.head_dim, f.vocab_size) == (16, 1280, 64, 32000)
    assert (f.attention_heads, f.kv_heads) == (20, 5)  # the largest a layer has
    # K and V of every layer's own heads: 2 x (5x3 + 7x4 + 4x5) x 64 x 2 bytes (float32 is
    # run in half precision)
    assert f.kv_cache_bytes_per_token == 2 * 63 * 64 * 2
    # one shape per layer is what the parameter formula assumes: not estimated from it
    assert f.params is None and f.weight_bytes is None
    # a list that is not one entry per layer says nothing reliable about the cache
    short = from_hf_config(_config(tmp_path, OPENELM_270M | {"num_kv_heads": [3, 3, 3]}, "s.json"))
    assert short.kv_heads is None and short.kv_cache_bytes_per_token is None


def test_per_layer_top_k(tmp_path: Path) -> None:
    # tencent/Hunyuan-A13B-Instruct: top-k and expert width given per layer
    cfg = {"architectures": ["HunYuanMoEV1ForCausalLM"], "num_hidden_layers": 32,
           "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 128167, "intermediate_size": 3072, "num_experts": 64,
           "moe_topk": [8] * 32, "moe_intermediate_size": [3072] * 32,
           "torch_dtype": "bfloat16"}
    f = from_hf_config(_config(tmp_path, cfg))
    assert f.moe and (f.experts, f.active_experts) == (64, 8)
    assert f.kv_cache_bytes_per_token == 2 * 32 * 8 * 128 * 2


def test_dbrx_nested_moe_config(tmp_path: Path) -> None:
    # databricks/dbrx-instruct: MoE and KV heads under ffn_config / attn_config
    cfg = {"architectures": ["DbrxForCausalLM"], "model_type": "dbrx", "d_model": 6144,
           "n_heads": 48, "n_layers": 40, "max_seq_len": 32768, "vocab_size": 100352,
           "attn_config": {"clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
           "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4},
           "torch_dtype": "bfloat16"}
    f = from_hf_config(_config(tmp_path, cfg))
    assert f.moe and (f.experts, f.active_experts, f.kv_heads) == (16, 4, 8)
    assert "MoE" in f.traits()
    # the model card: 132 B parameters, 36 B active
    assert f.params == pytest.approx(132e9, rel=0.01)
    assert f.active_params == pytest.approx(36e9, rel=0.02)


def test_config_values_that_are_not_counts(tmp_path: Path) -> None:
    for bad in ({"num_hidden_layers": [1, 2]}, {"num_hidden_layers": 2.7},
                {"num_hidden_layers": "32"}):
        with pytest.raises(FeatureError, match="no layer count"):
            from_hf_config(_config(tmp_path, LLAMA_LIKE | bad))
    f = from_hf_config(_config(tmp_path, LLAMA_LIKE | {"vocab_size": "100"}))
    assert f.vocab_size is None and f.params is None  # unknown, not a crash
    f = from_hf_config(_config(tmp_path, LLAMA_LIKE | {"quantization_config": "gptq"}))
    assert f.quantization == "gptq"
    f = from_hf_config(_config(tmp_path, LLAMA_LIKE | {"architectures": "JambaForCausalLM"}))
    assert f.hybrid


def test_features_json_list_and_names(llama_dir: Path, tmp_path: Path) -> None:
    f = from_model_dir(llama_dir)
    other = f.model_copy(update={"model": "other", "layers": 3})
    as_list = _config(tmp_path, [f.model_dump(mode="json"), other.model_dump(mode="json")],
                      "list.json")
    assert read_features_json(as_list) == {f.model: f, "other": other}
    twice = _config(tmp_path, [f.model_dump(mode="json")] * 2, "twice.json")
    with pytest.raises(FeatureError, match=f"model '{f.model}' is given twice"):
        read_features_json(twice)
    # a key without "model" inside names it; a "model" inside must agree with its key
    entry = f.model_dump(mode="json")
    del entry["model"]
    assert read_features_json(_config(tmp_path, {"x": entry}, "k.json"))["x"].layers == 2
    renamed = _config(tmp_path, {"x": f.model_dump(mode="json")}, "r.json")
    with pytest.raises(FeatureError, match=f"entry 'x' names model '{f.model}'"):
        read_features_json(renamed)
    # one model in a list is what predict takes
    assert load_features(_config(tmp_path, [entry | {"model": "y"}], "one.json")).model == "y"


def _raw_safetensors(path: Path, header: object) -> None:
    text = json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text)


@pytest.mark.parametrize("header", [
    ["not", "an", "object"],
    {"w": {"dtype": "F16", "shape": "abc", "data_offsets": [0, 8]}},
    {"w": {"dtype": "F16", "shape": [-2, 3], "data_offsets": [0, 8]}},
    {"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [8, 0]}},
    {"w": "F16"},
])
def test_a_malformed_safetensors_header_is_a_feature_error(tmp_path: Path, header) -> None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(LLAMA_LIKE))
    _raw_safetensors(d / "model.safetensors", header)
    with pytest.raises(FeatureError, match="safetensors"):
        from_model_dir(d)


def test_module_cli_answers_a_lost_model_folder_in_one_line(tmp_path: Path) -> None:
    """Run as ``python -m``, the module's FeatureError must still be the one run_cli catches."""
    import subprocess
    import sys

    from document.boot_result import BootResult

    result = tmp_path / "boot.json"
    result.write_text(BootResult(state="measured", model="gone", model_path=str(tmp_path / "gone"),
                                 platform="cpu").model_dump_json())
    run = subprocess.run([sys.executable, "-m", "coldstart", "features", str(result), "-o",
                          str(tmp_path / "f.json")], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith("coldstart features: error: ") and "gone" in run.stderr
    # Nothing measured with a folder: nothing to write is an error, not an empty file.
    skipped = tmp_path / "skipped.json"
    skipped.write_text(BootResult(state="skipped", model="x", skip_reason="busy").model_dump_json())
    run = subprocess.run([sys.executable, "-m", "coldstart", "features", str(skipped), "-o",
                          str(tmp_path / "f.json")], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert run.returncode == 2 and "no features to write" in run.stderr
    assert not (tmp_path / "f.json").exists()


def test_one_path_from_a_boot_to_its_features(llama_dir: Path, tmp_path: Path) -> None:
    """``coldstart features`` writes the features ``analysis.dataset`` fits on, for a
    boot whose compile cache is still there (measured) and one whose cache is gone (estimated):
    a fit repeated from the file sees what the first fit saw."""
    from analysis.dataset import build_dataset
    from document import benchmark_entry, new_document, write_run
    from document.boot_result import BootResult

    cache = tmp_path / "torch_compile_cache" / "abc"
    cache.mkdir(parents=True)
    (cache / "artifact").write_bytes(b"z" * 5000)
    boots = [BootResult(state="measured", model="kept", model_path=str(llama_dir),
                        platform="cpu", vllm_version="0.32.0", wall_s=1.0,
                        evidence={"compile_cache_dir": str(cache)}),
             BootResult(state="measured", model="gone", model_path=str(llama_dir),
                        platform="cpu", vllm_version="0.32.0", wall_s=1.0,
                        evidence={"compile_cache_dir": str(tmp_path / "deleted")})]
    doc = tmp_path / "run.json"
    write_run(new_document([benchmark_entry(b, name=f"t[{b.model}]", params={})
                                 for b in boots]), doc)
    out = tmp_path / "features.json"
    assert coldstart(["features", str(doc), "-o", str(out)]) == 0
    written = read_features_json(out)
    fitted = {row.model: row.features for row in build_dataset(boots, {}, [str(doc)]).rows}
    assert written == fitted
    assert (written["kept"].compiled_graph_bytes, written["kept"].compiled_graph_method) == \
        (5000, "all_files")
    assert written["gone"].compiled_graph_method == "estimated"
    assert written["gone"].compiled_graph_bytes == round(2 * ESTIMATED_COMPILED_KIB_PER_LAYER
                                                         * 1024)
