"""Result files -> one row per (configuration, model): the phases and the model's features.

Configuration grouping (documented choice): boots are fitted separately per configuration,
the tuple (platform, vLLM version, loader, compile_cache, page_cache, entrypoint, and any
engine-argument or variable axis of the run's matrix file: ``BootResult.axes``). A cold
compile cache, a streaming loader or an evicted page cache change what a phase does, not
only how long it takes, so one line per phase across them would mix physics; a predictor
file holds one set of phase models per configuration and ``predict`` picks one.

Within a configuration, several cells or rounds of the same model are reduced to their median
per phase (failed and skipped boots are counted, never fitted), and the model's features get
the boots' median load bandwidth (``analysis.storage``): the storage is a feature of the boot.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from analysis.features.model_features import ModelFeatures
from analysis.features.model_folder import boot_features
from analysis.storage import row_load_bandwidth
from document import MachineFacts, RunCell, RunDocument, boot_of, read_cells, recorded_facts
from document.boot_result import PHASE_NAMES, BootResult, gpu_models
from document.errors import FeatureError

__all__ = ["COMPARABLE_FACTS", "CONFIG_FIELDS", "MERGED_KEY", "Row", "Dataset", "build_dataset", "cell_identities",
           "config_label", "document_machines", "group_machines", "info_identity", "InputFile",
           "machine_differences", "machine_identity", "merged_machine", "one_machine"]

# coldstart.merged_from: the shards a merged document was made of (analysis.merge); its
# cells each carry their machine's machine_info.
MERGED_KEY = "merged_from"

CONFIG_FIELDS: tuple[str, ...] = ("platform", "vllm_version", "loader", "compile_cache",
                                  "page_cache", "entrypoint")


class Row(NamedTuple):
    model: str
    config: tuple[tuple[str, str | None], ...]
    phases: dict[str, float | None]
    subphases: dict[str, float]
    wall_s: float | None
    features: ModelFeatures
    boots: int


class Dataset(NamedTuple):
    rows: list[Row]
    not_measured: dict[str, int]  # state -> count of boots left out
    inputs: list[str]


# ---------------------------------------------------------------------------- machines
def _cpu(info: dict[str, Any]) -> tuple[Any, Any]:
    cpu = info.get("cpu")
    if isinstance(cpu, dict):
        return cpu.get("brand_raw") or cpu.get("brand"), cpu.get("count")
    return cpu, info.get("cpu_count")


def machine_identity(doc: RunDocument | None, boots: list[BootResult], *,
                     full: bool = False) -> dict[str, Any]:
    """What must agree between two runs for their seconds to be comparable or fitted together.

    Read from pytest-benchmark's ``machine_info`` (``cpu.brand_raw``, ``cpu.count``,
    ``system``, ``machine``) and, where those are absent, from the suite's own
    ``machine_info.coldstart`` facts (``benchmarks/provenance.py``); the platform from the
    boots themselves. A bare BootResult file (``coldstart boot --out``, no document) has
    no ``machine_info``: all but its platform is None, unknown. ``full``: also what a
    comparison of two runs must hold equal (``COMPARABLE_FACTS``).
    """
    return info_identity(doc.machine_info if doc is not None else {},
                         sorted({b.platform for b in boots if b.platform}), full=full)


# Beyond what a fit pools by: what two runs compared for a gate must share, or the change
# may be the machine's. Two VMs both named "Intel(R) Xeon(R) Processor" differed in AMX and
# booted 15-25 % apart; the storage under the model folder sets model_loading's seconds.
COMPARABLE_FACTS: dict[str, Callable[[MachineFacts], Any]] = {
    "cpu_isa": lambda ours: ours.isa,
    "cpu_affinity": lambda ours: ours.cpu_affinity,
    "memory_gib": lambda ours: ours.memory_gib,
    "kernel": lambda ours: ours.kernel,
    "gpu_driver": lambda ours: ours.cuda_driver or None,
    "storage": lambda ours: ours.fixture_storage.label() if ours.fixture_storage else None,
}


def info_identity(info: Any, platforms: list[str], *, full: bool = False) -> dict[str, Any]:
    """``machine_identity`` of one ``machine_info`` object and the platforms its boots ran."""
    info = info if isinstance(info, dict) else {}
    ours = recorded_facts(info)
    brand, count = _cpu(info)
    gpus = gpu_models(ours.gpus)
    out = {"cpu": brand or ours.cpu_model,
           "cpu_count": count if count is not None else ours.cpu_count,
           "system": info.get("system"), "machine": info.get("machine"),
           "platform": ",".join(platforms) if platforms else ours.platform,
           "gpu": ",".join(gpus) if gpus else info.get("gpu")}
    if full:
        out.update({key: read(ours) for key, read in COMPARABLE_FACTS.items()})
    return out


def cell_identities(doc: RunDocument | None, *, full: bool = False
                    ) -> list[tuple[BootResult, dict[str, Any]]]:
    """(headline round, ``machine_identity``) of every cell of a merge of shards
    (``analysis.merge``, ``coldstart.merged_from``), each cell from its own ``machine_info``;
    [] for a document of one run, whose cells share the document's machine."""
    if doc is None or doc.coldstart.merged_from is None:
        return []
    cells: list[tuple[BootResult, Any]] = [(e.extra_info, e.machine_info) for e in doc.benchmarks]
    cells += [(u, u.machine_info) for u in doc.coldstart.unrecorded]
    return [(boot_of(fields), info_identity(info, [fields.platform] if fields.platform else [],
                                            full=full))
            for fields, info in cells]


