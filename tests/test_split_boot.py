"""A reduced real matrix run as 3 shards in sequence, merged, and read as one run.

Two eager cells of the real model (compile cache off: the cheapest boots; the Run:ai streamer,
page cache warm and evicted: the README's tier boots safetensors), split by pytest-split into
3 groups (the estimates give 1, 1 and 0 cells), each group a separate
``pytest benchmarks/`` as each machine of a fleet would run it; then ``analysis.merge`` of
the three JSON documents, and of the three cells logs alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from document import read_results
from document.boot_result import read_json

REPO = Path(__file__).resolve().parents[1]
SELECTION = ["--matrix", "full", "--models", "smollm2-135m", "--compile-caches", "off",
             "--entrypoints", "offline", "--loaders", "runai_streamer"]
SPLITS = 3


def _run(*args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def _cell_ids(path: Path) -> list[str]:
    doc = read_json(path)
    return [b["param"] for b in doc["benchmarks"]] + [
        "-".join(f"{a}={r[a]}" for a in ("model", "loader", "compile_cache", "page_cache",
                                         "entrypoint"))
        for r in doc["coldstart"]["unrecorded"]]


def _undecided(said: str) -> dict[str, str]:
    """Cell -> change of each total the verdict names as unbounded for having one round a side;
    an unbounded total with any other reason raises."""
    out = {}
    for line in said.splitlines():
        line = line.strip()
        if line.startswith("why: ") and ": total not bounded " in line:
            cell, rest = line.removeprefix("why: ").split(": total not bounded ", 1)
            assert rest.endswith("no interval with one round on a side, never a pass"), line
            out[cell] = rest.split(" (", 1)[0]
    return out


@pytest.mark.slow
@pytest.mark.boot
def test_three_shards_merge_into_one_run(tmp_path):
    pytest.importorskip("vllm")
    pytest.importorskip("pytest_split")
    collected = _run("-m", "pytest", "benchmarks/", "-p", "no:cacheprovider", "-q",
                     "--collect-only", "--allow-busy-machine", *SELECTION)
    assert collected.returncode == 0, collected.stdout[-2000:]
    unsplit = sorted(line.split("[", 1)[1].rstrip("]") for line in
                     collected.stdout.splitlines() if line.startswith("benchmarks/"))
    assert len(unsplit) == 2

    shards, logs = [], []
    for group in range(1, SPLITS + 1):
        out = tmp_path / f"shard{group}.json"
        proc = _run("-m", "pytest", "benchmarks/", "-p", "no:cacheprovider", "-q", *SELECTION,
                    "--splits", str(SPLITS), "--group", str(group),
                    "--durations-path", str(tmp_path / "no-durations"),
                    "--benchmark-json", str(out))
        assert proc.returncode == 0, proc.stdout[-3000:]
        shards.append(out)
        if Path(f"{out}.cells.jsonl").exists():
            logs.append(Path(f"{out}.cells.jsonl"))
    per_shard = [len(_cell_ids(s)) for s in shards]
    assert sum(per_shard) == 2 and 0 in per_shard  # one group held no cell, and passed

    merged = tmp_path / "merged.json"
    proc = _run("-m", "coldstart", "merge", *map(str, shards), "-o", str(merged), timeout=120)
    assert proc.returncode == 0, proc.stderr
    ids = _cell_ids(merged)
    assert len(ids) == len(set(ids)) == 2 and sorted(ids) == unsplit
    assert all(r.state == "measured" for r in read_results(merged))

    # The cells logs alone (no shard's JSON written) give the same cells and boots.
    from_logs = tmp_path / "from-logs.json"
    proc = _run("-m", "coldstart", "merge", *map(str, logs), "-o", str(from_logs), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert sorted(_cell_ids(from_logs)) == unsplit
    def boots(p): return sorted(r.model_dump_json() for r in read_results(p, all_rounds=True))
    assert boots(from_logs) == boots(merged)
    # ... on the machine the JSON names, as one machine
    assert read_json(from_logs)["coldstart"]["machines"] == 1
    shard_of = {b["param"]: read_json(s)["machine_info"] for s in shards
                for b in read_json(s)["benchmarks"]}
    assert all(b["machine_info"] == shard_of[b["param"]]
               for b in read_json(from_logs)["benchmarks"])

    # Read as one run is read.
    check = _run("-m", "coldstart", "check", str(merged), *SELECTION, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    for shard in shards:
        if not _cell_ids(shard):
            continue
        # A shard against the merge: the merge's other cell is one the shard never booted, so
        # the verdict cannot pass (inconclusive, naming it). Told to accept a missing cell, that
        # cell is accepted, and what is left undecided is only the shard's own cells, the same
        # boots on both sides: a change of zero, which one round a side cannot bound (a pass is
        # a bound on the slowdown, never the absence of a measured one).
        own, other = set(_cell_ids(shard)), set(unsplit) - set(_cell_ids(shard))
        compare = _run("-m", "coldstart", "compare", str(shard), str(merged), timeout=300)
        said = compare.stdout + compare.stderr
        assert compare.returncode == 3, said[-2000:]
        assert "verdict: INCONCLUSIVE" in said and "0 regressing" in said, said[-2000:]
        assert all(f"{cell}: total only in new" in said for cell in other), said[-2000:]
        compare = _run("-m", "coldstart", "compare", str(shard), str(merged), "--allow-missing",
                       timeout=300)
        said = compare.stdout + compare.stderr
        assert compare.returncode == 3 and "0 regressing" in said, said[-2000:]
        assert all(f"accepted: {cell}: total only in new" in said for cell in other), said[-2000:]
        assert _undecided(said) == {cell: "+0.00 s" for cell in own}, said[-2000:]
    # The merge against itself: nothing missing, every cell undecided on its one round, no other
    # reason given.
    compare = _run("-m", "coldstart", "compare", str(merged), str(merged), timeout=300)
    said = compare.stdout + compare.stderr
    assert compare.returncode == 3 and "0 regressing" in said, said[-2000:]
    assert "only in" not in said and _undecided(said) == {c: "+0.00 s" for c in unsplit}, said
    # One model: no configuration has the models a fit needs; the merge is answered as a
    # single run of these cells is (the first shard that has cells): summarized, exit 0.
    fits = [_run("-m", "analysis.fit", str(p), "--out-dir", str(tmp_path / f"fit-{p.stem}"),
                 "--no-plots", "--quiet", timeout=300)
            for p in (merged, next(s for s in shards if _cell_ids(s)))]
    for fit in fits:
        assert fit.returncode == 0, fit.stderr
        assert "--matrix scaling" in fit.stdout.splitlines()[-1], fit.stdout
    assert json.loads(merged.read_text())["coldstart"]["machines"] == 1
