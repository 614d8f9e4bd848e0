"""deploy/kubernetes, .github/workflows and the Dockerfile, checked offline by the real tools:
base, the CPU overlay and the merge Job rendered by `kubectl kustomize` and validated against
the Kubernetes schemas of 1.28 to 1.34 (kubernetes-validate, strict: an unknown field fails),
actionlint (with shellcheck on every `run:` step) on the workflows, hadolint on the
Dockerfile, the shard count said alike everywhere, and the workflow's keys the ones GitHub
requires. A tool that is not installed skips its tests, saying so (the `test` extra installs
them all on Linux x86_64; .ci/run installs kubectl where it is missing)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KUBE = REPO / "deploy" / "kubernetes"
# The schemas the README states; backoffLimitPerIndex, podFailurePolicy's FailIndex and
# podReplacementPolicy are fields of every one of them (on by default from 1.29).
KUBERNETES_VERSIONS = ["1.28.0", "1.29.0", "1.30.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0"]
KUBERNETES_VERSION = KUBERNETES_VERSIONS[-1]
MANIFESTS = [KUBE / "base" / "job.yaml", KUBE / "base" / "pvc.yaml", KUBE / "merge" / "job.yaml"]
KUSTOMIZATIONS = ["base", "overlays/cpu", "merge"]


def _tool(name: str) -> str:
    """The linter ``name`` from this interpreter's environment (the test extra), else PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]' brings it on Linux "
                    "x86_64): not run")
    return found


def _docs(text: str) -> list[dict]:
    return [d for d in yaml.safe_load_all(text) if d]


def _validate(doc: dict, version: str = KUBERNETES_VERSION) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    kv.validate(doc, version, strict=True)


def _render(directory: Path) -> list[dict]:
    kubectl = _tool("kubectl")
    proc = subprocess.run([kubectl, "kustomize", str(directory)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return _docs(proc.stdout)


def _rendered_overlay() -> list[dict]:
    return _render(KUBE / "overlays" / "cpu")


def _job(docs: list[dict]) -> dict:
    (job,) = [d for d in docs if d["kind"] == "Job"]
    return job


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_manifests_validate_against_the_schema(path):
    for doc in _docs(path.read_text()):
        _validate(doc)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_rendering_validates_strictly(kustomization, version):
    docs = _render(KUBE / kustomization)
    assert docs
    for doc in docs:
        _validate(doc, version)


def _render_with(tmp_path: Path, **params: str) -> list[dict]:
    """base rendered with these params.env values (a copy of deploy/kubernetes)."""
    copy_dir = tmp_path / "kubernetes"
    shutil.copytree(KUBE, copy_dir)
    env = copy_dir / "params" / "params.env"
    lines = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line)
    env.write_text("".join(f"{k}={v}\n" for k, v in {**lines, **params}.items()))
    return _render(copy_dir / "base")


def test_the_gpu_node_matrix_gets_two_gpus_and_dev_shm(tmp_path):
    matrix = "examples/matrices/gpu-node.yaml"
    proc = subprocess.run([sys.executable, "deploy/gpus.py", matrix], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    docs = _render_with(tmp_path, MATRIX=matrix, GPUS=proc.stdout.strip(),
                        RESULTS_STORAGE_CLASS="efs-sc", MODELS_STORAGE="40Gi")
    for doc in docs:
        _validate(doc)
    job = _job(docs)
    pod = job["spec"]["template"]["spec"]
    (shard,) = pod["containers"]
    assert int(shard["resources"]["limits"]["nvidia.com/gpu"]) == 2
    volumes = {v["name"]: v for v in pod["volumes"]}
    shm = next(m for m in shard["volumeMounts"] if m["mountPath"] == "/dev/shm")
    assert volumes[shm["name"]]["emptyDir"]["medium"] == "Memory"
    assert volumes["models"]["emptyDir"]["sizeLimit"] == "40Gi"  # the node's disk, no hostPath
    (claim,) = [d for d in docs if d["kind"] == "PersistentVolumeClaim"]
    assert claim["spec"]["storageClassName"] == "efs-sc"
    (params,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert params["data"]["MATRIX"] == matrix
    assert shard["envFrom"][0]["configMapRef"]["name"] == params["metadata"]["name"]


def test_the_merge_job_reads_the_run_of_the_params_and_needs_no_gpu_image():
    docs = _render(KUBE / "merge")
    job = _job(docs)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "vllm-coldstart:analysis"
    assert "sleep" not in " ".join(container["args"])
    (params,) = [d for d in docs if d["kind"] == "ConfigMap"]
    base_params = [d for d in _render(KUBE / "base") if d["kind"] == "ConfigMap"]
    assert base_params == [params]  # the same run, the same ConfigMap (name and hash)
    assert container["envFrom"][0]["configMapRef"]["name"] == params["metadata"]["name"]


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
    base = _job(_render(KUBE / "base"))
    assert int(base["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpu"]) == 1


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
    for command in ("coldstart merge", "coldstart check", "coldstart report"):
        assert f"python -m {command}" in runs
    uploads = [s for s in merge["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploads and "merged.json" in uploads[0]["with"]["path"]


# ----------------------------------------------------------------------------- the linters
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


def _actionlint(*paths: Path) -> subprocess.CompletedProcess:
    actionlint = _tool("actionlint")
    shellcheck = _tool("shellcheck")  # without it, actionlint skips the `run:` scripts
    return subprocess.run([actionlint, "-shellcheck", shellcheck, "-no-color",
                           *map(str, paths)], cwd=REPO, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_with_shellcheck_passes(workflow):
    proc = _actionlint(workflow)
    assert proc.returncode == 0, proc.stdout + proc.stderr


SCRIPTS = [REPO / ".ci" / "run", *sorted((REPO / "scripts").glob("*.sh"))]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_shellcheck_passes_on_the_shell_scripts(script):
    """CI's own script and the bootstrap, at shellcheck's warning level (its info notes,
    such as an activate script it cannot follow, are not defects)."""
    proc = subprocess.run([_tool("shellcheck"), "-S", "warning", str(script)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_can_fail(tmp_path):
    """A workflow with an unquoted expansion (shellcheck's SC2086) and an unknown key."""
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: ls $FILES\n        shell: bash\n        if-not: x\n")
    proc = _actionlint(bad)
    assert proc.returncode == 1
    assert "SC2086" in proc.stdout and "if-not" in proc.stdout


def _hadolint(path: Path) -> list[dict]:
    hadolint = _tool("hadolint")
    proc = subprocess.run([hadolint, "--format", "json", "--no-fail", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout or "[]")


def test_hadolint_finds_no_error_in_the_dockerfile():
    findings = _hadolint(REPO / "Dockerfile")
    errors = [f for f in findings if f["level"] == "error"]
    assert not errors, errors
    # What it still warns about, on record: apt packages without pinned versions (DL3008),
    # which the base images' own apt lists decide.
    assert {f["code"] for f in findings} <= {"DL3008"}, findings


def test_hadolint_can_fail(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN cd /tmp && apt-get install curl\nCOPY . .\n")
    codes = {f["code"]: f["level"] for f in _hadolint(bad)}
    assert codes.get("DL3006") == "warning"  # untagged image
    assert codes.get("DL3003") == "warning" and codes.get("DL3014") == "warning"
    worse = tmp_path / "Dockerfile.root"
    worse.write_text("FROM python:3.12\nUSER root\nRUN apt-get install -y curl && sudo rm x\n")
    levels = {f["code"]: f["level"] for f in _hadolint(worse)}
    assert levels.get("DL3004") == "error" and levels.get("DL3002") == "warning"
