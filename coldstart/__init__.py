"""The one front door: ``coldstart VERB [ARGS]``, one argparse command line with a
subcommand per verb (as pyperf's and asv's).

Each verb is a module of ``coldstart.commands`` (``coldstart.commands.gate_summary`` for
``gate-summary``): a thin layer over the library that exposes ``add_arguments(parser)`` (its
options) and ``run(args)`` (its body: parse, call the library, print, exit code). The library
(harness, analysis, benchmarks, ...) holds no argparse and never imports this package but
``document.errors`` and ``analysis.console``, the bottom layer. Only the chosen verb's
module is imported, so ``coldstart --help`` reads no other and the analysis verbs work where
vLLM is not installed.

Other forms are kept because the README and the paper's users run them: ``pytest
benchmarks/`` (``coldstart bench``) and ``python -m analysis.fit`` (``coldstart fit``); and
the two scripts the Kubernetes manifests run by path, ``python deploy/plan.py`` and ``python
deploy/shard.py`` (``coldstart cluster-plan``, ``cluster-shard``): ``KEPT_FORMS``.
"""

from __future__ import annotations

# verb -> (its command module, what it does). New programs join here with a module of
# coldstart.commands exposing add_arguments(parser) and run(args) (coldstart.cli).
VERBS: dict[str, tuple[str, str]] = {
    "bench": ("benchmarks", "run the benchmark matrix: pytest benchmarks/ [pytest options]"),
    "boot": ("coldstart.commands.boot", "one isolated boot of real vLLM, cut into phases -> BootResult JSON"),
    "fixtures": ("coldstart.commands.fixtures", "list or build the model folders the benchmarks boot"),
    "check": ("coldstart.commands.check", "check a benchmark JSON: every cell there, checks passed"),
    "compact": ("coldstart.commands.compact", "shrink a benchmark JSON for committing"),
    "overhead": ("coldstart.commands.overhead", "the probes' cost: probed vs unprobed boots"),
    "table": ("coldstart.commands.table", "a run's phases as a markdown table"),
    "fit": ("coldstart.commands.fit", "PCCs and one regressor per phase from runs -> predictor JSON"),
    "predict": ("coldstart.commands.predict", "predict a model's start-up time from a predictor"),
    "compare": ("coldstart.commands.compare", "compare two runs per cell and phase; gates CI"),
    "features": ("coldstart.commands.features", "the features (parameters, bytes, layers) of the models of result files"),
    "ingest": ("coldstart.commands.ingest", "read vLLM logs (production, the study's) into BootResults"),
    "report": ("coldstart.commands.report", "a run, or two runs compared, as one self-contained HTML page"),
    "trace": ("coldstart.commands.trace", "a boot (or a run's cell) as Chrome trace-event JSON for Perfetto"),
    "merge": ("coldstart.commands.merge", "merge the shards of one matrix (many machines) into one run"),
    "release-pick": ("coldstart.commands.release_pick", "the releases a scheduled gate runs: PyPI's newest and the last gated"),
    "gate": ("coldstart.commands.gate", "gate a new vLLM release: the same cells on both, interleaved"),
    "gate-summary": ("coldstart.commands.gate_summary", "a gate's verdict as markdown for a CI job's summary; exits as the verdict"),
    "cluster-plan": ("coldstart.commands.cluster_plan", "the Kubernetes Job's values a matrix decides (GPUs, deadline, storage)"),
    "cluster-shard": ("coldstart.commands.cluster_shard", "one shard of a matrix as a pod runs it; a failed cell is a result"),
    "envs": ("coldstart.commands.envs", "make (or reuse) one environment per vLLM release, ahead of a gate"),
    "history": ("coldstart.commands.history", "start-up time per phase over several vLLM releases"),
    "replay": ("coldstart.commands.replay", "the gate's error rates, its rule replayed on resampled real rounds"),
    "study": ("coldstart.commands.study", "the study's published data as runs the analysis reads"),
    "calibrate": ("coldstart.commands.calibrate", "scale a predictor to this machine by boots of two models it was fitted on"),
    "predictors": ("coldstart.commands.predictors", "re-make (or --check) the shipped predictor files"),
    "schema": ("coldstart.commands.schema", "the JSON Schema of a document (boot result, matrix file, ...)"),
}


# The verbs by task, in the order of a user's work: what ``coldstart --help`` lists and the
# README's table (``verbs_markdown``) shows. Every verb is in one group (a test checks it).
VERB_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("set up", ("fixtures", "schema")),
    ("measure", ("bench", "boot", "overhead", "check", "compact", "merge", "cluster-plan",
                 "cluster-shard")),
    ("look", ("report", "table", "trace")),
    ("explain and predict", ("fit", "predict", "features", "calibrate", "predictors",
                             "ingest", "study")),
    ("compare and gate releases", ("compare", "gate", "gate-summary", "release-pick",
                                   "envs", "history", "replay")),
)


# The forms besides ``coldstart VERB`` that stay (the README's and the paper's): each runs
# the verb's own add_arguments and run.
KEPT_FORMS: dict[str, str] = {"bench": "pytest benchmarks/", "fit": "python -m analysis.fit",
                              # what the Kubernetes manifests and the matrix workflow run
                              "cluster-plan": "python deploy/plan.py",
                              "cluster-shard": "python deploy/shard.py"}


def verbs_markdown() -> str:
    """The README's table of verbs, made from ``VERBS``, ``VERB_GROUPS`` and ``KEPT_FORMS``:
    the README shows this text between its ``<!-- verbs -->`` markers (``python -m
    coldstart.readme`` writes it there; a test checks it is current)."""
    lines = ["| verb | what it does | also runs as |", "| --- | --- | --- |"]
    for group, verbs in VERB_GROUPS:
        lines.append(f"| **{group}** | | |")
        lines += [f"| `{v}` | {VERBS[v][1]} | "
                  f"{f'`{KEPT_FORMS[v]}`' if v in KEPT_FORMS else ''} |" for v in verbs]
    return "\n".join(lines) + "\n"


def verb_module(verb: str) -> str:
    """The module holding ``verb``'s ``add_arguments`` and ``run``."""
    return VERBS[verb][0]
