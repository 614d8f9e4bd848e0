"""The one front door: ``coldstart VERB [ARGS]`` runs ``python -m MODULE [ARGS]``.

Each verb is the program its module already is (same options, same one-line errors and exit
codes); the ``python -m`` forms stay. Modules are imported only when their verb runs, so the
analysis verbs work where vLLM is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# verb -> (module run as __main__, what it does). New programs join here.
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
    "features": ("analysis.features", "a model folder's features (parameters, bytes, layers)"),
    "ingest": ("analysis.ingest", "read vLLM logs (production, the study's) into BootResults"),
    "report": ("analysis.report", "a run, or two runs compared, as one self-contained HTML page"),
    "trace": ("harness.trace", "a boot (or a run's cell) as Chrome trace-event JSON for Perfetto"),
    "merge": ("analysis.merge", "merge the shards of one matrix (many machines) into one run"),
    "gate": ("benchmarks.gate", "gate a new vLLM release: the same cells on both, interleaved"),
    "history": ("benchmarks.history", "start-up time per phase over several vLLM releases"),
    "study": ("analysis.study", "the study's published data as runs the analysis reads"),
    "calibrate": ("benchmarks.calibrate", "scale a predictor to this machine by one boot of a model it was fitted on"),
    "predictors": ("analysis.predictors", "re-make (or --check) the shipped predictor files"),
    "schema": ("coldstart.schema", "the JSON Schema of a document (boot result, matrix file, ...)"),
}


# (module, verb) of the program the front door is running now: its usage and errors name it.
_running: list[tuple[str, str]] = []


@contextmanager
def running(module: str, verb: str) -> Iterator[None]:
    """While the front door runs ``module`` as ``coldstart VERB``."""
    _running.append((module, verb))
    try:
        yield
    finally:
        _running.remove((module, verb))


def program_name(module: str, plain: str | None = None) -> str:
    """What the program of ``module`` calls itself in its usage and error lines:
    ``coldstart VERB`` when the front door runs it, else ``plain`` (default
    ``python -m MODULE``)."""
    for running_module, verb in reversed(_running):
        if running_module == module:
            return f"coldstart {verb}"
    return plain if plain is not None else f"python -m {module}"
