"""pytest benchmarks/ --splits N --group I: every selected cell in exactly one group, the same
groups every time, an empty group no failure. Collection only: nothing boots."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytest_split")

from benchmarks.matrix.cells import Cell, select  # noqa: E402
from benchmarks.split import estimate_s, fill_estimates  # noqa: E402
from document.boot_result import read_json  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ID = re.compile(r"^benchmarks/test_cold_start\.py::test_cold_start\[(.+)\]$")
EAGER_FOUR = ["--matrix", "full", "--models", "smollm2-135m", "--compile-caches", "off",
              "--entrypoints", "offline", "--loaders", "safetensors,runai_streamer"]


def _collect(*args: str, durations: Path) -> tuple[int, list[str], str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "benchmarks/", "-p", "no:cacheprovider",
                           "--collect-only", "-q", "--allow-busy-machine",  # nothing boots
                           "--durations-path", str(durations), *args],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    ids = [m.group(1) for line in proc.stdout.splitlines() if (m := ID.match(line.strip()))]
    return proc.returncode, ids, proc.stdout + proc.stderr


@pytest.mark.parametrize("selection, splits", [(["--matrix", "smoke"], 4), (EAGER_FOUR, 3)])
def test_every_cell_in_exactly_one_group_every_time(tmp_path, selection, splits):
    none = tmp_path / "no-durations"  # no file: the estimates decide
    code, unsplit, out = _collect(*selection, durations=none)
    assert code == 0, out
    groups = []
    for group in range(1, splits + 1):
        code, ids, out = _collect(*selection, "--splits", str(splits), "--group", str(group),
                                  durations=none)
        assert code == 0, out
        groups.append(ids)
    # The same groups every time (each machine computes its own from the same inputs).
    assert _collect(*selection, "--splits", str(splits), "--group", "1",
                    durations=none)[1] == groups[0]
    cells = [c for g in groups for c in g]
    assert sorted(cells) == sorted(unsplit) and len(cells) == len(set(cells))


def test_an_empty_group_writes_its_json_and_passes(tmp_path):
    """4 equal cells in 3 groups are cut 2, 2, 0 by pytest-split's default algorithm."""
    out = tmp_path / "shard3.json"
    code, ids, text = _collect(*EAGER_FOUR, "--splits", "3", "--group", "3",
                               "--benchmark-json", str(out), durations=tmp_path / "none")
    assert code == 0 and ids == [], text
    assert "group 3 of 3 holds no cell" in text
    doc = read_json(out)
    assert doc["benchmarks"] == [] and doc["coldstart"]["unrecorded"] == []
    assert doc["machine_info"]["coldstart"]["platform"]


def test_a_k_that_matches_nothing_is_still_no_test_collected(tmp_path):
    code, ids, text = _collect(*EAGER_FOUR, "--splits", "3", "--group", "1", "-k", "nothing",
                               durations=tmp_path / "none")
    assert code == 5 and ids == [] and "holds no cell" not in text


def test_stored_durations_decide_the_groups(tmp_path):
    """A durations file where one cell is as long as the three others: it is a group alone."""
    code, unsplit, out = _collect(*EAGER_FOUR, durations=tmp_path / "none")
    long_one = unsplit[1]
    stored = tmp_path / ".test_durations"
    stored.write_text(json.dumps({
        f"benchmarks/test_cold_start.py::test_cold_start[{c}]": 300.0 if c == long_one else 100.0
        for c in unsplit}))
    groups = [_collect(*EAGER_FOUR, "--splits", "2", "--group", str(g), "--splitting-algorithm",
                       "least_duration", durations=stored)[1] for g in (1, 2)]
    assert [long_one] in groups
    assert sorted(c for g in groups for c in g) == sorted(unsplit)


class _Item:
    def __init__(self, cell: Cell):
        self.nodeid = f"benchmarks/test_cold_start.py::test_cold_start[{cell.id}]"
        self.callspec = type("CallSpec", (), {"params": cell.params()})()


