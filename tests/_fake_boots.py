"""A pytest plugin that stands in for vLLM under ``pytest benchmarks/ -p tests._fake_boots``.

The cell's code, pytest-benchmark and the JSON hooks run for real; only what would boot
(or prime, or touch the page cache) is scripted, so how a cell is recorded can be tested in
seconds. Driven by the environment of the pytest run:

- ``FAKE_ROUNDS``: one outcome per round, comma-separated: ``measured``, ``failed`` (the boot
  fails), ``unreachable`` (its page-cache state cannot be reached), ``setup_error`` (preparing
  it raises OSError), ``interrupted`` (SIGTERM arrives during the boot: the harness raises
  BootInterrupted), ``ctrl_c`` (Ctrl-C while the round is prepared); cells separated by ``;``
  in the order they run, the last list for any cell after it;
- ``FAKE_FAULTS``: ``floor_unreachable`` (the storage floor's eviction is ignored),
  ``check_raises`` (the registry knows no compile-cache expectation), ``warm_copy_raises``
  (keeping the warm cache hits a full disk), ``warm_copy_sigterm`` (SIGTERM arrives while the
  warm cache is kept: after the boot, outside the harness's own handler).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from document.boot_result import BootResult
from harness import pagecache
from harness.launch import BootInterrupted
from harness.registry import LOADER_CLASSES, expected_compile_cache
from harness.spec import BootSpec

VLLM_VERSION = "0.32.0"
# Which cell of the session is running: FAKE_ROUNDS scripts each one in turn.
_cells_run = itertools.count()


def _measured(spec: BootSpec, work: Path, n: int) -> BootResult:
    phases = {"framework_bootstrap": 3.0, "tokenizer_init": 0.2, "model_loading": 1.0,
              "torch_compile": None if spec.compile_cache == "off" else 4.0,
              "kv_cache_profiling": 0.5, "cuda_graph_capture": None}
    residual = 0.05
    # Round n lasts 8.75 + n s: which round is the median is known.
    wall = sum(v for v in phases.values() if v) + residual + n
    phases["framework_bootstrap"] += n
    return BootResult(
        state="measured", model=spec.model, model_path=str(spec.model_path),
        vllm_version=VLLM_VERSION, platform="cpu", loader=spec.loader,
        compile_cache=spec.compile_cache, page_cache=spec.page_cache,
        entrypoint=spec.entrypoint, phases=phases,
        phase_notes={"cuda_graph_capture": "not applicable on cpu"},
        wall_s=wall, residual_s=residual, ready_s=wall if spec.entrypoint == "serve" else None,
        ttft_s=0.1 if spec.entrypoint == "serve" else None,
        compile_cache_observed=expected_compile_cache(VLLM_VERSION, "cpu",
                                                      spec.compile_cache).observed,
        evidence={"work_dir": str(work), "round": n,
                  "loader_targets": [f"vllm.{LOADER_CLASSES[spec.loader]}.load_weights"]})


@pytest.fixture(autouse=True)
def _fake_boots(request, monkeypatch, tmp_path_factory):
    module = request.module
    if not hasattr(module, "check_cell"):
        return
    per_cell = os.environ.get("FAKE_ROUNDS", "measured").split(";")
    outcomes = iter(per_cell[min(next(_cells_run), len(per_cell) - 1)].split(","))
    faults = set(filter(None, os.environ.get("FAKE_FAULTS", "").split(",")))
    model_dir = tmp_path_factory.mktemp("model")
    (model_dir / "config.json").write_text("{}")
    (model_dir / "model.safetensors").write_bytes(b"\0" * 4096)
    launched: list[Path] = []

    def spec(cell, coldstart):
        return BootSpec(model=cell.model, model_path=model_dir, loader=cell.loader,
                        compile_cache=cell.compile_cache, page_cache=cell.page_cache,
                        entrypoint=cell.entrypoint, timeout_s=coldstart.boot_timeout)

    def floor(paths, mode, repeats=3):
        if "floor_unreachable" in faults:
            raise pagecache.PageCacheError(
                "eviction left 100.0% of the files resident (need <= 1%): files mapped by "
                "another process, or a filesystem that ignores posix_fadvise")
        return {"bytes": 4096, "gbps": 2.0, "gbps_each": [2.0]}

    def prepare_boot(spec):
        outcome = next(outcomes)
        work = tmp_path_factory.mktemp("coldstart-boot-")
        if outcome == "ctrl_c":
            raise KeyboardInterrupt
        if outcome == "setup_error":
            raise OSError(28, "No space left on device", str(work / "priming"))
        if outcome == "unreachable":
            return BootResult(state="skipped", model=spec.model, loader=spec.loader,
                              compile_cache=spec.compile_cache, page_cache=spec.page_cache,
                              entrypoint=spec.entrypoint, evidence={"work_dir": str(work)},
                              skip_reason="eviction left 87.5% of the files resident")
        return SimpleNamespace(spec=spec, work=work, outcome=outcome)

    def launch_boot(prepared):
        launched.append(prepared.work)
        n = len(launched)
        if prepared.outcome == "interrupted":
            raise BootInterrupted("SIGTERM during a boot")
        if prepared.outcome == "failed":
            s = prepared.spec
            return BootResult(state="failed", model=s.model, loader=s.loader,
                              compile_cache=s.compile_cache, page_cache=s.page_cache,
                              entrypoint=s.entrypoint, error="RuntimeError: engine core died",
                              evidence={"work_dir": str(prepared.work)})
        return _measured(prepared.spec, prepared.work, n)

    def keep_as_warm_cache(spec, result):
        if "warm_copy_raises" in faults:
            raise OSError(28, "No space left on device")
        if "warm_copy_sigterm" in faults:
            import signal
            import time

            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here; Python's default would end the process
        return False

    def no_expectation(version, platform, mode):
        raise KeyError(f"no compile-cache expectation for mode {mode!r}")

    monkeypatch.setattr(module, "_spec", spec)
    monkeypatch.setattr(pagecache, "sequential_read_gbps", floor)
    monkeypatch.setattr(module, "prepare_boot", prepare_boot)
    monkeypatch.setattr(module, "launch_boot", launch_boot)
    monkeypatch.setattr(module, "keep_as_warm_cache", keep_as_warm_cache)
    if "check_raises" in faults:
        monkeypatch.setattr(module, "expected_compile_cache", no_expectation)
