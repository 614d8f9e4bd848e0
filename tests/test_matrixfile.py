"""Matrix files: what a team writes is checked before any boot, one line per problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.matrix.file import load
from benchmarks.matrix.file_schema import MatrixFileError

ENGINE_ARGS = frozenset({"max_model_len", "max_num_seqs", "dtype", "gpu_memory_utilization",
                         "tensor_parallel_size", "enable_prefix_caching"})
FIXTURES = {"smollm2-135m", "rand-smollm2-360m"}


def _write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _load(path: Path):
    return load(path, engine_arg_names=ENGINE_ARGS, fixture_names=FIXTURES)


@pytest.fixture
def model_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "my models" / "smol one"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    return folder


def test_models_of_every_kind_and_the_product_of_the_axes(tmp_path, model_folder):
    path = _write(tmp_path, f"""
version: 1
models:
  - smollm2-135m
  - path: {model_folder}
    engine_args: {{max_num_seqs: 4}}
    env: {{VLLM_CPU_KVCACHE_SPACE: 3}}
    budgets: {{ready_s: 100}}
  - hub: Qwen/Qwen2.5-0.5B-Instruct
    revision: main
axes:
  compile_cache: [cold, warm]
  max_model_len: [512, 2048]
  VLLM_USE_AOT_COMPILE: [0, 1]