def test_estimates_follow_the_axes_and_take_the_stored_seconds_unit():
    cells = select("full", model=["smollm2-135m", "rand-llama3.2-1b"],
                   loader=["safetensors"], page_cache=["warm"], entrypoint=["offline"])
    by = {(c.model, c.compile_cache): estimate_s(c) for c in cells}
    for model in ("smollm2-135m", "rand-llama3.2-1b"):
        assert by[(model, "cold")] > by[(model, "warm")] > by[(model, "off")]
    # 1.2B parameters take longer than 135M, compiled or not (107.5 s vs 88.9 s cold, in
    # tests/data), though the 135M model has more layers to compile (30 vs 16)
    for cache in ("cold", "warm", "off"):
        assert by[("rand-llama3.2-1b", cache)] > by[("smollm2-135m", cache)]
    assert estimate_s(cells[0], rounds=3) == pytest.approx(3 * estimate_s(cells[0]))
    items = [_Item(c) for c in cells]
    # One cell stored at twice its estimate: the others' estimates are scaled likewise.
    stored = {items[0].nodeid: 2 * estimate_s(cells[0])}
    filled = fill_estimates(stored, items, rounds=1)
    assert filled[items[0].nodeid] == stored[items[0].nodeid]
    for item, cell in zip(items[1:], cells[1:]):
        assert filled[item.nodeid] == pytest.approx(2 * estimate_s(cell))
    assert fill_estimates({}, items, rounds=1) == {i.nodeid: estimate_s(c)
                                                  for i, c in zip(items, cells)}


