"""analysis.merge given what a cluster leaves behind (issue 29), each fault cut from the
committed real shards (tests/data/shards-smoke: the smoke matrix's six cells in three shards,
shard 3 killed before its JSON): a shard JSON cut while its pod was killed, a shard missing,
a shard of another commit whose every cell failed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.matrix.cells import select
from coldstart.__main__ import main as coldstart
from document import read_run
from document.boot_result import DOCUMENT_KEY, BootResult, matrix_cells

SHARDS = Path(__file__).parent / "data" / "shards-smoke"
SMOKE = [c.id for c in select("smoke")]
OTHER_COMMIT = "0" * 40


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    folder = tmp_path / "shards"
    folder.mkdir()
    for f in SHARDS.glob("shard-*"):
        shutil.copy(f, folder / f.name)
    return folder


def _merge(capsys, *args) -> tuple[int, str]:
    code = coldstart(["merge", *(str(a) for a in args)])
    return code, capsys.readouterr().err


def _cells(path: Path) -> list[str]:
    return [c.id for c in read_run(path).cells()]


def _log_cells(path: Path) -> list[str]:
    cells = []
    for line in path.read_text().splitlines():
        try:
            cells.append(json.loads(line)["cell"])
        except ValueError:
            continue  # the cut last line of shard 3
    return cells


def _all(folder: Path) -> list[Path]:
    return sorted(folder.glob("shard-*.json")) + sorted(folder.glob("shard-*.cells.jsonl"))


def test_the_committed_shards_hold_the_smoke_matrix(shards, tmp_path, capsys):
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *_all(shards), "--matrix", "smoke", "-o", out)
    assert code == 0, err
    assert sorted(_cells(out)) == sorted(SMOKE)


def test_a_cut_json_is_read_from_its_cells_log(shards, tmp_path, capsys):
    """A pod killed while pytest-benchmark wrote its JSON: the JSON is cut, its cells log
    whole. Every cell of that log is merged, and the merge says where they came from."""
    cut = shards / "shard-1.json"
    text = cut.read_text()
    cut.write_text(text[: len(text) // 2])
    log = shards / "shard-1.json.cells.jsonl"
    out = tmp_path / "merged.json"
    for inputs in (_all(shards), [p for p in _all(shards) if p != log]):  # log given or not
        out.unlink(missing_ok=True)
        code, err = _merge(capsys, *inputs, "--matrix", "smoke", "-o", out)
        assert code == 0, err
        assert f"{cut}: not JSON" in err and f"read from {log}" in err
        assert set(_log_cells(log)) <= set(_cells(out))
        assert sorted(_cells(out)) == sorted(SMOKE)


def test_a_cut_json_without_its_cells_log_is_refused(shards, tmp_path, capsys):
    cut = shards / "shard-2.json"
    cut.write_text(cut.read_text()[:100])
    (shards / "shard-2.json.cells.jsonl").unlink()
    code, err = _merge(capsys, *_all(shards), "-o", tmp_path / "merged.json")
    assert code == 2 and err.count("\n") == 1
    assert "shard-2.json: not JSON" in err and "no cells log beside it" in err


def test_a_missing_shard_names_its_cells_and_fails_unless_accepted(shards, tmp_path, capsys):
    (shards / "shard-3.json.cells.jsonl").unlink()  # its pod never ran
    gone = _log_cells(SHARDS / "shard-3.json.cells.jsonl")
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *_all(shards), "--matrix", "smoke", "-o", out)
    assert code == 1
    assert "2 cell(s) of the matrix missing" in err and all(c in err for c in gone)
    assert len(_cells(out)) == 4  # written all the same: the report shows what there is
    out.unlink()
    code, err = _merge(capsys, *_all(shards), "--matrix", "smoke", "--allow-missing", "-o", out)
    assert code == 0 and "accepted (--allow-missing)" in err and all(c in err for c in gone)


def test_a_narrowed_matrix_expects_only_its_cells(shards, tmp_path, capsys):
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, shards / "shard-1.json", "--matrix", "smoke", "--loaders",
                       "safetensors", "-o", out)
    expected = [c.id for c in select("smoke", loader=["safetensors"])]
    gone = [c for c in expected if c not in _cells(out)]
    assert code == 1 and gone and len(gone) < len(expected)
    assert f"{len(gone)} cell(s) of the matrix missing" in err and all(c in err for c in gone)
    assert "loader=tensorizer" not in err  # outside the narrowing: not expected
    code, err = _merge(capsys, shards / "shard-1.json", "--loaders", "safetensors",
                       "-o", tmp_path / "m2.json")
    assert code == 2 and "give --matrix too" in err


def test_without_the_matrix_the_shards_count_says_how_many_are_missing(shards, tmp_path,
                                                                       capsys):
    """Shards that say their selection (``matrix_cells``, schema 3) are counted against it;
    shards that do not are said to be uncounted, never passed as whole."""
    inputs = [shards / "shard-1.json", shards / "shard-2.json"]
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *inputs, "-o", out)
    assert code == 0 and "not counted against the matrix" in err
    for p in inputs:
        doc = json.loads(p.read_text())
        doc[DOCUMENT_KEY]["matrix_cells"] = matrix_cells(SMOKE)
        p.write_text(json.dumps(doc))
    out.unlink()
    code, err = _merge(capsys, *inputs, "-o", out)
    assert code == 1 and "2 cell(s) of the matrix missing" in err and "give --matrix" in err


def _all_failed(shard: Path, commit: dict) -> None:
    """``shard`` as benchmarks/conftest.py writes it when no cell was measured (every boot
    failed at the hub): no benchmarks, each cell unrecorded and failed, and its cells log."""
    doc = json.loads(shard.read_text())
    lines = []
    unrecorded = []
    for entry in doc["benchmarks"]:
        params = entry["params"]
        failed = BootResult(state="failed", error="OSError: We couldn't connect to "
                            "'https://huggingface.co'", **params)
        # of the shard's own schema version, as its run wrote it
        record = {**failed.model_dump(mode="json"),
                  "schema_version": entry["extra_info"]["schema_version"]}
        unrecorded.append({**record, "checks_failed": []})
        lines.append(json.dumps({"cell": entry["param"], "params": params,
                                 "machine_info": {"coldstart": doc["machine_info"]["coldstart"]},
                                 "commit_info": commit, "checks_failed": [], "result": record,
                                 "rounds": [record]}))
    doc["benchmarks"] = []
    doc[DOCUMENT_KEY]["unrecorded"] = unrecorded
    doc["commit_info"] = commit
    shard.write_text(json.dumps(doc))
    Path(f"{shard}.cells.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("document_says", ["its commit", "nothing"])
def test_an_all_failed_shard_of_another_commit_is_refused(shards, tmp_path, capsys,
                                                          document_says):
    """Its document says the commit (as conftest writes it now), or says none (as it did: a
    document written with no cell measured had ``commit_info: {}``) while its cells log's
    lines do: refused either way, as a measured shard of another commit is."""
    other = {**json.loads((shards / "shard-1.json").read_text())["commit_info"],
             "id": OTHER_COMMIT}
    _all_failed(shards / "shard-2.json", other)
    if document_says == "nothing":
        doc = json.loads((shards / "shard-2.json").read_text())
        doc["commit_info"] = {}
        (shards / "shard-2.json").write_text(json.dumps(doc))
    code, err = _merge(capsys, *_all(shards), "-o", tmp_path / "merged.json")
    error = err.splitlines()[-1]  # after the notes on shard 3's cut line and unknown commit
    assert code == 2 and error.startswith("coldstart merge: error: shards of different commits")
    assert OTHER_COMMIT in error
    code, err = _merge(capsys, *_all(shards), "--allow-mixed-commits",
                       "-o", tmp_path / "merged.json")
    assert code == 0, err


def test_a_shard_that_says_no_commit_is_named_not_passed(shards, tmp_path, capsys):
    doc = json.loads((shards / "shard-2.json").read_text())
    doc["commit_info"] = {}
    (shards / "shard-2.json").write_text(json.dumps(doc))
    code, err = _merge(capsys, shards / "shard-1.json", shards / "shard-2.json",
                       "-o", tmp_path / "merged.json")
    assert code == 0 and f"commit not checked for {shards / 'shard-2.json'}" in err


def test_every_line_of_the_front_doors_merge_names_it(shards, tmp_path):
    """`coldstart merge` on the shards as the cluster leaves them (shard 3's cells log cut):
    each progress and warning line starts with the program's name, the cut line's too."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "coldstart", "merge", "--matrix", "smoke",
                           *map(str, _all(shards)), "-o", str(tmp_path / "merged.json")],
                          capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert any("a cut last line left out" in line for line in lines)
    assert lines and all(line.startswith("coldstart merge") for line in lines), lines


def test_joint_selection_keeps_only_what_every_input_says():
    """The one rule merge and a cells log's lines share: a selection all agree on stays;
    different selections of one matrix keep only the matrix's digest; a matrix said
    differently, or selections that no matrix digest ties together, are of different runs."""
    from document.merging import joint_selection

    whole = matrix_cells(SMOKE)
    a = matrix_cells(SMOKE[:2], of=SMOKE)
    b = matrix_cells(SMOKE[2:], of=SMOKE)
    older = matrix_cells(SMOKE[:2])
    assert joint_selection([a, a]) == a
    assert joint_selection([a, older]) == older  # the matrix's digest is not every one's
    assert joint_selection([a, b]) == {"matrix": whole}
    assert joint_selection([a, matrix_cells(SMOKE[2:], of=SMOKE[:3])]) is None
    assert joint_selection([older, matrix_cells(SMOKE[2:])]) is None
    assert joint_selection([]) is None