engine_args: {{dtype: bfloat16}}
rounds: 3
budgets: {{ready_s: 120, torch_compile: 60}}
""")
    models, points, settings = _load(path)
    assert [(m.label, m.kind) for m in models] == [
        ("smollm2-135m", "fixture"), ("smol one", "path"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "hub")]
    assert models[1].source == str(model_folder) and models[1].env == (("VLLM_CPU_KVCACHE_SPACE", "3"),)
    assert models[2].revision == "main"
    assert len(points) == 2 * 2 * 2
    # base axes first, in today's id order, then the file's own axes
    assert list(points[0]) == ["loader", "compile_cache", "page_cache", "entrypoint",
                               "max_model_len", "VLLM_USE_AOT_COMPILE"]
    assert settings.rounds == 3 and settings.budgets == {"ready_s": 120, "torch_compile": 60}


def test_a_relative_folder_is_read_from_the_matrix_files_folder(tmp_path, model_folder):
    path = _write(tmp_path, "models: ['my models/smol one']\n")
    models, _, _ = _load(path)
    assert models[0].kind == "path" and models[0].source == str(model_folder)


def test_serve_params_sets_are_models(tmp_path, model_folder):
    (tmp_path / "serve_params.json").write_text(json.dumps([
        {"_benchmark_name": "tp1", "model": str(model_folder), "tensor-parallel-size": 1},
        {"_benchmark_name": "tp2", "model": str(model_folder), "tensor_parallel_size": 2}]))
    path = _write(tmp_path, "serve_params: serve_params.json\n")
    models, _, _ = _load(path)
    assert [(m.label, m.engine_args) for m in models] == [
        ("tp1", (("tensor_parallel_size", 1),)), ("tp2", (("tensor_parallel_size", 2),))]


@pytest.mark.parametrize("text, line, words", [
    ("models: [smollm2-135m]\naxes:\n  max_model_lenn: [512]\n", 3,
     ["axes.max_model_lenn", "unknown engine argument", "did you mean 'max_model_len'"]),
    ("models: [smollm2-135m]\nengine_args:\n  max_model_lenn: 512\n", 3,
     ["engine_args.max_model_lenn", "unknown engine argument"]),
    ("models: [smollm2-135m]\naxes:\n  loader: [safetensors, mmap]\n", 3,
     ["axes.loader.1", "unknown loader 'mmap'"]),
    ("models: [smollm2-135m]\nbudgets:\n  ready_s: -3\n", 3, ["budgets", "more than 0"]),
    ("models:\n  - smollm2-135m\n  - path: /no/such/folder\n", 3,
     ["models.1", "/no/such/folder does not exist"]),
    ("models: [smollm2-135m\naxes: {}\n", 2, ["YAML"]),
    ("models:\n  - smollm2-135m\n  - fixture: smollm2-135m\n", 3,
     ["models.1", "duplicate model 'smollm2-135m'"]),
    ("models: [smollm2-135m]\nrounds: 0\n", 2, ["rounds", "greater than or equal to 1"]),
    ("models: [smollm2-135m]\nroundz: 2\n", 2, ["roundz", "Extra inputs are not permitted"]),
    ("models: [smollm2-135m]\nrounds: 2\nrounds: 3\n", 3, ["given twice"]),
    ("models:\n  - fixture: smollm2-135m\n    engine_args: {enforce_eager: 1}\n", 3,
     ["models.0.engine_args.enforce_eager", "true or false"]),
    ("models: [smollm2-135m]\naxes:\n  enforce_eager: [true]\n", 3,
     ["axes.enforce_eager.0", "set by the axes"]),
    ("models:\n  - hub: not a hub id\n", 2, ["models.0.hub", "not a fixture", "(ORG/NAME)"]),
    ("models:\n  - fixture: no-such-fixture\n", 2, ["unknown fixture"]),
    ("models: [smollm2-135m]\nversion: 7\n", 2, ["version", "reads 1"]),
])
def test_a_bad_file_is_one_line_naming_file_line_and_key(tmp_path, text, line, words):
    path = _write(tmp_path, text)
    with pytest.raises(MatrixFileError) as raised:
        _load(path)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: "), message
    for word in words:
        assert word in message, message


def test_the_built_in_matrices_are_matrix_files():
    from benchmarks.matrix.file import load as load_file

    folder = Path(__file__).parents[1] / "benchmarks" / "matrices"
    for name in ("smoke", "scaling", "full"):
        models, points, _ = load_file(folder / f"{name}.yaml")
        assert models and points, name


def test_off_on_yes_no_are_words_not_booleans(tmp_path):
    # YAML 1.1 (PyYAML's default) reads `off` as False: compile_cache: [cold, off] must work
    path = _write(tmp_path, "models: [smollm2-135m]\naxes:\n  compile_cache: [cold, off]\n"
                            "  enable_prefix_caching: [true, false]\n")
    _, points, _ = _load(path)
    assert [(p["compile_cache"], p["enable_prefix_caching"]) for p in points] == [
        ("cold", True), ("cold", False), ("off", True), ("off", False)]


@pytest.mark.parametrize("name", ["smoke", "scaling", "full"])
def test_built_in_matrices_keep_their_cell_ids(name):
    """Saved runs are matched by cell id: the files give exactly the ids the matrices had
    as Python code (tests/data/matrix-ids, written from that code)."""
    from benchmarks.matrix.cells import select

    committed = (Path(__file__).parent / "data" / "matrix-ids" / f"{name}.txt").read_text()
    assert [c.id for c in select(name)] == committed.split()


def test_a_matrix_file_by_path_selects_its_cells(tmp_path):
    from benchmarks.matrix.cells import select

    path = _write(tmp_path, "models: [smollm2-135m]\naxes:\n  compile_cache: [cold, warm]\n")
    assert [c.id for c in select(str(path))] == [
        f"model=smollm2-135m-loader=safetensors-compile_cache={cc}-page_cache=warm-"
        "entrypoint=offline" for cc in ("cold", "warm")]
    assert [c.compile_cache for c in select(str(path), compile_cache=["warm"])] == ["warm"]


def test_folders_engine_argument_axes_and_a_models_own_settings_make_the_cells(
        tmp_path, model_folder):
    from benchmarks.matrix.cells import load_plan, select

    path = _write(tmp_path, f"""models:
  - path: '{model_folder}'
    engine_args: {{enforce_eager: true}}
  - fixture: smollm2-135m
    engine_args: {{max_model_len: 512}}
    budgets: {{ready_s: 1}}
axes:
  compile_cache: [cold]
  max_model_len: [512, 2048]
  VLLM_USE_AOT_COMPILE: ["0"]
""")
    plan = load_plan(str(path))
    assert [c.id for c in plan.cells] == [
        # enforce_eager: its cells compile nothing, and say so
        "model=smol one-loader=safetensors-compile_cache=off-page_cache=warm-"
        "entrypoint=offline-max_model_len=512-VLLM_USE_AOT_COMPILE=0",
        "model=smol one-loader=safetensors-compile_cache=off-page_cache=warm-"
        "entrypoint=offline-max_model_len=2048-VLLM_USE_AOT_COMPILE=0",
        # the model's own max_model_len wins over the axis: one cell, not two
        "model=smollm2-135m-loader=safetensors-compile_cache=cold-page_cache=warm-"
        "entrypoint=offline-max_model_len=512-VLLM_USE_AOT_COMPILE=0"]
    assert plan.models["smol one"].kind == "path"
    assert dict(plan.models["smollm2-135m"].budgets) == {"ready_s": 1}
    # --models narrows to any model: here a folder the file does not name
    other = select(plan, model=[str(model_folder)])
    assert {c.model for c in other} == {"smol one"}
    with pytest.raises(ValueError, match="unknown matrix 'smok'"):
        select("smok")
