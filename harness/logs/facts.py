"""What a start-up log's facts say about the boot: typed fact values, the compile cache's
state, the engine configuration vLLM resolved, and whether CUDA-graph capture applies."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from harness.logs.normalise import gib
from harness.registry import PLATFORM_OF_LOCAL_VERSION, PLATFORM_OF_PLUGIN, VERSION_CLUES

__all__ = ["fact_value", "compile_disabled", "compile_cache_state", "engine_config",
           "capture_not_applicable", "resolve_platform", "version_range", "parallel_ranks",
           "assigned_ranks",
           "platform_of_version"]

# Process tags that name a rank: "(Worker_TP1_PP0 pid=..)" and "(VllmWorker TP3 pid=..)"
# (vLLM adds _TPn only where tensor parallelism is over 1, _PPn where pipeline parallelism
# is), "(VllmWorker rank=3 pid=..)" and a traceback's "[rank3]:" (the global rank).
# The number ends where the tag does or at the next part ("Worker_DP0_TP7_EP7").
_TP_TAG = re.compile(r"[_ ]TP(\d+)(?=_[A-Z]+\d|\W|$)")
_PP_TAG = re.compile(r"[_ ]PP(\d+)(?=_[A-Z]+\d|\W|$)")
_DP_TAG = re.compile(r"[_ ]DP(\d+)(?=_[A-Z]+\d|\W|$)")
_RANK_TAG = re.compile(r"\brank=(\d+)\s+pid=|\[rank(\d+)\]:")


def fact_value(key: str, found: re.Match[str]) -> Any:
    value = found.groupdict().get("value")
    if value is None:
        return True
    if key == "cuda_graph_sizes":
        return sorted(int(v) for v in re.findall(r"\d+", value))
    if key in ("weights_gib", "kv_cache_gib"):
        return gib(value, found.groupdict().get("unit"))
    if key in ("cfg_max_model_len", "cfg_tensor_parallel_size", "cfg_pipeline_parallel_size"):
        return int(value)
    if key == "cfg_enable_prefix_caching":
        return value == "True"
    if key == "cfg_quantization" and value == "None":
        return None
    if key == "kv_cache_tokens":
        return int(value.replace(",", ""))
    if key == "enforce_eager":
        return value == "True"
    return value.strip()


def compile_disabled(facts: dict[str, Any]) -> bool:
    return facts.get("compilation_level") == "0" or facts.get("compilation_mode") in ("NONE", "0")


def compile_cache_state(facts: dict[str, Any]) -> str:
    # The most specific observation wins: a disabled cache compiles (a miss) by design, and a
    # load failure is followed by a compile.
    if compile_disabled(facts):
        return "not_applicable"
    for observed in ("disabled", "load_failure", "miss", "hit"):
        if f"compile_cache_{observed}" in facts:
            return observed
    return "unknown"


def engine_config(facts: dict[str, Any]) -> dict[str, Any]:
    """The engine configuration vLLM resolved and reported in its log: max_model_len, dtype,
    quantization, TP / PP size, prefix caching, KV-cache dtype, capture sizes (their number
    is a feature of the study's graph-capture model), KV-cache tokens and GiB."""
    out = {k.removeprefix("cfg_"): v for k, v in facts.items() if k.startswith("cfg_")}
    for key in ("enforce_eager", "kv_cache_tokens", "kv_cache_gib"):
        if key in facts:
            out[key] = facts[key]
    if "cuda_graph_sizes" in facts:
        out["cudagraph_capture_sizes"] = facts["cuda_graph_sizes"]
        out["num_capture_sizes"] = len(facts["cuda_graph_sizes"])
    # A world with no more ranks than the data-parallel engines seen ("rank 0 in world size 2
    # is assigned as DP rank 0", V1 counting every engine's ranks; "(EngineCore_DP1 ...)") is
    # one TP and one PP rank each, whatever lines a paste left out.
    world = facts.get("world_size")
    data_parallel = (facts.get("dp_ranks_seen") or []) + (facts.get("dp_ranks_assigned") or [])
    if world is not None and int(world) <= max(data_parallel or [0]) + 1:
        out.setdefault("tensor_parallel_size", 1)
        out.setdefault("pipeline_parallel_size", 1)
    # Ranks give a floor, not the size: a paste may leave the highest ranks out. A tag says
    # more than its number (vLLM adds _TPn, _PPn only where the size is over 1); an
    # assignment line names its rank alone.
    for key, kind, tag_floor in (("tensor_parallel_size", "tp", 2),
                                 ("pipeline_parallel_size", "pp", 2), ("world_size", "", 1)):
        tagged = facts.get(f"{kind}_ranks_seen" if kind else "ranks_seen") or []
        assigned = (facts.get(f"{kind}_ranks_assigned") or []) if kind else []
        at_least = max(max(tagged) + 1, tag_floor) if tagged else 1
        if assigned:
            at_least = max(at_least, max(assigned) + 1)
        if key not in out and at_least > 1:
            out[f"{key}_at_least"] = at_least
    return out


def parallel_ranks(prefixes: Iterable[str]) -> dict[str, list[int]]:
    """The tensor-, pipeline- and data-parallel and global ranks the lines' process tags name
    (``tp_ranks_seen``, ``pp_ranks_seen``, ``dp_ranks_seen``, ``ranks_seen``), each where the
    log shows one."""
    seen: dict[str, set[int]] = {"tp_ranks_seen": set(), "pp_ranks_seen": set(),
                                 "dp_ranks_seen": set(), "ranks_seen": set()}
    for prefix in prefixes:
        seen["tp_ranks_seen"].update(int(n) for n in _TP_TAG.findall(prefix))
        seen["pp_ranks_seen"].update(int(n) for n in _PP_TAG.findall(prefix))
        seen["dp_ranks_seen"].update(int(n) for n in _DP_TAG.findall(prefix))
        seen["ranks_seen"].update(int(a or b) for a, b in _RANK_TAG.findall(prefix))
    return {key: sorted(ranks) for key, ranks in seen.items() if ranks}


# parallel_state's "rank 5 in world size 16 is assigned as DP rank 0, PP rank 0, TP rank 5"
# (PCP and EP ranks between or after, per release): the ranks the line names
_ASSIGNED = re.compile(r"\bis assigned as\b(?P<ranks>(?:,?\s*[A-Z]+ rank \d+)+)")
_ASSIGNED_RANK = re.compile(r"\b(?P<kind>DP|PP|TP) rank (?P<n>\d+)")


def assigned_ranks(messages: Iterable[str]) -> dict[str, list[int]]:
    """The data-, pipeline- and tensor-parallel ranks parallel_state's assignment lines name
    (``dp_ranks_assigned``, ``pp_ranks_assigned``, ``tp_ranks_assigned``)."""
    seen: dict[str, set[int]] = {}
    for message in messages:
        found = _ASSIGNED.search(message)
        if found is None:
            continue
        for rank in _ASSIGNED_RANK.finditer(found["ranks"]):
            seen.setdefault(f"{rank['kind'].lower()}_ranks_assigned", set()).add(int(rank["n"]))
    return {key: sorted(ranks) for key, ranks in seen.items()}


def resolve_platform(facts: dict[str, Any], clues: list[str], sources: list[str]) -> None:
    """Where no line states the platform ("Automatically detected platform", the config's
    device_config), the one an activated platform plugin runs on, else the one the lines
    name (``registry.PLATFORM_CLUES``; the first named where several are), else the one the
    lines' source files belong to. ``facts["platform_from"]`` says which."""
    if "platform" in facts:
        return
    plugin = PLATFORM_OF_PLUGIN.get(str(facts.get("platform_plugin", "")).lower())
    for value, why in ((plugin, "its platform plugin line ('Platform plugin X is activated')"),
                       (platform_of_version(facts.get("vllm_version")),
                        "the local label of the vLLM build's version ('+rocm7.15', '.xpu')"),
                       (clues[0] if clues else None, "the lines that name it "
                        "(vllm-ascend, habana, intel_extension_for_pytorch, aiter, torch_xla, ...)"),
                       (sources[0] if sources else None, "the source files of its lines")):
        if value is not None:
            facts["platform"], facts["platform_from"] = value, why
            return


def platform_of_version(version: Any) -> str | None:
    """The platform a vLLM build's version names in its local label (``0.23.1+rocm7.15``,
    ``0.9.2.dev270+g167aca45c.xpu``), or None."""
    local = str(version or "").partition("+")[2]
    for part in local.split("."):
        for platform, word in PLATFORM_OF_LOCAL_VERSION:
            if re.fullmatch(word, part.lower()):
                return platform
    return None


def version_range(clues: set[str]) -> tuple[str, list[str]] | None:
    """The releases a log's format and wording allow (``registry.VERSION_CLUES``): a PEP 440
    specifier set and the clues it rests on; None where no clue shows or they disagree."""
    shown = [(spec, why) for name, spec, why in VERSION_CLUES if name in clues]
    if not shown:
        return None
    lower: Version | None = None
    upper: Version | None = None
    for spec, _ in shown:
        for bound in SpecifierSet(spec):
            at = Version(bound.version)
            if bound.operator == ">=" and (lower is None or at > lower):
                lower = at
            elif bound.operator == "<" and (upper is None or at < upper):
                upper = at
    if lower is not None and upper is not None and lower >= upper:
        return None
    parts = [f">={lower}" if lower else "", f"<{upper}" if upper else ""]
    return ",".join(p for p in parts if p), [why for _, why in shown]


def capture_not_applicable(facts: dict[str, Any]) -> str | None:
    """Why CUDA-graph capture does not apply to this boot, or None where it does."""
    platform = str(facts.get("platform", "")).lower() or None
    # vllm-ascend captures ACL graphs through the same capture_model ("Graph capturing").
    if platform is not None and platform not in ("cuda", "rocm", "npu"):
        return f"no CUDA graphs on {platform}"
    if facts.get("enforce_eager") is True:
        return "enforce_eager"
    return None
