"""The READMEs' cluster recipes run as written (issue 29), where this machine can run them:
the wait loop of deploy/kubernetes/README.md step 4 against a kubectl that answers the Job's
status as a cluster does (the real kubectl evaluates the loop's jsonpath on the Job
documents; only the API server is stood in for), the command that creates the token Secret,
and docs/cluster.md' merge and check on the committed shards. The merge Job's own
command line and the durations recipe are tests/test_cluster_pods.py's."""

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
SHARD_FILES = ["shard-1.json", "shard-1.json.cells.jsonl", "shard-2.json",
               "shard-2.json.cells.jsonl", "shard-3.json.cells.jsonl"]


def _bash_block(text: str, needle: str) -> str:
    """The README's bash block that holds ``needle``, as written."""
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        if needle in block:
            return block
    raise AssertionError(f"no bash block with {needle!r}")


def _kubectl() -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the recipe's jsonpath is not evaluated")
    return kubectl


# What `kubectl get job` returns for the shard Job on 1.31 and newer, where a Job that has
# failed or succeeded says so first (FailureTarget, SuccessCriteriaMet) while its pods end,
# and then Failed or Complete.
JOB = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "vllm-coldstart"},
       "spec": {"template": {"spec": {"restartPolicy": "Never",
                                      "containers": [{"name": "shard", "image": "x"}]}}}}


def _status(*conditions: tuple[str, str]) -> dict:
    return {**JOB, "status": {"active": 0 if conditions else 3, "conditions": [
        {"type": kind, "status": "True", "reason": reason} for kind, reason in conditions]}}


RUNNING = _status()
DEADLINE = [RUNNING, _status(("FailureTarget", "DeadlineExceeded")),
            _status(("FailureTarget", "DeadlineExceeded"), ("Failed", "DeadlineExceeded"))]
COMPLETE = [RUNNING, _status(("SuccessCriteriaMet", "CompletionsReached")),
            _status(("SuccessCriteriaMet", "CompletionsReached"),
                    ("Complete", "CompletionsReached"))]
UNSCHEDULABLE = [RUNNING, RUNNING, _status(("Failed", "DeadlineExceeded"))]  # before 1.31

FAKE_KUBECTL = '''#!{python}
"""kubectl with the API server stood in for: `get job` answers the next status document
(evaluated by the real kubectl, offline; the last one again once they are all asked),
`wait` says the merge Job failed, the rest is
recorded and succeeds."""
import os, subprocess, sys
from pathlib import Path

state = Path(os.environ["FAKE_KUBE_STATE"])
args = sys.argv[1:]
with open(state / "calls", "a") as calls:
    calls.write(" ".join(args) + "\\n")
if args[:3] == ["get", "job", "vllm-coldstart"]:
    docs = sorted(state.glob("status-*.json"))
    asked = len(list(state.glob("asked-*")))
    (state / f"asked-{{asked}}").touch()
    out = args[args.index("-o") + 1]
    doc = docs[min(asked, len(docs) - 1)]  # an ended Job stays ended
    sys.exit(subprocess.run(["{kubectl}", "annotate", "--local", "-f", str(doc),
                             "x=y", "-o", out]).returncode)
sys.exit(1 if args[0] == "wait" else 0)
'''


@pytest.mark.parametrize("statuses", [DEADLINE, COMPLETE, UNSCHEDULABLE],
                         ids=["deadline", "complete", "unschedulable-before-1.31"])
def test_the_readme_wait_loop_ends_when_the_job_does(tmp_path, statuses):
    """Step 4 as written: the loop polls until the Job is Failed (its deadline passed, pods
    never scheduled included) or Complete, not while it is only about to be (FailureTarget:
    its pods are still writing), then applies the merge Job and, that failing, prints its
    log."""
    block = _bash_block((KUBE / "README.md").read_text(), "until kubectl get job")
    kubectl = _kubectl()
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    for i, doc in enumerate(statuses):
        (state / f"status-{i}.json").write_text(json.dumps(doc))
    fake = bin_dir / "kubectl"
    fake.write_text(FAKE_KUBECTL.format(python=sys.executable, kubectl=kubectl))
    # the loop's minute, not waited; a loop that would wait for ever is stopped (bash -e)
    (bin_dir / "sleep").write_text('#!/bin/sh\nn=$(ls "$FAKE_KUBE_STATE" | grep -c ^slept-)\n'
                                   'touch "$FAKE_KUBE_STATE/slept-$n"\n[ "$n" -lt 10 ]\n')
    for script in (fake, bin_dir / "sleep"):
        script.chmod(0o755)
    proc = subprocess.run(["bash", "-e", "-c", block], cwd=REPO, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "FAKE_KUBE_STATE": str(state),
                               "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr
    calls = (state / "calls").read_text().splitlines()
    gets = [c for c in calls if c.startswith("get job vllm-coldstart")]
    assert len(gets) == len(statuses)  # every status asked for, the last one ending it
    assert calls[len(gets):] == ["apply -k deploy/kubernetes/merge",
                                 "wait --for=condition=complete --timeout=1h "
                                 "job/vllm-coldstart-merge",
                                 "logs job/vllm-coldstart-merge"]


def test_the_readmes_secret_command_makes_the_file_both_jobs_read(tmp_path):
    """`kubectl create secret generic hf-token --from-file=hf-token=...`, as both READMEs
    write it (client side), gives the Secret both Jobs mount: key hf-token, the file
    /secrets/hf-token that HF_TOKEN_PATH names."""
    kubectl = _kubectl()
    for readme in (REPO / "docs" / "cluster.md", KUBE / "README.md"):
        (command,) = [line for line in _bash_block(readme.read_text(),
                                                   "kubectl create secret").splitlines()
                      if line.startswith("kubectl create secret")]
        token = tmp_path / "token"
        token.write_text("hf_example\n")
        words = command.replace("$HOME/.cache/huggingface/token", str(token)).split()
        proc = subprocess.run([kubectl, *words[1:], "--dry-run=client", "-o", "yaml"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        secret = yaml.safe_load(proc.stdout)
        assert secret["metadata"]["name"] == "hf-token" and list(secret["data"]) == ["hf-token"]
    for job in ("base/job.yaml", "merge/job.yaml"):
        pod = yaml.safe_load((KUBE / job).read_text())["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        volume = next(v for v in pod["volumes"] if "secret" in v)
        mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
        assert volume["secret"]["secretName"] == "hf-token"
        assert env["HF_TOKEN_PATH"] == f"{mount['mountPath']}/hf-token", job


def test_the_readme_merge_and_check_run_as_written_on_committed_shards(tmp_path):
    """docs/cluster.md: the merge and check lines, run by bash (its globs) in a folder
    holding the committed smoke shards (shard 3 left only its cells log)."""
    block = _bash_block((REPO / "docs" / "cluster.md").read_text(), "coldstart merge")
    lines = [line for line in block.splitlines() if line.startswith("coldstart ")]
    assert [line.split()[1] for line in lines] == ["merge", "check"]
    for name in SHARD_FILES:
        shutil.copy(SHARDS / name, tmp_path / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    front = bin_dir / "coldstart"
    front.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m coldstart "$@"\n')
    front.chmod(0o755)
    proc = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO),
                               "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "6 cells expected, 0 problem(s)" in proc.stdout
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert len(merged["benchmarks"]) == 6
