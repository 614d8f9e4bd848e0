"""prepare_boot's own folder, without a boot (no vLLM needed)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from harness import boot
from harness.boot import BootSpec, prepare_boot


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
