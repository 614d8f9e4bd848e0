"""The predictors that ship in the package (analysis/predictors/*.json): re-made from the
published data they say they come from, and answering from a model's config.json alone."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.predictor_file import load_predictor, write_predictor
from analysis.predictors import ALIASES, PACKAGE_DIR, shipped_file, shipped_names
from analysis.predictors.remake import RECIPES, REPO_ROOT, build_all
from analysis.study import STUDY_NODES, read_study
from coldstart.__main__ import main as coldstart
from document.boot_result import PHASE_NAMES

STUDY_FIGURE = "tests/data/study/figures/figure-rest"

# meta-llama/Meta-Llama-3-8B's config.json as published on the hub: the fields that matter to
# vLLM, with the hub file's values. README predicts from it:
# `coldstart predict tests/data/Meta-Llama-3-8B/config.json --fit study`.
LLAMA3_8B = "tests/data/Meta-Llama-3-8B/config.json"
LLAMA3_8B_CONFIG = json.loads((REPO_ROOT / LLAMA3_8B).read_text())
# The study measured no Llama-3-8B. Its deepseek-r1-distill-llama-8b is that architecture
# (a Llama-3.1-8B fine-tune: same layer shapes and vocabulary, bf16 weights); the test below
# checks the shape against the study's own models_config.json rather than assuming it.
LLAMA3_8B_TWIN = "deepseek-r1-distill-llama-8b"


def _undated(doc: dict) -> dict:
    out = {k: v for k, v in doc.items() if k != "created"}
    out["provenance"] = {k: v for k, v in doc["provenance"].items() if k != "fitted"}
    return out


def _assert_same(a, b, where: str = "") -> None:
    """Equal, floats to 1e-9 relative (another BLAS may round a last digit differently)."""
    if isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_regenerating_gives_the_committed_files(tmp_path: Path) -> None:
    committed = sorted(p.name for p in PACKAGE_DIR.glob("*.json"))
    assert committed == sorted(f"{name}.json" for name in RECIPES)
    for path in build_all(tmp_path):
        _assert_same(_undated(json.loads(path.read_text())),
                     _undated(json.loads((PACKAGE_DIR / path.name).read_text())), path.name)


@pytest.mark.parametrize("name", list(RECIPES))
def test_each_file_says_where_it_came_from(name: str) -> None:
    predictor = load_predictor(shipped_file(name))
    prov = predictor.provenance
    assert prov["name"] == name and re.fullmatch(r"\d{4}-\d\d-\d\d", prov["fitted"])
    assert prov["command"].startswith("python -m analysis.fit ")
    for p in prov["inputs"]:
        assert (REPO_ROOT / p).exists() and p in prov["command"], p
    assert prov["vllm_version"] == sorted({g.key["vllm_version"] for g in predictor.groups})
    if name.startswith("study-"):
        assert "Breaking the Ice" in prov["data"] and prov["vllm_version"] == ["0.10.1.1"]
        machine = predictor.machine
        node = STUDY_NODES[machine["node"]]
        assert (machine["gpu"], machine["cpu"]) == (node["gpu"], node["cpu"])
    else:  # the CPU run's own machine_info: no GPU
        assert predictor.machine["cpu"] and "gpu" not in predictor.machine
        assert [g.key["platform"] for g in predictor.groups] == ["cpu"]


@pytest.mark.parametrize("name", list(RECIPES))
def test_a_file_read_and_written_again_is_the_same_bytes(name: str, tmp_path: Path) -> None:
    """The typed predictor the reader gives, written: no key added, dropped or moved, no
    number written otherwise (coldstart calibrate rewrites a file so)."""
    path = shipped_file(name)
    again = write_predictor(load_predictor(path), tmp_path / path.name)
    assert again.read_bytes() == path.read_bytes()


def test_a_later_writers_key_is_kept_when_a_file_is_rewritten(tmp_path: Path) -> None:
    doc = json.loads(shipped_file("cpu-scaling").read_text()) | {"made_by": {"release": "9"}}
    (tmp_path / "later.json").write_text(json.dumps(doc))
    again = write_predictor(load_predictor(tmp_path / "later.json"), tmp_path / "again.json")
    assert json.loads(again.read_text())["made_by"] == {"release": "9"}


def test_the_three_study_machines_are_the_studys_nodes() -> None:
    gpus = {name: load_predictor(shipped_file(name)).machine
            for name in ("study-h100-nvl", "study-l40s", "study-h100-xeon")}
    assert {n: (m["node"], m["gpu"]) for n, m in gpus.items()} == {
        "study-h100-nvl": ("n1", "H100 NVL"), "study-l40s": ("n2", "L40S"),
        "study-h100-xeon": ("n3", "H100")}
    assert "Xeon" in gpus["study-h100-xeon"]["cpu"]
    assert shipped_file("study") == shipped_file(ALIASES["study"]) == shipped_file(
        "study-h100-nvl")


@pytest.fixture
def llama3_8b_config() -> Path:
    return REPO_ROOT / LLAMA3_8B


def _coldstart(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coldstart", *args], capture_output=True,
                          text=True, timeout=300)


_ROW = re.compile(r"^│ (?P<name>[\w.]+)\s+│.*│ (?P<point>[\d.]+)\s+│ "
                  r"\[(?P<low>[\d.]+), (?P<high>[\d.]+)\]")


def test_the_front_door_predicts_llama3_8b_from_its_config(llama3_8b_config: Path) -> None:
    done = _coldstart("predict", str(llama3_8b_config), "--fit", "study")
    assert done.returncode == 0, done.stderr
    rows = {m["name"]: m for m in map(_ROW.match, done.stdout.splitlines()) if m}
    for name in (*PHASE_NAMES, "total"):
        assert name in rows, (name, done.stdout)
        low, point, high = (float(rows[name][k]) for k in ("low", "point", "high"))
        assert low < point < high, (name, low, point, high)
    said = [line for line in done.stdout.splitlines() if line.startswith("predictor: ")]
    assert len(said) == 1
    assert "study (shipped: study-h100-nvl)" in said[0] and "H100 NVL" in said[0]
    assert "vLLM 0.10.1.1" in said[0] and STUDY_FIGURE in said[0]


def test_study_total_for_llama3_8b_covers_the_studys_measurements(
        llama3_8b_config: Path, study_reference: Path, tmp_path: Path) -> None:
    """Each published total of the study's Llama-3-8B-shaped boot lies in the prediction's
    interval, the fit's own statement of where a new boot of the model falls (95 %).

    Not a held-out check: the twin is one of the fit's training models. What it checks is
    the path a user takes: features estimated from config.json alone (no weights, no log)
    land where the twin's measured boots do.
    """
    twin = json.loads((study_reference / "models_config.json").read_text())[LLAMA3_8B_TWIN]
    cfg = LLAMA3_8B_CONFIG
    assert (twin["layers"], twin["hidden_size"], twin["ffn_dim"], twin["num_attention_heads"],
            twin["num_key_value_heads"], twin["vocab_size"]) == (
        cfg["num_hidden_layers"], cfg["hidden_size"], cfg["intermediate_size"],
        cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["vocab_size"])
    out = tmp_path / "p.json"
    assert coldstart(["predict", str(llama3_8b_config), "--fit", "study", "--json", str(out)]) == 0
    total = json.loads(out.read_text())["total"]
    study = read_study(study_reference / "figures" / "figure-rest")
    average = next(r.wall_s for r in study.results if r.model == LLAMA3_8B_TWIN)
    measured = [average, *(r.wall_s for r in study.rounds[LLAMA3_8B_TWIN])]
    assert len(measured) == 6  # the average and the five iterations
    assert total["low_s"] <= min(measured) and max(measured) <= total["high_s"], (
        total, measured)


def test_an_assumed_storage_says_what_the_training_storages_would_give(
        llama3_8b_config: Path, tmp_path: Path) -> None:
    """No --load-gbps: the interval is at the training boots' median bandwidth, and the
    answer also gives the total at their slowest and fastest (the study's cached granite4.0-h
    files loaded 15x faster): the same model, seconds apart, by storage alone."""
    out = tmp_path / "p.json"
    assert coldstart(["predict", str(llama3_8b_config), "--fit", "study", "--json", str(out)]) == 0
    said = json.loads(out.read_text())
    span, total = said["storage_span"], said["total"]
    assert span["slowest_gbps"] < span["fastest_gbps"]
    assert span["total_at_fastest_s"] < total["predicted_s"] <= span["total_at_slowest_s"]
    assert "at the training boots' slowest" in said["storage"]
    assert coldstart(["predict", str(llama3_8b_config), "--fit", "study", "--load-gbps", "2",
                         "--json", str(out)]) == 0
    given = json.loads(out.read_text())
    assert given["storage_span"] is None and "(--load-gbps)" in given["storage"]


@pytest.mark.parametrize("name", shipped_names())
def test_every_shipped_name_answers_from_a_config_alone(name: str, llama3_8b_config: Path,
                                                        tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    assert coldstart(["predict", str(llama3_8b_config), "--fit", name, "--json", str(out)]) == 0
    p = json.loads(out.read_text())
    assert p["predictor"]["name"] == name and p["predictor"]["provenance"]["command"]
    assert set(p["phases"]) >= set(PHASE_NAMES)
    assert p["total"]["low_s"] < p["total"]["predicted_s"] < p["total"]["high_s"]


def test_an_unknown_name_is_one_line_with_the_shipped_names(llama3_8b_config: Path) -> None:
    done = _coldstart("predict", str(llama3_8b_config), "--fit", "nonsense")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "'nonsense'" in done.stderr
    assert all(name in done.stderr for name in shipped_names())


def test_list_fits_names_every_shipped_predictor() -> None:
    done = _coldstart("predict", "--list-fits")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == shipped_names()
    assert any("L40S" in line and "0.10.1.1" in line for line in lines)
    # each line names the cells' configuration its file was fitted in, as the file records it
    by_name = {line.split(":")[0]: line for line in lines}
    for name in shipped_names():
        if name in ALIASES:
            continue
        for group in load_predictor(shipped_file(name)).groups:
            cache = group.key["compile_cache"]
            assert f"compile_cache={cache}" in by_name[name], (name, by_name[name])
    # the study's boots reused their compile caches; the CPU scaling run compiled afresh
    assert "compile_cache=warm" in by_name["study-h100-nvl"]
    assert "compile_cache=cold" in by_name["cpu-scaling"]
