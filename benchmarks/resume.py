"""``--resume out.json``: which cells of a saved run this run may carry over instead of
booting them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.matrix.cells import AXES, cell_from_params
from benchmarks.provenance import machine_facts
from document import read_run, recorded_facts
from document.boot_result import DOCUMENT_KEY, SchemaError, gpu_models

__all__ = ["RESUME_MUST_MATCH", "resume_facts", "resumable_entries"]

# machine_info.coldstart facts two runs must share for one's cells to stand in for the
# other's (gpu_models is read from its gpus by _resume_facts)
RESUME_MUST_MATCH = ("platform", "vllm_version", "torch", "cpu_model", "cpu_count",
                     "gpu_models")


def resume_facts(machine_info: Any) -> dict[str, Any]:
    """The RESUME_MUST_MATCH facts of a document's ``machine_info.coldstart``.

    The GPUs are compared by model (``document.boot_result.gpu_models``, as analysis.dataset does):
    how many were visible does not change how one boots, another model does.
    """
    facts = recorded_facts(machine_info)
    models = gpu_models(facts.gpus)
    return {k: models if k == "gpu_models" else getattr(facts, k) for k in RESUME_MUST_MATCH}


def resumable_entries(path: Path, *, rounds: int, any_machine: bool) -> dict[str, dict[str, Any]]:
    """The cells of the run at ``path`` that this run may carry over (``--resume``): measured,
    every check passed, by cell id; refused (one line) for another ``--rounds`` or, unless
    ``any_machine``, another machine or vLLM."""
    try:
        doc = read_run(path)
    except SchemaError as exc:
        raise pytest.UsageError(f"--resume {exc}") from None
    # A cell's rounds are part of its result: one boot does not stand in for a median of three.
    theirs_rounds = doc.coldstart.rounds
    if theirs_rounds is None:
        raise pytest.UsageError(f"--resume {path}: no {DOCUMENT_KEY}.rounds: not the JSON of "
                                "`pytest benchmarks/ --benchmark-json`")
    if theirs_rounds != rounds:
        raise pytest.UsageError(f"--resume {path}: measured with --rounds {theirs_rounds}, "
                                f"this run asks for --rounds {rounds}")
    if not any_machine:
        theirs = resume_facts(doc.machine_info)
        ours = resume_facts({DOCUMENT_KEY: machine_facts().as_json()})
        differ = {k: (theirs[k], ours[k]) for k in RESUME_MUST_MATCH if theirs[k] != ours[k]}
        if differ:
            raise pytest.UsageError(f"--resume {path}: measured elsewhere ({differ}); "
                                    "pass --resume-any-machine to reuse its cells anyway")
    out = {}
    for entry in doc.benchmarks:
        params, info = entry.params or {}, entry.extra_info
        # A cell whose checks were never recorded is not known to have passed them.
        checked = "checks_failed" in info.model_fields_set and not info.checks_failed
        if set(AXES) <= set(params) and info.state == "measured" and checked:
            out[cell_from_params(params).id] = entry.model_dump(mode="json", exclude_unset=True)
    return out
