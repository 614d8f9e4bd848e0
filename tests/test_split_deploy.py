"""deploy/kubernetes and .github/workflows/matrix.yml, checked offline: every manifest against
the Kubernetes schema of KUBERNETES_VERSION (kubernetes-validate, strict: an unknown field
fails), the CPU overlay rendered by `kubectl kustomize` where kubectl exists, the shard count
said alike everywhere, and the workflow's keys the ones GitHub requires."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KUBE = REPO / "deploy" / "kubernetes"
# The version the README states; backoffLimitPerIndex (per-shard retries) is GA since 1.33.
KUBERNETES_VERSION = "1.33.0"
MANIFESTS = [KUBE / "base" / "job.yaml", KUBE / "base" / "pvc.yaml", KUBE / "collect-pod.yaml"]


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def _validate(doc: dict) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    kv.validate(doc, KUBERNETES_VERSION, strict=True)


def _rendered_overlay() -> list[dict]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed: the overlay is not rendered")
    proc = subprocess.run(["kubectl", "kustomize", str(KUBE / "overlays" / "cpu")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return _docs(proc.stdout)


def _job(docs: list[dict]) -> dict:
    (job,) = [d for d in docs if d["kind"] == "Job"]
    return job


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifests_validate_against_the_schema(path):
    for doc in _docs(path.read_text()):
        _validate(doc)


def test_the_validation_can_fail():
    kv = pytest.importorskip("kubernetes_validate")
    job = _job(_docs((KUBE / "base" / "job.yaml").read_text()))
    typo = copy.deepcopy(job)
    typo["spec"]["completionsMode"] = typo["spec"].pop("completionMode")
    with pytest.raises(kv.ValidationError):
        _validate(typo)
    wrong_type = copy.deepcopy(job)
    wrong_type["spec"]["parallelism"] = "three"
    with pytest.raises(kv.ValidationError):
        _validate(wrong_type)


def test_the_cpu_overlay_renders_and_validates():
    docs = _rendered_overlay()
    for doc in docs:
        _validate(doc)
    container = _job(docs)["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "vllm-coldstart:cpu"
    assert "nvidia.com/gpu" not in str(container["resources"])
    base = _job(_docs((KUBE / "base" / "job.yaml").read_text()))
    assert base["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"] == 1


def _shards_agree(job: dict) -> None:
    spec = job["spec"]
    pod = spec["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == int(env["SPLITS"])
    command = " ".join(pod["containers"][0]["args"])
    assert "group=$((JOB_COMPLETION_INDEX + 1))" in command
    assert '--splits "$SPLITS" --group "$group"' in command
    # one pod per node, whatever other run of this Job is on the cluster
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= \
        spec["template"]["metadata"]["labels"].items()
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert env["COLDSTART_FIXTURE_DIR"] in mounts and "/results" in mounts


def test_the_shard_count_and_the_pod_command_agree():
    _shards_agree(_job(_docs((KUBE / "base" / "job.yaml").read_text())))


def test_the_shard_count_agrees_in_the_overlay():
    _shards_agree(_job(_rendered_overlay()))


def test_the_workflow_has_the_keys_github_requires():
    doc = yaml.safe_load((REPO / ".github" / "workflows" / "matrix.yml").read_text())
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    inputs = on["workflow_dispatch"]["inputs"]
    assert {"matrix", "shards", "runner"} <= inputs.keys()
    assert all(i.get("type") in {"string", "choice", "boolean", "number", "environment"}
               for i in inputs.values())
    jobs = doc["jobs"]
    for name, job in jobs.items():
        assert "runs-on" in job and job["steps"], name
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), (name, step)
    shard = jobs["shard"]
    assert "${{ inputs.runner }}" in shard["runs-on"]
    assert shard["strategy"]["matrix"]["group"] == "${{ fromJSON(needs.plan.outputs.groups) }}"
    assert shard["strategy"]["fail-fast"] is False
    runs = " ".join(s.get("run", "") for s in shard["steps"])
    assert '--splits "$SHARDS" --group "$GROUP"' in runs
    assert any("upload-artifact" in s.get("uses", "") for s in shard["steps"])
    merge = jobs["merge"]
    assert merge["needs"] == "shard"
    runs = " ".join(s.get("run", "") for s in merge["steps"])
    for command in ("analysis.merge", "benchmarks.check", "analysis.report"):
        assert f"python -m {command}" in runs
    uploads = [s for s in merge["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploads and "merged.json" in uploads[0]["with"]["path"]
