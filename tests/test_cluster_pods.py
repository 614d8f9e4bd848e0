"""The Kubernetes Jobs read as a cluster admin would (issue 29), on their renderings by
`kubectl kustomize`: pods that pass the restricted Pod Security Standard field by field, are
Guaranteed QoS, find the hub token in a Secret, select the matrix's GPU and tolerate its taint;
Jobs that end (a deadline, maxFailedIndexes); the merge Job's own command line run on the
committed shards; the durations file never written by a shard. Strict schema validation,
actionlint and hadolint are tests/test_split_deploy.py's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KUBE = REPO / "deploy" / "kubernetes"
SHARDS = REPO / "tests" / "data" / "shards-smoke"
GPU_NODE = "examples/matrices/gpu-node.yaml"
# The volume types the restricted profile allows (kubernetes.io/docs/concepts/security/
# pod-security-standards/, "Volume Types").
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                      "persistentVolumeClaim", "projected", "secret"}
SECRET_COMMAND = "kubectl create secret generic hf-token --from-file=hf-token="


def _render(directory: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the manifests are not rendered")
    proc = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def _validate(doc: dict) -> None:
    kv = pytest.importorskip("kubernetes_validate")
    kv.validate(doc, "1.34.0", strict=True)


def _job(docs: list[dict]) -> dict:
    (job,) = [d for d in docs if d["kind"] == "Job"]
    return job


def _params(docs: list[dict]) -> dict[str, str]:
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    return cm["data"]


def _copy(tmp_path: Path, **params: str) -> Path:
    """deploy/kubernetes copied, with these params.env values."""
    copy_dir = tmp_path / "kubernetes"
    shutil.copytree(KUBE, copy_dir)
    env = copy_dir / "params" / "params.env"
    lines = dict(line.split("=", 1) for line in env.read_text().splitlines() if "=" in line)
    env.write_text("".join(f"{k}={v}\n" for k, v in {**lines, **params}.items()))
    return copy_dir


def _plan(*args: str) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "deploy/plan.py", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    return dict(line.split("=", 1) for line in proc.stdout.splitlines())


RENDERINGS = ["base", "overlays/cpu", "merge"]


def _restricted_problems(pod: dict) -> list[str]:
    """What in ``pod`` the restricted Pod Security Standard (baseline included) refuses."""
    problems = []
    for key in ("hostNetwork", "hostPID", "hostIPC", "hostUsers"):
        if pod.get(key) is (key != "hostUsers"):
            problems.append(f"{key}: {pod[key]}")
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            problems.append(f"volume {volume['name']}: {sorted(kinds)}")
    pod_sc = pod.get("securityContext", {})
    if pod_sc.get("sysctls"):
        problems.append("sysctls")
    containers = [*pod.get("initContainers", []), *pod["containers"],
                  *pod.get("ephemeralContainers", [])]
    for c in containers:
        sc = c.get("securityContext", {})
        name = c["name"]
        if sc.get("privileged"):
            problems.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{name}: allowPrivilegeEscalation is not false")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            problems.append(f"{name}: capabilities do not drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            problems.append(f"{name}: adds {caps['add']}")
        non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
        if non_root is not True:
            problems.append(f"{name}: runAsNonRoot is not true")
        if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
            problems.append(f"{name}: runs as uid 0")
        seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {})).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            problems.append(f"{name}: seccompProfile {seccomp}")
        if sc.get("procMount", "Default") != "Default":
            problems.append(f"{name}: procMount")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            problems.append(f"{name}: hostPort")
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            problems.append(f"{name}: AppArmor unconfined")
    return problems


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_rendered_pods_meet_the_restricted_standard(rendering):
    pod = _job(_render(KUBE / rendering))["spec"]["template"]["spec"]
    assert _restricted_problems(pod) == []
    assert "initContainers" not in pod  # nothing chowns as root: no volume needs it


def test_the_restricted_check_can_fail():
    pod = _job(_render(KUBE / "base"))["spec"]["template"]["spec"]
    bad = {**pod, "volumes": [*pod["volumes"], {"name": "m", "hostPath": {"path": "/x"}}],
           "initContainers": [{"name": "chown", "image": "x",
                               "securityContext": {"runAsUser": 0, "runAsNonRoot": False}}]}
    found = " ".join(_restricted_problems(bad))
    assert "hostPath" in found and "chown: runs as uid 0" in found
    assert "chown: allowPrivilegeEscalation" in found and "chown: capabilities" in found


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_pods_are_guaranteed_qos(rendering):
    pod = _job(_render(KUBE / rendering))["spec"]["template"]["spec"]
    for c in [*pod.get("initContainers", []), *pod["containers"]]:
        res = c["resources"]
        for kind in ("cpu", "memory"):
            assert res["requests"][kind] == res["limits"][kind], (c["name"], kind)


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_jobs_end_on_a_deadline(rendering):
    spec = _job(_render(KUBE / rendering))["spec"]
    assert spec["activeDeadlineSeconds"] > 0
    # maxFailedIndexes holds only in an Indexed Job beside backoffLimitPerIndex
    assert spec["completionMode"] == "Indexed" and "backoffLimit" not in spec
    assert 0 <= spec["maxFailedIndexes"] < spec["completions"]
    if rendering == "merge":  # one index, never retried: the first failure fails the Job
        assert (spec["completions"], spec["backoffLimitPerIndex"],
                spec["maxFailedIndexes"]) == (1, 0, 0)
    else:
        assert spec["backoffLimitPerIndex"] >= 1


@pytest.mark.parametrize("rendering", RENDERINGS)
def test_the_hub_token_is_a_secret_mounted_at_hf_token_path(rendering):
    """Both Jobs: the shards' gated boots, the merge's features of a gated hub model."""
    pod = _job(_render(KUBE / rendering))["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    token_path = Path(env["HF_TOKEN_PATH"])
    mount = next(m for m in container["volumeMounts"]
                 if Path(m["mountPath"]) == token_path.parent)
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == "hf-token" and mount["readOnly"] is True
    assert volume["secret"]["defaultMode"] == 0o440  # the image user's group (fsGroup) reads
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]
    assert token_path.name == "hf-token"  # the key `--from-file=hf-token=...` creates
    # the GPU example's gated model reads its token from there
    matrix = yaml.safe_load((REPO / GPU_NODE).read_text())
    assert matrix["models"][0]["env"]["HF_TOKEN_PATH"] == str(token_path)
    for readme in (REPO / "docs" / "cluster.md", KUBE / "README.md"):
        assert SECRET_COMMAND in readme.read_text(), readme


def test_the_gpu_node_matrix_plans_its_node_deadline_and_storage(tmp_path):
    """deploy/plan.py's lines for the GPU example, rendered: its GPU product and taint,
    its deadline, storage from its model's bytes (the hub's size of Llama 3.1 8B given)."""
    params = _plan(GPU_NODE, "--splits", "3", "--rounds", "3", "--model-bytes", "16060522752")
    assert params == {"GPUS": "2", "DEADLINE_S": str(2 * 6 * 4 * 1800 + 900),
                      "GPU_PRODUCT": "NVIDIA-H100-80GB-HBM3", "TOLERATION": "nvidia.com/gpu",
                      "MODELS_STORAGE": "38Gi"}
    docs = _render(_copy(tmp_path, MATRIX=GPU_NODE, **params) / "base")
    for doc in docs:
        _validate(doc)
    job = _job(docs)
    pod = job["spec"]["template"]["spec"]
    (shard,) = pod["containers"]
    assert job["spec"]["activeDeadlineSeconds"] == 87300
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert [t["key"] for t in pod["tolerations"]] == ["nvidia.com/gpu"]
    assert shard["resources"]["requests"]["ephemeral-storage"] == "38Gi"
    assert shard["resources"]["limits"]["ephemeral-storage"] == "38Gi"
    assert str(shard["resources"]["limits"]["nvidia.com/gpu"]) == "2"
    models = next(v for v in pod["volumes"] if v["name"] == "models")
    assert models["emptyDir"]["sizeLimit"] == "38Gi"


def test_params_env_is_the_plan_of_its_matrix():
    data = _params(_render(KUBE / "base"))
    job = _job(_render(KUBE / "base"))
    splits = job["spec"]["completions"]
    planned = _plan(data["MATRIX"], "--splits", str(splits), "--rounds", data["ROUNDS"])
    for key in ("GPUS", "DEADLINE_S", "MODELS_STORAGE"):
        assert data[key] == planned[key], key
    assert re.fullmatch(r"\d+", data["DEADLINE_S"])


def test_kueue_is_one_component_away(tmp_path):
    copy_dir = _copy(tmp_path, KUEUE_QUEUE="team-a")
    kust = copy_dir / "base" / "kustomization.yaml"
    text = kust.read_text().replace("components:\n  - ../params\n",
                                    "components:\n  - ../params\n  - ../kueue\n")
    kust.write_text(text)
    docs = _render(copy_dir / "base")
    for doc in docs:
        _validate(doc)
    assert _job(docs)["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert "kueue.x-k8s.io/queue-name" not in str(_render(KUBE / "base"))  # optional


# ------------------------------------------------------------ the merge Job's command line
def _merge_job_run(tmp_path: Path, shards: dict[str, Path],
                   **environ: str) -> subprocess.CompletedProcess:
    """The merge Job's container command, as rendered, in a folder laid out as the shard
    Job leaves /results (RUN_ID/shard-I/POD/...), with the params ConfigMap's variables
    (and ``environ``)."""
    docs = _render(KUBE / "merge")
    (container,) = _job(docs)["spec"]["template"]["spec"]["containers"]
    env = _params(docs)
    results = tmp_path / "results"
    for rel, source in shards.items():
        target = results / env["RUN_ID"] / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    script = container["args"][0].replace("/results", str(results))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return subprocess.run([*container["command"], script], cwd=REPO, capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, **env, **environ, "PYTHONPATH": str(REPO),
                               "PATH": f"{bin_dir}:{os.environ['PATH']}"})


def _as_pods(names: list[str]) -> dict[str, Path]:
    out = {}
    for name in names:
        group = name.split(".")[0]
        out[f"{group}/vllm-coldstart-{group[-1]}-abcde/{name}"] = SHARDS / name
    return out


ALL_SHARDS = ["shard-1.json", "shard-1.json.cells.jsonl", "shard-2.json",
              "shard-2.json.cells.jsonl", "shard-3.json.cells.jsonl"]


def test_the_merge_job_command_line_runs_on_committed_shards(tmp_path):
    proc = _merge_job_run(tmp_path, _as_pods(ALL_SHARDS))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = tmp_path / "results" / "run-1"
    assert (run / "merged.json").is_file() and (run / "report.html").is_file()
    assert "6 cells expected, 0 problem(s)" in proc.stdout
    # the smoke matrix's fixtures are no hub models: each named, no features file, no fault
    assert "no measured boot of a hub model" in proc.stdout
    assert "not a hub model" in proc.stderr and not (run / "merged.features.json").exists()


def test_the_merge_job_goes_on_where_the_hub_refuses_a_hub_models_features(tmp_path):
    """The committed shards as a hub model's boots record it (model_path the hub id), the
    hub out of reach: the features step says why in one line, the merge, the report and the
    check's verdict are those of the run."""
    hub_shards = tmp_path / "hub-shards"
    hub_shards.mkdir()
    for name in ALL_SHARDS:
        text = (SHARDS / name).read_text()
        assert "/tmp/final/fixtures/models/smollm2-135m" in text
        (hub_shards / name).write_text(text.replace("/tmp/final/fixtures/models/smollm2-135m",
                                                    "HuggingFaceTB/SmolLM2-135M"))
    pods = {rel: hub_shards / path.name for rel, path in _as_pods(ALL_SHARDS).items()}
    proc = _merge_job_run(tmp_path, pods, HF_HUB_OFFLINE="1", HOME=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "coldstart features: error: HF_HUB_OFFLINE is set" in proc.stderr
    assert "merge job: merged.features.json not written" in proc.stdout
    assert "6 cells expected, 0 problem(s)" in proc.stdout
    assert (tmp_path / "results" / "run-1" / "report.html").is_file()


def test_the_merge_job_with_a_shard_missing_names_it_reports_and_fails(tmp_path):
    proc = _merge_job_run(tmp_path, _as_pods(ALL_SHARDS[:-1]))
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]  # check: no evidence
    assert "2 cell(s) of the matrix missing" in proc.stderr
    assert (tmp_path / "results" / "run-1" / "report.html").is_file()


