"""The reference study's data as records the fit accepts.

The study (Breaking the Ice, MLSys 2026; https://github.com/upb-cn/vllm-startup-profiler)
published, per figure, ``comparison_results.json`` files: ``{"labels": [log file names],
"data": {column: [seconds per label]}}``, one per iteration plus their average
(``avg_comparison_results.json``), and ``models_config.json`` with per-model features. This
module turns them into ``BootResult`` records and ``ModelFeatures``:

    coldstart study tests/data/study/figures/figure-rest \\
        -o study.json --features-out study_features.json

The study's columns map onto our six phases through the log reader's mapping
(``harness.study_columns.STUDY_PHASE_MAP``; ``STUDY_PHASE_COLUMNS`` here is derived from it):

- framework_bootstrap = detect_platform + llm_imports + get_model_info + worker_init
- tokenizer_init = tokenizer_init
- model_loading = model_loading (load_weights + model_init)
- torch_compile = dynamo_transform_time + graph_compile_general_shape + graph_compile_cached
  (the study's ``torch.compile`` column leaves a cache load out)
- kv_cache_profiling = kv_cache_profiling ("Memory profiling takes" minus compile)
- cuda_graph_capture = graph_capturing

``wall_s`` is ``actual_total_time`` (first to last log line); what the phases leave of it is
``residual_s`` (about 1 s: KV-cache allocation and process exit are in no column).

Features: the weight bytes of each model come from its boot log's "Model loading took X GiB"
line when the logs are beside the data (``iterations/1/output_model_*.txt``, read with
``harness.logs.read_log``); that is the sum of the tensor bytes, what
``features.from_model_dir`` reads from safetensors headers for a model never booted. The
parameter count is then weight bytes / 2 (16-bit checkpoints) rather than the study's nominal
size (see ``features.study_entry_features``). Only that line, the vLLM version and the
capture-size list are taken from a log; phase durations come from the JSON only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NamedTuple

from analysis.features.model_features import ModelFeatures
from analysis.features.study_models import study_entry_features
from document import benchmark_entry, new_document
from document.boot_result import PHASE_NAMES, SUBPHASE_NAMES, BootResult, SchemaError
from document.errors import FeatureError
from harness.logs.reader import read_log
from harness.study_columns import STUDY_PHASE_MAP, load_comparison

__all__ = ["STUDY_HOLDOUT", "STUDY_PHASE_COLUMNS", "STUDY_REPORTED", "STUDY_NODES", "StudyData",
           "read_study", "study_document", "study_model_name", "study_node"]

def _derive_phase_columns() -> dict[str, tuple[str, ...]]:
    """Our phase (or phase.subphase) -> the study's columns summed into it.

    Derived from ``harness.study_columns.STUDY_PHASE_MAP`` (the log reader's mapping, the one source):
    a column whose ``ours`` is exactly a phase or subphase name (optionally followed by a
    parenthesised explanation) is that phase; ``part of X (...)`` adds the column to phase X;
    a phase without a column of its own is the sum of its subphases' columns. Columns that are
    differences or sums of ours (``torch.compile``, ``init_engine``, ``total_time``) are not
    used.
    """
    exact: dict[str, list[str]] = {}
    parts: dict[str, list[str]] = {}
    for column in STUDY_PHASE_MAP:
        ours = column.ours.strip()
        words = ours.split()
        if words[:2] == ["part", "of"] and len(words) > 2 and words[2] in PHASE_NAMES:
            parts.setdefault(words[2], []).append(column.name)
            continue
        head = words[0]
        if (head in PHASE_NAMES or head in SUBPHASE_NAMES) and (
                len(words) == 1 or words[1].startswith("(")):
            exact.setdefault(head, []).append(column.name)
    out: dict[str, tuple[str, ...]] = {}
    for phase in PHASE_NAMES:
        if phase in exact:
            out[phase] = tuple(exact[phase])
        elif phase in parts:
            out[phase] = tuple(parts[phase])
        else:
            subs = [c for s in SUBPHASE_NAMES if s.startswith(phase + ".")
                    for c in exact.get(s, [])]
            if subs:
                out[phase] = tuple(subs)
    for sub in SUBPHASE_NAMES:
        if sub in exact:
            out[sub] = tuple(exact[sub])
    return out


STUDY_PHASE_COLUMNS: dict[str, tuple[str, ...]] = _derive_phase_columns()
# First to last log line: the boot's wall time as the study measured it.
STUDY_WALL_COLUMN = "actual_total_time"

# The five models the study held out of its predictor (predictor_info/test_data.json,
# "validation"), spelled as in its data.
STUDY_HOLDOUT: tuple[str, ...] = ("falcon-11b", "gemma-7b", "llama3-3b", "mistral-7b", "qwen-7b")


class StudyFigure(NamedTuple):
    phase: str  # a phase or phase.subphase of ours
    study_name: str
    pcc: float


# What the paper reports for its per-phase predictor (vLLM v0.10.1.1, H100): the Pearson
# correlation of each phase with its feature, and the error of the summed prediction on the
# five held-out models.
STUDY_REPORTED: dict[str, Any] = {
    "pcc": (
        StudyFigure("tokenizer_init", "tokenizer", 0.99),
        StudyFigure("model_loading", "weight loading", 1.00),
        StudyFigure("torch_compile.dynamo_transform", "Dynamo", 0.96),
        StudyFigure("torch_compile.compiled_graph_load", "graph loading", 0.95),
        StudyFigure("kv_cache_profiling", "KV profiling", 0.92),
        StudyFigure("cuda_graph_capture", "graph capture", 1.00),
    ),
    "holdout_mse_s2": 2.42,
    "holdout_max_error_s": 2.08,
}

_LABEL = re.compile(r"^output_model_(?P<name>[^_]+)(?:_.*)?\.txt$")


def study_model_name(label: str) -> str:
    """``output_model_gpt-oss-20b_cuda-graph-sizes_1_2.txt`` -> ``gpt-oss-20b``."""
    m = _LABEL.match(Path(label).name)
    return m.group("name") if m else Path(label).stem


class StudyData(NamedTuple):
    results: list[BootResult]
    rounds: dict[str, list[BootResult]]  # model -> one BootResult per iteration
    features: dict[str, ModelFeatures]
    source: Path
    machine: dict[str, Any]  # analysis.dataset.machine_identity of the node it ran on


# The study's nodes (its figures/README.md, "System Specifications"; cpu_count is its cores,
# pytest-benchmark's count is logical CPUs: compare study documents with each other, not
# with a suite run on a similar host). Every figure ran on n1
# except the second side of figure 10 (n2, an L40S: ``figure-10/gpu1``) and of figures 11
# and 12 (n3, an H100 with Intel CPUs: ``figure-11/cpu1``).
STUDY_NODES: dict[str, dict[str, Any]] = {
    "n1": {"cpu": "AMD EPYC 9354 32-Core Processor", "cpu_count": 32, "gpu": "H100 NVL"},
    "n2": {"cpu": "AMD EPYC 9354 32-Core Processor", "cpu_count": 32, "gpu": "L40S"},
    "n3": {"cpu": "2x Intel Xeon Platinum 8568Y+", "cpu_count": 96, "gpu": "H100"},
}
_SECOND_NODE = {("figure-10", "gpu1"): "n2", ("figure-11", "cpu1"): "n3",
                ("figure-12", "cpu1"): "n3"}


def study_node(folder: Path) -> str:
    """The node a figure folder's boots ran on (``STUDY_NODES``)."""
    return _SECOND_NODE.get((folder.parent.name, folder.name), "n1")


def _node_identity(node: str) -> dict[str, Any]:
    n = STUDY_NODES[node]
    return {"cpu": n["cpu"], "cpu_count": n["cpu_count"], "system": "Linux",
            "machine": "x86_64", "platform": "cuda", "gpu": n["gpu"], "node": node}


# --------------------------------------------------------------------------- log facts
class _LogFacts(NamedTuple):
    weight_bytes: int | None
    vllm_version: str | None
    capture_sizes: int | None
    architecture: str | None


_GIB = 2**30


def _log_facts(log: Path) -> _LogFacts:
    """What a boot log says about the model, read by ``harness.logs.read_log``."""
    facts = read_log(log).evidence.facts
    gib = facts.get("weights_gib")
    sizes = facts.get("cuda_graph_sizes")
    return _LogFacts(
        weight_bytes=int(round(float(gib) * _GIB)) if gib is not None else None,
        vllm_version=facts.get("vllm_version"),
        capture_sizes=len(sizes) if isinstance(sizes, list) else None,
        architecture=facts.get("architecture"),
    )


def _find_logs(folder: Path) -> dict[str, Path]:
    """Boot logs beside a comparison file: its own folder, else ``iterations/*/``."""
    logs: dict[str, Path] = {}
    candidates = sorted(folder.glob("output_model_*.txt"))
    if not candidates:
        candidates = sorted(folder.glob("iterations/*/output_model_*.txt"))
    for f in candidates:
        logs.setdefault(study_model_name(f.name), f)
    return logs


# ------------------------------------------------------------------------------ records
def _column(data: dict[str, list[Any]], key: str, i: int) -> float | None:
    values = data.get(key)
    if values is None or i >= len(values) or values[i] is None:
        return None
    return float(values[i])


def _sum_columns(data: dict[str, list[Any]], keys: tuple[str, ...], i: int) -> float | None:
    vals = [_column(data, k, i) for k in keys]
    present = [v for v in vals if v is not None]
    return sum(present) if present else None


def _records(path: Path, content: dict[str, Any], facts: dict[str, _LogFacts]) -> list[BootResult]:
    data = content["data"]
    out = []
    for i, label in enumerate(content["labels"]):
        name = study_model_name(label)
        phases: dict[str, float | None] = {}
        subphases: dict[str, float | None] = {}
        for target, keys in STUDY_PHASE_COLUMNS.items():
            value = _sum_columns(data, keys, i)
            if value is not None:
                value = max(value, 0.0)  # a rounding artefact must not fail validation
            if target in PHASE_NAMES:
                phases[target] = value
            elif target in SUBPHASE_NAMES and value is not None:
                subphases[target] = value
        wall = _column(data, STUDY_WALL_COLUMN, i)
        phase_sum = sum(v for v in phases.values() if v is not None)
        hit = _column(data, "graph_compile_cached", i) is not None
        miss = _column(data, "graph_compile_general_shape", i) is not None
        fact = facts.get(name)
        out.append(BootResult(
            state="measured", model=name, source="study", source_path=str(path),
            vllm_version=(fact.vllm_version if fact else None) or "0.10.1.1",
            platform="cuda", loader="safetensors",
            compile_cache="cold" if miss else ("warm" if hit else None),
            compile_cache_observed="miss" if miss else ("hit" if hit else "unknown"),
            entrypoint="offline", phases=phases, subphases=subphases, wall_s=wall,
            residual_s=None if wall is None else wall - phase_sum,
            log_durations={k: float(v[i]) for k, v in data.items()
                           if i < len(v) and v[i] is not None},
            evidence={"study_label": label},
        ))
    return out


def _find_models_config(start: Path) -> Path | None:
    for folder in [start, *start.parents]:
        candidate = folder / "models_config.json"
        if candidate.is_file():
            return candidate
    return None


def read_study(path: str | Path, *, models_config: str | Path | None = None,
               logs: str | Path | None = None) -> StudyData:
    """Read one of the study's figures.

    Parameters
    ----------
    path : a figure folder (holding ``avg_comparison_results.json``) or one
        ``comparison_results.json`` / ``avg_comparison_results.json`` file. Iterations found
        under ``iterations/*/comparison_results.json`` beside an average become its rounds.
    models_config : the study's ``models_config.json`` (default: the first one found in the
        file's folder or above it).
    logs : a folder of the study's boot logs (its own or under ``iterations/*/``) to read a
        model's facts from where the figure has no log of that model: figure-10 and
        figure-11 publish averages only, of the same model files figure-rest booted with logs.
        Without a log the weight bytes and parameters are the nominal size, marked estimated.

    Raises
    ------
    SchemaError
        The file is missing, not JSON, or not a study comparison file.
    FeatureError
        A model of the data has no entry in ``models_config.json``.
    """
    # Resolved: the node is told by the folder's name (figure-10/gpu1), also for "." or "../gpu1".
    p = Path(path).resolve()
    if p.is_dir():
        p = p / "avg_comparison_results.json"
    content = load_comparison(p)
    folder = p.parent
    own = {name: _log_facts(log) for name, log in _find_logs(folder).items()}
    facts = dict(own)
    if logs is not None:
        if not Path(logs).is_dir():
            raise SchemaError(f"{logs}: not a folder of study boot logs")
        extra = _find_logs(Path(logs))
        if not extra:
            raise SchemaError(f"{logs}: no study boot logs (output_model_*.txt) in it or "
                              "under iterations/*/")
        # Facts of the model files only; the boots' vLLM version stays this figure's own.
        facts = {**{name: _log_facts(log) for name, log in extra.items()}, **own}
    results = _records(p, content, own)

    rounds: dict[str, list[BootResult]] = {}
    for it in sorted(folder.glob("iterations/*/comparison_results.json")):
        for r in _records(it, load_comparison(it), own):
            rounds.setdefault(r.model, []).append(r)

    cfg_path = Path(models_config) if models_config else _find_models_config(folder)
    features: dict[str, ModelFeatures] = {}
    if cfg_path is not None:
        try:
            cfg = json.loads(cfg_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise FeatureError(f"{cfg_path}: cannot read models_config.json ({exc})") from exc
        for r in results:
            entry = cfg.get(r.model)
            if entry is None:
                raise FeatureError(f"{cfg_path}: no entry for study model {r.model!r}")
            fact = facts.get(r.model)
            features[r.model] = study_entry_features(
                r.model, entry,
                weight_bytes=fact.weight_bytes if fact else None,
                capture_sizes=fact.capture_sizes if fact else None,
                vllm_version=r.vllm_version,
                architecture=fact.architecture if fact else None)
    return StudyData(results=results, rounds=rounds, features=features, source=p,
                     machine=_node_identity(study_node(folder)))


def study_document(study: StudyData) -> dict[str, Any]:
    """A result document (pytest-benchmark shape) of the study's boots.

    ``extra_info`` holds the study's average over its iterations (not a median round: that is
    what it published); ``extra_info.rounds`` the iterations when they were found.
    """
    entries = []
    for r in study.results:
        params = {"model": r.model, "loader": r.loader, "compile_cache": r.compile_cache,
                  "entrypoint": r.entrypoint}
        entries.append(benchmark_entry(r, name=f"study[{r.model}]", params=params,
                                       rounds=study.rounds.get(r.model) or [r]))
    m = study.machine
    machine = {"node": f"study-{m['node']}",
               "cpu": {"brand_raw": m["cpu"], "count": m["cpu_count"]},
               "system": m["system"], "machine": m["machine"], "gpu": m["gpu"],
               "source": str(study.source)}
    return new_document(entries, machine_info=machine)


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("analysis.study"))
