"""The one front door: ``coldstart VERB [ARGS]``, one argparse command line with a
subcommand per verb (as pyperf's).

Each verb is the program its module already is: the module exposes ``add_arguments(parser)``
and ``run(args)``, which the front door calls on the verb's subparser, and its ``main`` is
``python -m MODULE`` with the same options, the same one-line errors and exit codes
(``coldstart.cli``). Only the chosen verb's module is imported, so ``coldstart --help`` reads
no other and the analysis verbs work where vLLM is not installed.
"""

from __future__ import annotations

# verb -> (module run as __main__, what it does). New programs join here: their module
# exposes add_arguments(parser) and run(args) (coldstart.cli), as every one below does.
VERBS: dict[str, tuple[str, str]] = {
    "bench": ("benchmarks", "run the benchmark matrix: pytest benchmarks/ [pytest options]"),
    "boot": ("harness", "one isolated boot of real vLLM, cut into phases -> BootResult JSON"),
    "fixtures": ("fixtures", "list or build the model folders the benchmarks boot"),
    "check": ("benchmarks.check", "check a benchmark JSON: every cell there, checks passed"),
    "compact": ("benchmarks.compact", "shrink a benchmark JSON for committing"),
    "overhead": ("benchmarks.overhead", "the probes' cost: probed vs unprobed boots"),
    "table": ("analysis.table", "a run's phases as a markdown table"),
    "fit": ("analysis.fit", "PCCs and one regressor per phase from runs -> predictor JSON"),
    "predict": ("analysis.predict", "predict a model's start-up time from a predictor"),
    "compare": ("analysis.compare", "compare two runs per cell and phase; gates CI"),
    "features": ("analysis.features", "the features (parameters, bytes, layers) of the models of result files"),
    "ingest": ("analysis.ingest", "read vLLM logs (production, the study's) into BootResults"),
    "report": ("analysis.report", "a run, or two runs compared, as one self-contained HTML page"),
    "trace": ("harness.trace", "a boot (or a run's cell) as Chrome trace-event JSON for Perfetto"),
    "merge": ("analysis.merge", "merge the shards of one matrix (many machines) into one run"),
    "release-pick": ("benchmarks.release_pick", "the releases a scheduled gate runs: PyPI's newest and the last gated"),
    "gate": ("benchmarks.gate", "gate a new vLLM release: the same cells on both, interleaved"),
    "gate-summary": ("benchmarks.gate_summary", "a gate's verdict as markdown for a CI job's summary; exits as the verdict"),
    "history": ("benchmarks.history", "start-up time per phase over several vLLM releases"),
    "study": ("analysis.study", "the study's published data as runs the analysis reads"),
    "calibrate": ("benchmarks.calibrate", "scale a predictor to this machine by boots of two models it was fitted on"),
    "predictors": ("analysis.predictors", "re-make (or --check) the shipped predictor files"),
    "schema": ("coldstart.schema", "the JSON Schema of a document (boot result, matrix file, ...)"),
}


# The verbs by task, in the order of a user's work: what ``coldstart --help`` lists and the
# README's table (``verbs_markdown``) shows. Every verb is in one group (a test checks it).
VERB_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("set up", ("fixtures", "schema")),
    ("measure", ("bench", "boot", "overhead", "check", "compact", "merge")),
    ("look", ("report", "table", "trace")),
    ("explain and predict", ("fit", "predict", "features", "calibrate", "predictors",
                             "ingest", "study")),
    ("compare and gate releases", ("compare", "gate", "gate-summary", "release-pick",
                                   "history")),
)


def same_as(verb: str) -> str:
    """The command a verb is the same as: ``pytest benchmarks/`` for bench, else
    ``python -m MODULE``."""
    return "pytest benchmarks/" if verb == "bench" else f"python -m {VERBS[verb][0]}"


def verbs_markdown() -> str:
    """The README's table of verbs, made from ``VERBS`` and ``VERB_GROUPS``: the README shows
    this text between its ``<!-- verbs -->`` markers (``python -m coldstart.readme`` writes
    it there; a test checks it is current)."""
    lines = ["| verb | what it does | the same as |", "| --- | --- | --- |"]
    for group, verbs in VERB_GROUPS:
        lines.append(f"| **{group}** | | |")
        lines += [f"| `{v}` | {VERBS[v][1]} | `{same_as(v)}` |" for v in verbs]
    return "\n".join(lines) + "\n"


def program_name(module: str) -> str:
    """What the program of ``module`` calls itself in its usage run as ``python -m MODULE``
    (the front door names its verb's parser ``coldstart VERB``)."""
    return f"python -m {module}"


def verb_module(verb: str) -> str:
    """The module holding ``verb``'s ``add_arguments`` and ``run``: the one ``python -m``
    runs (a package's ``__main__``)."""
    import importlib.util

    module = VERBS[verb][0]
    spec = importlib.util.find_spec(module)
    return f"{module}.__main__" if spec and spec.submodule_search_locations else module