# ------------------------------------------------------------------ durations, never raced
def test_no_shard_writes_the_durations_file(tmp_path):
    args = " ".join(_job(_render(KUBE / "base"))["spec"]["template"]["spec"]["containers"][0][
        "args"])
    assert "--store-durations" not in args and "--durations-path" in args
    proc = subprocess.run([sys.executable, str(REPO / "deploy" / "shard.py"), "--json",
                           str(tmp_path / "s.json"), "--", "pytest", "benchmarks/",
                           "--store-durations"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "--store-durations" in proc.stderr and not (tmp_path / "s.json").exists()
    for readme in (REPO / "docs" / "cluster.md", KUBE / "README.md"):
        text = readme.read_text()
        # NARROW is handed to analysis.merge and benchmarks.check: axis options only
        assert not re.search(r"NARROW[^\n]*--store-durations", text), readme


def _readme_commands(text: str, needle: str) -> list[str]:
    """The commands of the README's bash block that holds ``needle``, continuations joined
    and comments dropped."""
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        if needle in block:
            joined = re.sub(r"\\\n\s*", "", block)
            return [line.split("  #")[0].strip() for line in joined.splitlines()
                    if line.strip() and not line.startswith("#")]
    raise AssertionError(f"no bash block with {needle!r}")


def test_the_readme_durations_recipe_runs_as_written(tmp_path):
    """docs/cluster.md: the durations stored by one whole run, then read by a shard;
    run with the fake-boots plugin in place of vLLM, paths in a scratch folder."""
    store, shard = _readme_commands((REPO / "docs" / "cluster.md").read_text(), "--store-durations")
    durations = tmp_path / "smoke-durations.json"
    # the fake boots time no vLLM: another one running here (a busy machine) disturbs nothing
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "tests._fake_boots", "-p",
                  "no:cacheprovider", "-q", "--allow-busy-machine"]
    first = None
    for command in (store, shard.replace("--splits N --group I", "--splits 2 --group 1")):
        words = command.replace("benchmarks/durations/smoke.json", str(durations)).split()
        assert words[0] == "pytest"
        words = [str(tmp_path / w) if w.endswith(".json") and "/" not in w else w
                 for w in words[1:]]
        proc = subprocess.run([*pytest_cmd, *words], cwd=REPO, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(REPO),
                                                "FAKE_ROUNDS": "measured,measured,measured"})
        # 1: a cell failed its checks (the fake tensorizer boot is no real one), a result
        assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "error" not in proc.stdout.lower().split("short test summary")[-1]
        stored = json.loads(durations.read_text())
        assert len(stored) == 6  # every cell of the whole run, from the one run that stored it
        first = first if first is not None else stored
    shard_doc = json.loads((tmp_path / "shard-I.json").read_text())
    full_doc = json.loads((tmp_path / "full.json").read_text())
    assert 0 < len(shard_doc["benchmarks"]) < len(full_doc["benchmarks"])
    assert stored == first  # the shard read it, wrote nothing