def document_machines(doc: RunDocument | None, boots: list[BootResult]) -> dict[str, dict[str, Any]]:
    """The ``machine_identity`` of each machine a document's cells ran on, by a label: one
    for a run (label ""), one per machine for a merge of shards (identical nodes are one)."""
    cells = cell_identities(doc)
    if not cells:
        return {"": machine_identity(doc, boots)}
    machines = group_machines([ident for _, ident in cells])
    if len(machines) == 1:
        return {"": machines[0][0]}
    return {f"machine {i}": ident for i, (ident, _) in enumerate(machines, 1)}


def group_machines(identities: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[int]]]:
    """Identities grouped into machines: one joins the first group it disagrees with on
    nothing (``machine_differences``; an unknown entry, as a cells log leaves pytest-benchmark's
    own, cannot disagree). Each group: what its members say together, and their indices."""
    groups: list[tuple[dict[str, Any], list[int]]] = []
    for i, ident in enumerate(identities):
        for known, members in groups:
            if not machine_differences({k: v for k, v in ident.items() if k != "platform"},
                                       known):
                known.update({k: v for k, v in ident.items()
                              if v is not None and k != "platform"})
                members.append(i)
                break
        else:
            groups.append((dict(ident), [i]))
    return groups


def machine_differences(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The identity entries both sides know and disagree on (an unknown one cannot)."""
    return {k: (a[k], b.get(k)) for k in a
            if a[k] is not None and b.get(k) is not None and a[k] != b[k]}


def one_machine(identities: dict[str, dict[str, Any]]) -> str | None:
    """None when every input may come from one machine; else one line naming two that cannot.

    One predictor describes one machine: the same boot takes 2 s/GiB to load on one node and
    0.2 on another, and pooling them would fit neither (and reduce one model's boots on both
    to one median).
    """
    seen: dict[str, Any] = {}
    first: dict[str, str] = {}
    for source, ident in identities.items():
        for k, v in ident.items():
            # CPU and GPU boots of one machine may be fitted in one go: the platform is part
            # of every group's configuration, so they never share a line.
            if v is None or k == "platform":
                continue
            if k not in seen:
                seen[k], first[k] = v, source
            elif seen[k] != v:
                return (f"{first[k]} and {source} come from different machines ({k}: "
                        f"{seen[k]!r} vs {v!r}); a predictor describes one machine: fit them "
                        "apart")
    return None


def merged_machine(identities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the inputs (of one machine, ``one_machine``) say of it together, platform aside."""
    return {k: v for ident in identities.values() for k, v in ident.items()
            if v is not None and k != "platform"}


def config_key(r: BootResult) -> tuple[tuple[str, str | None], ...]:
    """The configuration a boot is fitted in: CONFIG_FIELDS, then the matrix file's own axes
    (engine arguments, variables: ``max_model_len=2048`` is another configuration)."""
    return tuple((f, getattr(r, f)) for f in CONFIG_FIELDS) + tuple(
        (str(k), str(v)) for k, v in r.axes.items())


def config_label(key: tuple[tuple[str, str | None], ...] | dict[str, Any]) -> str:
    items = key.items() if isinstance(key, dict) else key
    return " ".join(f"{k}={v}" for k, v in items if v is not None) or "unspecified"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _features_for(r: BootResult, known: dict[str, ModelFeatures],
                  cache: dict[tuple[Any, ...], ModelFeatures],
                  inputs: list[str]) -> ModelFeatures:
    if r.model in known:
        return known[r.model]
    key = (r.model, r.model_path, r.platform, r.vllm_version,
           r.evidence.compile_cache_dir)
    if key not in cache:
        if r.model_path and not Path(r.model_path).exists():
            # A run made on another machine (a committed one, a merged shard): its folders
            # are not here, but a features file written where they were may be.
            beside = [str(f) for f in (Path(i).with_suffix(".features.json") for i in inputs)
                      if f.is_file()]
            raise FeatureError(
                f"model {r.model}: its folder {r.model_path} is not on this machine; give "
                + (f"--features {beside[0]} (written beside the run)" if beside else
                   "--features FILE, written by `coldstart features RUN -o FILE` where the "
                   "folders are"))
        cache[key] = boot_features(r)
    return cache[key]


def build_dataset(results: list[BootResult], features: dict[str, ModelFeatures],
                  inputs: list[str]) -> Dataset:
    """Group measured boots by configuration and model; attach each model's features."""
    groups: dict[tuple[Any, str], list[BootResult]] = {}
    not_measured: dict[str, int] = {}
    for r in results:
        if r.state != "measured":
            not_measured[r.state] = not_measured.get(r.state, 0) + 1
            continue
        groups.setdefault((config_key(r), r.model), []).append(r)
    cache: dict[tuple[Any, ...], ModelFeatures] = {}
    rows = []
    for (key, model), boots in groups.items():
        phases = {p: _median([b.phases[p] for b in boots if b.phases.get(p) is not None])
                  for p in PHASE_NAMES}
        subnames = sorted({s for b in boots for s, v in b.subphases.items() if v is not None})
        subphases = {s: _median([b.subphases[s] for b in boots if b.subphases.get(s) is not None])
                     for s in subnames}
        wall = _median([b.wall_s for b in boots if b.wall_s is not None])
        rows.append(Row(model, key, phases, {k: v for k, v in subphases.items() if v is not None},
                        wall, row_load_bandwidth(boots, _features_for(boots[0], features, cache, inputs)),
                        len(boots)))
    return Dataset(rows, not_measured, inputs)


class InputFile(NamedTuple):
    """A result file as the fit reads it: its document (None for bare BootResults), cells."""

    doc: RunDocument | None
    cells: list[RunCell]

    @property
    def boots(self) -> list[BootResult]:
        """Each cell's headline (median) round: what is fitted."""
        return [c.headline for c in self.cells]

    @property
    def rounds(self) -> list[BootResult]:
        """Every round of every cell: what the spread across rounds is taken from."""
        return [r for c in self.cells for r in c.rounds]


def read_inputs(paths: list[str]) -> dict[str, InputFile]:
    """Each result file, read once (a file named twice is read once)."""
    return {str(p): InputFile(*read_cells(p)) for p in paths}


def input_machines(files: dict[str, InputFile]) -> dict[str, dict[str, Any]]:
    """``machine_identity`` of each result file; a merge of shards from several machines
    gives one entry per machine (``document_machines``)."""
    out = {}
    for p, f in files.items():
        for label, ident in document_machines(f.doc, f.boots).items():
            out[f"{p} ({label})" if label else p] = ident
    return out
