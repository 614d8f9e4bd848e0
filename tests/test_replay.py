"""The gate's error rates on the committed real rounds (analysis.replay), seeded: the
false-alarm rate is at most alpha within Monte-Carlo error, a +25 % slowdown rarely passes,
and the vectorised rule the replay runs is the one compare and the verdict apply."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import replay
from analysis.bounds import Look
from analysis.changes import compare_results
from analysis.metrics import cell_of_boot
from analysis.verdict import judge
from document.boot_result import BootResult

SIMS = 600


@pytest.fixture(scope="module")
def pools() -> dict[str, replay.Pool]:
    found = replay.pools()
    assert set(found) == {"eager", "compiled"}
    return found


@pytest.mark.parametrize("kind", ["eager", "compiled"])
def test_the_false_alarm_rate_is_at_most_alpha(pools, kind) -> None:
    same = replay.Scenario("same", "none", 1.0)
    r = replay.replay(pools[kind], same, sims=SIMS, seed=11)
    assert r["regression"]["p"] <= 0.05 + 2 * r["regression"]["se"]


@pytest.mark.parametrize("kind", ["eager", "compiled"])
def test_a_quarter_slower_release_rarely_passes(pools, kind) -> None:
    slower = replay.Scenario("total +25 %", "total", 1.25)
    r = replay.replay(pools[kind], slower, sims=SIMS, seed=12)
    assert r["pass"]["p"] < 0.05
    # and a slowdown as large as the margin passes at most alpha of the time
    at_margin = replay.replay(pools[kind], replay.Scenario("total +10 %", "total", 1.10),
                              sims=SIMS, seed=13)
    assert at_margin["pass"]["p"] <= 0.05 + 2 * at_margin["pass"]["se"]


def _boots(values: np.ndarray, metrics: list[str], version: str) -> list[BootResult]:
    out = []
    for row in values:
        phases = {m: float(v) for m, v in zip(metrics[:-1], row[:-1])}
        out.append(BootResult(state="measured", model="m", loader="safetensors",
                              compile_cache="off", page_cache="warm", entrypoint="offline",
                              platform="cpu", vllm_version=version, phases=phases,
                              wall_s=float(row[-1])))
    return out


@pytest.mark.parametrize("n", [3, 5])
def test_the_replayed_rule_is_compares(pools, n) -> None:
    pool = pools["eager"]
    rng = np.random.default_rng(5)
    sims = 24
    centers = pool.centers[np.arange(sims) % len(pool.centers)]
    draw = lambda: centers[:, None, :] * np.exp(  # noqa: E731
        pool.deviations[rng.integers(0, len(pool.deviations), size=(sims, n))])
    base, new = draw(), draw()
    new[: sims // 2] *= 1.3  # half of them slower, so that every verdict occurs
    look = Look(n, n - 1 if n > 3 else 0, 8, 1)
    fast = replay.look_verdicts(base, new, look, alpha=0.05, threshold=0.10, floor_s=0.05)
    for i in range(sims):
        b = _boots(base[i], pool.metrics, "1")
        w = _boots(new[i], pool.metrics, "2")
        changes = compare_results(b, w, looks={cell_of_boot(b[0]): look}, cells=1)
        slow = {"regression": 1, "pass": 0, "inconclusive": -1}[judge(changes).verdict]
        assert slow == fast[i], (i, [(c.metric, c.status) for c in changes])
    assert set(fast) >= {0, 1}


def test_the_replay_gates_as_the_gate_does() -> None:
    # analysis imports nothing of benchmarks: the defaults are repeated there, held here
    from benchmarks import gate

    assert (replay.FIRST_ROUNDS, replay.MAX_ROUNDS) == (gate.FIRST_ROUNDS, gate.MAX_ROUNDS)