def test_the_workflow_takes_a_matrix_file_python_and_the_token():
    text = (REPO / ".github" / "workflows" / "matrix.yml").read_text()
    doc = yaml.safe_load(text)
    on = doc.get("on", doc.get(True))
    assert on["workflow_dispatch"]["inputs"]["matrix"]["type"] == "string"  # a file's path too
    steps = doc["jobs"]["shard"]["steps"]
    names = [s.get("uses", s.get("name", "")) for s in steps]
    setup = next(i for i, n in enumerate(names) if n.startswith("actions/setup-python"))
    assert steps[setup]["with"]["python-version"] == "3.11"
    assert setup < names.index("install")  # bootstrap.sh needs 3.11+
    (shard,) = [s for s in steps if "deploy/shard.py" in s.get("run", "")]
    assert shard["env"]["HF_TOKEN"] == "${{ secrets.HF_TOKEN }}"
    # durations: a file of the repository, read by every shard, written by none
    assert on["workflow_dispatch"]["inputs"]["durations"]["type"] == "string"
    assert doc["jobs"]["shard"]["env"]["DURATIONS"] == "${{ inputs.durations }}"
    assert '${DURATIONS:+--durations-path "$DURATIONS"}' in shard["run"]
    assert "--store-durations" not in text
    assert "2.327.1" in text and "2.327.1" in (REPO / "docs" / "cluster.md").read_text()
