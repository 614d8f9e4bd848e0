"""The machine facts are one typed model (document.machine_facts.MachineFacts): what this machine
writes, what the committed real runs hold, and the one key of the vLLM release."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.provenance import machine_facts
from benchmarks.resume import resume_facts
from document import MachineFacts, read_run, recorded_facts
from document.boot_result import DOCUMENT_KEY, BootResult
from harness.spec import installed_vllm_version

DATA = Path(__file__).resolve().parents[1] / "docs" / "data"


def test_this_machine_writes_its_vllm_under_the_key_a_boot_names_it_by() -> None:
    facts = machine_facts()
    written = facts.as_json()
    assert "vllm" not in written and written["vllm_version"] == installed_vllm_version()
    assert "vllm_version" in BootResult.model_fields  # the same name a boot's record uses
    # read back, it is the same facts
    assert MachineFacts.of(json.loads(json.dumps(written))) == facts
    # what the machine says of itself, typed
    assert facts.cpu_count and facts.cpu_count >= 1 and facts.memory_bytes > 2**28
    assert facts.platform in ("cpu", "cuda") and isinstance(facts.cpu_isa, list)


def test_the_committed_real_runs_read_as_typed_facts() -> None:
    # Written before the key was renamed: machine_info.coldstart.vllm.
    runs = sorted(DATA.glob("gate5-vllm-cpu-*.json"))
    assert len(runs) == 2
    for path in runs:
        raw = json.loads(path.read_text())["machine_info"][DOCUMENT_KEY]
        facts = read_run(path).machine_facts
        assert facts.vllm_version == raw["vllm"] and path.stem.endswith(raw["vllm"])
        assert facts.cpu_vendor == raw["cpu_vendor"] and facts.isa == " ".join(
            sorted(raw["cpu_isa"]))
        assert facts.fixture_storage is not None
        assert facts.fixture_storage.label() == "/dev/vda (ext4, rotational)"
        assert facts.memory_gib == round(raw["memory_bytes"] / 2**30)


def test_a_fact_of_the_wrong_type_is_unknown_and_the_rest_still_read() -> None:
    facts = recorded_facts({DOCUMENT_KEY: {"cpu_count": "many", "vllm": "0.32.0",
                                           "kernel": "6.1", "later_writers_key": [1]}})
    assert facts.cpu_count is None and facts.vllm_version == "0.32.0" and facts.kernel == "6.1"
    assert facts.model_extra == {"later_writers_key": [1]}
    assert recorded_facts({}) == MachineFacts() == recorded_facts({DOCUMENT_KEY: "not facts"})


def test_resume_compares_the_vllm_release_of_old_and_new_documents_alike() -> None:
    old = {DOCUMENT_KEY: {"platform": "cpu", "vllm": "0.32.0", "cpu_count": 2}}
    new = {DOCUMENT_KEY: {"platform": "cpu", "vllm_version": "0.32.0", "cpu_count": 2}}
    assert resume_facts(old) == resume_facts(new)
    assert resume_facts(old)["vllm_version"] == "0.32.0"
    other = {DOCUMENT_KEY: {"platform": "cpu", "vllm_version": "0.31.0", "cpu_count": 2}}
    assert resume_facts(other) != resume_facts(new)