def test_shards_of_scripted_boots_merge_into_the_unsplit_cells(tmp_path):
    """Every shard through pytest-benchmark and the JSON hooks for real (tests/_fake_boots.py
    scripts the boots): shard 2 is then 'killed' (its JSON removed) and gives its cells log."""
    import os

    # The scripted boots compile (an eager boot's phases are not scripted).
    cold_four = ["--matrix", "full", "--models", "smollm2-135m", "--compile-caches", "cold", "--entrypoints", "offline",
                 "--loaders", "safetensors,runai_streamer"]
    code, unsplit, out = _collect(*cold_four, durations=tmp_path / "none")
    assert code == 0, out
    env = {**os.environ, "FAKE_ROUNDS": "measured", "FAKE_FAULTS": "",
           "COLDSTART_CACHE_DIR": str(tmp_path / "cache")}
    shards = []
    for group in (1, 2, 3):
        shard = tmp_path / f"shard{group}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "benchmarks/", "-p", "tests._fake_boots",
             "-p", "no:cacheprovider", "-q", "--basetemp", str(tmp_path / f"inner{group}"),
             "--allow-busy-machine", "--durations-path", str(tmp_path / "none"), *cold_four,
             "--splits", "3", "--group", str(group), "--benchmark-json", str(shard)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:]
        shards.append(shard)
    logs = [Path(f"{s}.cells.jsonl") for s in shards]
    assert [p.exists() for p in logs] == [True, True, False]  # the empty group boots nothing
    shards[1].unlink()
    merged = tmp_path / "merged.json"
    proc = subprocess.run([sys.executable, "-m", "coldstart", "merge", str(shards[0]), str(logs[1]),
                           str(shards[2]), "-o", str(merged)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = read_json(merged)
    ids = [b["param"] for b in doc["benchmarks"]]
    assert sorted(ids) == sorted(unsplit) and len(ids) == len(set(ids))
    # The log's cells carry the JSON's own machine_info: one machine.
    assert doc["coldstart"]["machines"] == 1
    assert len({json.dumps(b["machine_info"], sort_keys=True) for b in doc["benchmarks"]}) == 1
    from coldstart.__main__ import main as coldstart

    assert coldstart(["check", str(merged), *cold_four]) == 0


def test_a_run_narrowed_by_k_records_what_it_ran_in_every_shard(tmp_path):
    """``-k`` narrows the selection a run records (``coldstart.matrix_cells``); ``--splits``
    does not: both shards of a ``-k`` run say the same two cells, and check holds their merge
    to those two without axis options."""
    import os

    from coldstart.__main__ import main as coldstart
    from document.boot_result import matrix_cells

    cold_four = ["--matrix", "full", "--models", "smollm2-135m", "--compile-caches", "cold",
                 "--entrypoints", "offline", "--loaders", "safetensors,runai_streamer"]
    code, ran, out = _collect(*cold_four, "-k", "runai_streamer", durations=tmp_path / "none")
    assert code == 0 and len(ran) == 2, out
    env = {**os.environ, "FAKE_ROUNDS": "measured", "FAKE_FAULTS": "",
           "COLDSTART_CACHE_DIR": str(tmp_path / "cache")}
    shards = []
    for group in (1, 2):
        shard = tmp_path / f"shard{group}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "benchmarks/", "-p", "tests._fake_boots",
             "-p", "no:cacheprovider", "-q", "--basetemp", str(tmp_path / f"inner{group}"),
             "--allow-busy-machine", "--durations-path", str(tmp_path / "none"), *cold_four,
             "-k", "runai_streamer", "--splits", "2", "--group", str(group),
             "--benchmark-json", str(shard)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:]
        shards.append(shard)
    whole = [c.id for c in select("full")]
    digests = [read_json(s)["coldstart"]["matrix_cells"] for s in shards]
    assert digests == [matrix_cells(ran, of=whole)] * 2
    assert [len(read_json(s)["benchmarks"]) for s in shards] == [1, 1]
    merged = tmp_path / "merged.json"
    assert coldstart(["merge", *map(str, shards), "-o", str(merged)]) == 0
    assert coldstart(["check", str(merged)]) == 0
    # A shard alone lacks the other's cell: inconclusive, never a pass on half.
    assert coldstart(["check", str(shards[0])]) == 3


def test_a_rerun_of_what_failed_last_time_is_held_to_its_whole_selection(tmp_path):
    """``--lf`` narrows the run to the cells that failed last time, before any hook sees the
    items: that is no selection of the matrix, so the run records its axis options' cells and
    check expects every one of them (inconclusive), not a pass on the one it re-ran."""
    import os

    from coldstart.__main__ import main as coldstart
    from document.boot_result import matrix_cells

    cold_four = ["--matrix", "full", "--models", "smollm2-135m", "--compile-caches", "cold",
                 "--entrypoints", "offline", "--loaders", "safetensors,runai_streamer"]
    code, four, out = _collect(*cold_four, durations=tmp_path / "none")
    assert code == 0 and len(four) == 4, out
    cache = tmp_path / "cache-dir"
    (cache / "v" / "cache").mkdir(parents=True)
    (cache / "v" / "cache" / "lastfailed").write_text(json.dumps(
        {f"benchmarks/test_cold_start.py::test_cold_start[{four[0]}]": True}))
    run = tmp_path / "rerun.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "-p", "tests._fake_boots", "-q",
         "-o", f"cache_dir={cache}", "--lf", "--basetemp", str(tmp_path / "inner"),
         "--allow-busy-machine", *cold_four, "--benchmark-json", str(run)],
        cwd=REPO, env={**os.environ, "FAKE_ROUNDS": "measured", "FAKE_FAULTS": "",
                       "COLDSTART_CACHE_DIR": str(tmp_path / "cache")},
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    doc = read_json(run)
    assert [b["param"] for b in doc["benchmarks"]] == [four[0]]
    whole = [c.id for c in select("full")]
    assert doc["coldstart"]["matrix_cells"] == matrix_cells(four, of=whole)
    assert coldstart(["check", str(run)]) == 3
