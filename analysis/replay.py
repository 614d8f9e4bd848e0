"""The gate's error rates measured on real rounds: the sequential rule replayed on sides
resampled from the committed documents, with changes of known size added.

**The rounds.** Every cell of the committed real runs (``DEFAULT_DOCUMENTS``: the gates, fixed
and sequential, the history, the retained-state runs, the smoke run) gives a *center*: its
geometric mean per metric (each phase it measured in every round, and the total, launch to
ready). Every cell with two rounds or more gives its rounds' *deviations*: per round, the
vector of log seconds less the cell's mean, widened by ``sqrt(n / (n - 1))`` (a deviation
from the sample mean is narrower than one from the true mean). Cells that compile (a ``torch_compile``
phase) and cells that do not are two kinds, each with its centers and its deviations. A
simulated side of a cell is its center times ``exp`` of deviations drawn with replacement
from its kind's pool, whole vectors (the phases of one round move together, as the real
ones do): the skew, the outliers and the disturbed rounds of the real runs are in the
draws, not a normal model of them.

**The scenarios.** Both sides drawn alike (the false-alarm rate: a regression verdict when
nothing changed), and NEW slower by a known factor: every metric (the total +x %), or one
phase of about a second (``model_loading``; the total grows by the seconds it grew).

**The rule.** One cell gated as ``coldstart gate`` does by default: ``FIRST_ROUNDS`` a side,
a look, a pair more while undecided, up to ``MAX_ROUNDS``; at each look the intervals and
levels of ``analysis.bounds``, vectorised over the simulations (``look_verdicts``; a test
holds it to ``analysis.changes.compare_results`` and ``analysis.verdict.judge`` on the same
rounds). Every figure comes with its Monte-Carlo standard error, ``sqrt(p (1 - p) / N)``.

    coldstart replay [DOCS ...] [--sims N] [--seed S] [--json OUT] [--plot PNG]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from analysis.bounds import Look, regression_share

__all__ = ["DEFAULT_DOCUMENTS", "FIRST_ROUNDS", "MAX_ROUNDS", "Pool", "Rate", "Scenario",
           "look_verdicts", "pools", "replay", "scenarios"]

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DOCUMENTS = tuple(
    str(p.relative_to(ROOT)) for pattern in ("gate-vllm-*.json", "gate5-vllm-*.json",
                                             "gateseq-vllm-*.json", "gateself-*.json",
                                             "history-*.json",
                                             "retained-state-*.json", "smoke-*.json")
    for p in sorted((ROOT / "docs" / "data").glob(pattern)))
# benchmarks.gate's defaults, repeated here: analysis imports nothing of benchmarks.
FIRST_ROUNDS, MAX_ROUNDS = 3, 8
PHASE = "model_loading"
TOTAL = "total"


@dataclass
class Pool:
    """One kind of cell: its metrics (the total last), its cells' centers (seconds) and the
    deviations of every round of its multi-round cells (log seconds)."""

    kind: str
    metrics: list[str]
    centers: np.ndarray  # (cells, metrics)
    deviations: np.ndarray  # (rounds, metrics)
    sources: list[str] = field(default_factory=list)


def _rounds_of(path: str) -> list[tuple[str, list[dict[str, float]]]]:
    from document import read_cells

    _doc, cells = read_cells(path)
    out = []
    for c in cells:
        rounds = [r for r in c.rounds if r.state == "measured" and r.wall_s]
        if not rounds:
            continue
        names = [k for k in rounds[0].phases if all(r.phases.get(k) for r in rounds)]
        out.append((f"{Path(path).name}: {c.id}",
                    [{**{k: float(r.phases[k]) for k in names}, TOTAL: float(r.wall_s)}
                     for r in rounds]))
    return out


def pools(paths: Sequence[str] = DEFAULT_DOCUMENTS) -> dict[str, Pool]:
    """The two kinds' pools of the documents' real rounds."""
    kinds: dict[str, dict[str, list]] = {}
    for path in paths:
        for source, rounds in _rounds_of(path):
            kind = "compiled" if "torch_compile" in rounds[0] else "eager"
            acc = kinds.setdefault(kind, {"cells": [], "sources": []})
            acc["cells"].append(rounds)
            acc["sources"].append(source)
    out = {}
    for kind, acc in kinds.items():
        common = set.intersection(*(set(r[0]) for r in acc["cells"]))
        metrics = [m for m in acc["cells"][0][0] if m in common and m != TOTAL] + [TOTAL]
        centers, devs = [], []
        for rounds in acc["cells"]:
            logs = np.log([[r[m] for m in metrics] for r in rounds])
            centers.append(np.exp(logs.mean(axis=0)))
            if len(rounds) >= 2:
                devs.append((logs - logs.mean(axis=0)) * math.sqrt(len(rounds) /
                                                                   (len(rounds) - 1)))
        if devs:
            out[kind] = Pool(kind, metrics, np.array(centers), np.vstack(devs), acc["sources"])
    return out


def _t_ppf(q: float, df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(q, df))


def look_verdicts(base: np.ndarray, new: np.ndarray, look: Look, *, alpha: float,
                  threshold: float, floor_s: float) -> np.ndarray:
    """The verdict of one look at one cell for every simulation: ``base``, ``new`` of shape
    (sims, rounds, metrics) in seconds, the total last; 1 regression, 0 pass, -1
    inconclusive. ``analysis.changes.metric_change`` and ``analysis.verdict.judge``'s rule
    (the interval on log seconds, pooled variance; the total gates the pass, a phase's
    possible regression holds it, any lower end above its margin is a regression)."""
    n1, n2, m = base.shape[1], new.shape[1], base.shape[2]
    at = look.alpha(alpha)
    df = n1 + n2 - 2
    lb, ln = np.log(base), np.log(new)
    d = ln.mean(axis=1) - lb.mean(axis=1)  # (sims, metrics)
    pooled = ((n1 - 1) * lb.var(axis=1, ddof=1) + (n2 - 1) * ln.var(axis=1, ddof=1)) / df
    se = np.sqrt(pooled * (1 / n1 + 1 / n2))
    med = np.median(base, axis=1)
    margin = np.maximum(threshold * med, floor_s)
    phases = m - 1
    shares = np.array([regression_share(False, phases, look.cells or 1)] * phases
                      + [regression_share(True, phases, look.cells or 1)])
    t_lo = np.array([_t_ppf(1 - at * s, df) for s in shares])
    t_hi = _t_ppf(1 - at, df)
    lo = med * np.expm1(d - t_lo * se)
    hi = med * np.expm1(d + t_hi * se)
    est = med * np.expm1(d)
    regression = (lo > margin).any(axis=1)
    possible = (est > margin) & ~(lo > margin)
    total_bounded = hi[:, -1] <= margin[:, -1]
    passed = total_bounded & ~possible.any(axis=1) & ~regression
    return np.where(regression, 1, np.where(passed, 0, -1))


@dataclass(frozen=True)
class Scenario:
    """NEW against BASE: every metric times ``factor`` (``what`` total), or one phase."""

    name: str
    what: str  # "none", "total" or a phase
    factor: float


def scenarios() -> list[Scenario]:
    out = [Scenario("same", "none", 1.0)]
    for pct in (5, 10, 20, 25):
        out.append(Scenario(f"total +{pct} %", TOTAL, 1 + pct / 100))
    for pct in (5, 10, 20, 25):
        out.append(Scenario(f"{PHASE} +{pct} %", PHASE, 1 + pct / 100))
    return out


@dataclass(frozen=True)
class Rate:
    """A share of the simulations and its Monte-Carlo standard error."""

    p: float
    se: float

    @classmethod
    def of(cls, hits: np.ndarray) -> Rate:
        n = max(len(hits), 1)
        p = float(np.mean(hits)) if len(hits) else 0.0
        return cls(p, math.sqrt(max(p * (1 - p), 0.25 / n) / n))


def _slow(x: np.ndarray, metrics: list[str], s: Scenario) -> np.ndarray:
    if s.what == "none":
        return x
    if s.what == TOTAL:
        return x * s.factor
    y = x.copy()
    j = metrics.index(s.what)
    grown = y[..., j] * (s.factor - 1)
    y[..., j] += grown
    y[..., -1] += grown
    return y


def replay(pool: Pool, scenario: Scenario, *, sims: int, seed: int, alpha: float = 0.05,
           threshold: float = 0.10, floor_s: float = 0.05, first: int = FIRST_ROUNDS,
           max_rounds: int = MAX_ROUNDS) -> dict[str, Any]:
    """``sims`` sequential gates of one cell each, the cells cycled over the pool's centers:
    the share of each verdict and the boots each took (two a round, the warm-ups apart)."""
    if scenario.what not in ("none", TOTAL) and scenario.what not in pool.metrics:
        raise ValueError(f"{pool.kind}: no {scenario.what} in every cell")
    rng = np.random.default_rng(seed)
    centers = pool.centers[np.arange(sims) % len(pool.centers)]  # (sims, metrics)

    def draw() -> np.ndarray:
        idx = rng.integers(0, len(pool.deviations), size=(sims, max_rounds))
        return centers[:, None, :] * np.exp(pool.deviations[idx])

    base = draw()
    new = _slow(draw(), pool.metrics, scenario)
    verdict = np.full(sims, -1)
    rounds = np.full(sims, max_rounds)
    open_ = np.ones(sims, dtype=bool)
    prev = 0
    for n in range(first, max_rounds + 1):
        look = Look(n, prev, max_rounds, 1)
        v = look_verdicts(base[:, :n], new[:, :n], look, alpha=alpha, threshold=threshold,
                          floor_s=floor_s)
        decided = open_ & (v >= 0)
        verdict[decided], rounds[decided] = v[decided], n
        open_ &= ~decided
        prev = n
    boots = 2 * rounds
    return {"pool": pool.kind, "scenario": scenario.name, "sims": sims,
            "pass": Rate.of(verdict == 0).__dict__,
            "regression": Rate.of(verdict == 1).__dict__,
            "inconclusive": Rate.of(verdict == -1).__dict__,
            "boots_mean": float(boots.mean()),
            "boots_se": float(boots.std(ddof=1) / math.sqrt(sims)) if sims > 1 else 0.0}


def replay_all(paths: Sequence[str] = DEFAULT_DOCUMENTS, *, sims: int = 4000, seed: int = 1,
               alpha: float = 0.05, threshold: float = 0.10,
               floor_s: float = 0.05) -> dict[str, Any]:
    """Every scenario on every pool: what ``coldstart replay`` writes."""
    found = pools(paths)
    rows = []
    for k, (kind, pool) in enumerate(sorted(found.items())):
        for i, s in enumerate(scenarios()):
            if s.what not in ("none", TOTAL) and s.what not in pool.metrics:
                continue
            rows.append(replay(pool, s, sims=sims, seed=seed + 1000 * k + i, alpha=alpha,
                               threshold=threshold, floor_s=floor_s))
    return {"documents": list(paths), "alpha": alpha, "threshold": threshold,
            "noise_floor_s": floor_s, "first_rounds": FIRST_ROUNDS, "max_rounds": MAX_ROUNDS,
            "seed": seed, "pools": {k: {"metrics": p.metrics, "cells": len(p.centers),
                                        "deviation_rounds": len(p.deviations),
                                        "sources": p.sources} for k, p in found.items()},
            "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    """The replay's table, as docs/gate-error-rates.md quotes it."""
    lines = ["| cells | NEW vs BASE | pass | regression | inconclusive | boots to a verdict |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for r in result["rows"]:
        def pct(key: str) -> str:
            return f"{100 * r[key]['p']:.1f} ± {100 * r[key]['se']:.1f} %"
        lines.append(f"| {r['pool']} | {r['scenario']} | {pct('pass')} | {pct('regression')} | "
                     f"{pct('inconclusive')} | {r['boots_mean']:.1f} ± {r['boots_se']:.1f} |")
    return "\n".join(lines)


def plot(result: dict[str, Any], path: str | Path) -> None:
    """Pass and regression rates against the slowdown, per kind of cell, with 2 standard
    errors as bars: the figure of docs/gate-error-rates.md."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = sorted({r["pool"] for r in result["rows"]})
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        rows = [r for r in result["rows"] if r["pool"] == kind]
        for what, style in ((TOTAL, "-"), (PHASE, "--")):
            pts = [(0.0, r) for r in rows if r["scenario"] == "same"] + [
                (float(r["scenario"].split("+")[1].split()[0]), r) for r in rows
                if r["scenario"].startswith(what + " +")]
            if len(pts) < 2:
                continue
            xs = [x for x, _ in pts]
            for key, color in (("pass", "tab:green"), ("regression", "tab:red")):
                ax.errorbar(xs, [100 * r[key]["p"] for _, r in pts],
                            yerr=[200 * r[key]["se"] for _, r in pts], linestyle=style,
                            color=color, marker="o", capsize=3,
                            label=f"{key}, {'every metric' if what == TOTAL else what} slower")
        ax.axhline(100 * result["alpha"], color="grey", linewidth=0.8, linestyle=":")
        ax.axvline(100 * result["threshold"], color="grey", linewidth=0.8, linestyle=":")
        ax.set_title(f"{kind} cells ({result['pools'][kind]['cells']} centers, "
                     f"{result['pools'][kind]['deviation_rounds']} rounds' noise)")
        ax.set_xlabel("NEW slower by (%); dotted: the margin and alpha")
        ax.set_ylabel("share of simulated gates (%)")
        ax.set_ylim(-2, 102)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
