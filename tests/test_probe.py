"""The probe, in real fresh interpreters (no vLLM needed): wraps, records, stays inert."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness.boot import PROBE_DIR
from harness.timeline import Timeline

TARGETS = [
    {"module": "textwrap", "attr": "TextWrapper.wrap", "event": "x.wrap", "kind": "call"},
    {"module": "textwrap", "attr": "dedent", "event": "x.dedent", "kind": "call"},
    {"module": "textwrap", "attr": "no_such_function", "event": "x.missing", "kind": "call"},
]
SCRIPT = """
import textwrap, multiprocessing as mp
def work():
    textwrap.dedent("  a")
if __name__ == "__main__":
    textwrap.TextWrapper(width=3).wrap("a b c")
    try:
        textwrap.dedent(None)
    except Exception:
        pass
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=work, name="SpawnedChild"); p.start(); p.join()
"""


def _run(tmp_path: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(PROBE_DIR), **env_extra}
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


def test_probe_records_calls_in_spawned_processes_too(tmp_path):
    events = tmp_path / "events.jsonl"
    proc = _run(tmp_path, {"COLDSTART_EVENTS": str(events),
                           "COLDSTART_PROBE_TARGETS": json.dumps(TARGETS)})
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in events.read_text().splitlines()]
    tl = Timeline.from_records(records, t0=min(r["t"] for r in records))
    # a method wrapped on its class
    assert len(tl.intervals["x.wrap"]) == 1
    # dedent: once failing in the parent, once in a spawned child (which re-runs the probe)
    dedent_ends = tl.ends["x.dedent"]
    assert sorted(r["ok"] for r in dedent_ends) == [False, True]
    failed = next(r for r in dedent_ends if not r["ok"])
    assert failed["error"].startswith(("TypeError", "AttributeError"))
    assert {r["proc"] for r in dedent_ends} == {"MainProcess", "SpawnedChild"}
    assert len({r["pid"] for r in dedent_ends}) == 2
    # a target that does not exist in this version is reported, not silently skipped
    assert any("no_such_function" in p for p in tl.probe_problems)
    for start, end in tl.intervals["x.dedent"]:
        assert 0 <= end - start < 5e9


def test_probe_is_inert_without_its_environment(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(PROBE_DIR),
           "COLDSTART_PROBE_TARGETS": json.dumps(TARGETS)}
    check = ("import sys, textwrap; print(sorted(type(f).__name__ for f in sys.meta_path)); "
             "print(hasattr(textwrap.dedent, '__wrapped__'))")
    proc = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    finders, wrapped = proc.stdout.splitlines()
    assert "_Finder" not in finders and wrapped == "False"
    # and with the environment, the same check sees the hook and the wrapper
    env["COLDSTART_EVENTS"] = str(tmp_path / "events.jsonl")
    proc = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True,
                          text=True, timeout=60)
    finders, wrapped = proc.stdout.splitlines()
    assert "_Finder" in finders and wrapped == "True"


def test_a_broken_probe_configuration_never_breaks_the_process(tmp_path):
    proc = _run(tmp_path, {"COLDSTART_EVENTS": str(tmp_path / "events.jsonl"),
                           "COLDSTART_PROBE_TARGETS": "{not json"})
    assert proc.returncode == 0
    assert "vllm-coldstart probe disabled" in proc.stderr
