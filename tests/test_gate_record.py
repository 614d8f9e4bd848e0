"""What a gate records on its sides is one typed model (document.GateRecord): every committed
real gate side reads as it, and writes again to the same JSON; compare reads its design, its
unbooted cells and its stop by field; a record that is not a gate's is refused by the reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.compare import PreparedRuns, design_looks, unbooted_changes
from document import GateRecord, read_run
from document.boot_result import SchemaError

DATA = Path(__file__).resolve().parents[1] / "docs" / "data"
SIDES = sorted(p for p in DATA.glob("gate*-vllm-cpu-*.json"))


def _prepared(base, new) -> PreparedRuns:
    return PreparedRuns(base_doc=base, base=[], new_doc=new, new=[], meta_base={}, meta_new={},
                        disagree={}, unchecked=[], overlap_warning=None)


def test_every_committed_gate_side_reads_as_a_gate_record_and_writes_back_the_same():
    assert len(SIDES) >= 14, SIDES  # seven gates committed, two sides each
    for path in SIDES:
        raw = json.loads(path.read_text())["coldstart"]["gate"]
        record = read_run(path).coldstart.gate
        assert isinstance(record, GateRecord), path
        assert record.model_dump(mode="json", exclude_unset=True) == raw, path
        assert record.side in path.name or record.release(record.side).endswith(
            path.stem.split("-")[-1]), path


def test_compare_reads_the_design_of_a_sequential_gate_and_none_of_an_earlier_one():
    base, new = (read_run(DATA / f"gatewarm-vllm-cpu-0.3{v}.0.json") for v in (1, 2))
    looks, cells, kind = design_looks(_prepared(base, new))
    # two cells chosen (alpha split over both), one looked at: the regression decided the
    # release and the second was never booted
    gate = base.coldstart.gate
    assert kind == "sequential" and cells == 2 and len(gate.not_booted) == 1
    ((cell, look),) = looks.items()
    assert look.n == gate.decided[cell].rounds and look.n_max == gate.design.max_rounds
    assert {c.cell for c in unbooted_changes(_prepared(base, new), set())} == set(gate.not_booted)
    # the first committed gate (a fixed design, before the record had one): one look
    old = [read_run(DATA / f"gate-vllm-cpu-0.3{v}.0.json") for v in (1, 2)]
    assert old[0].coldstart.gate.design is None
    assert design_looks(_prepared(*old)) == ({}, None, "fixed")
    # sides whose designs differ are not judged as one gate's
    other = new.model_copy(deep=True)
    other.coldstart.gate.design.max_rounds = 9
    assert design_looks(_prepared(base, other))[2] == "fixed"


def test_a_stopped_gate_and_its_unbooted_cells_are_not_measured():
    base = read_run(DATA / "gatewarm-vllm-cpu-0.31.0.json")
    stopped = base.model_copy(deep=True)
    stopped.coldstart.gate = GateRecord.model_validate(
        {**base.coldstart.gate.model_dump(mode="json"), "not_booted": ["cell-b"],
         "stopped": {"after_boots": 7, "why": "SIGTERM", "undecided": ["cell-c"]}})
    changes = {c.cell: c for c in unbooted_changes(_prepared(stopped, stopped), set())}
    assert set(changes) == {"cell-b", "cell-c"}
    assert all(c.status == "not measured" for c in changes.values())
    assert "stopped (SIGTERM) after 7 boots" in changes["cell-c"].note


def test_a_gate_record_that_is_not_one_is_refused_naming_the_file(tmp_path):
    data = json.loads((DATA / "gatewarm-vllm-cpu-0.32.0.json").read_text())
    data["coldstart"]["gate"]["decided"] = {"cell": {"verdict": "probably fine", "rounds": 3}}
    bad = tmp_path / "bad-side.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(SchemaError, match="bad-side.json"):
        read_run(bad)


def test_a_sequential_design_without_its_spending_terms_is_refused_not_judged_as_one_look(
        tmp_path):
    # judged as a fixed design it would spend the whole alpha at one look: more than the gate's
    # rule allows after several looks
    data = json.loads((DATA / "gatewarm-vllm-cpu-0.32.0.json").read_text())
    del data["coldstart"]["gate"]["design"]["max_rounds"]
    bad = tmp_path / "no-max-rounds.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(SchemaError, match="no-max-rounds.json"):
        read_run(bad)
