"""A model named by its hub id (analysis.features.hub_model): the features read remotely (config,
safetensors headers, file sizes) are those the same files give in a local folder, and a hub
that cannot answer is one line saying what to give instead.

No hub is reachable here: huggingface_hub's three calls are answered from a local folder with
huggingface_hub's own types (RepoFile, SafetensorsRepoMetadata), so the conversion from what
the hub returns is the code under test.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.features import hub_model
from analysis.features.model_files import read_safetensors_header
from analysis.features.model_folder import from_model_dir
from analysis.features.sources import load_features
from coldstart.__main__ import main as coldstart
from document.errors import FeatureError

hf = pytest.importorskip("huggingface_hub")
from huggingface_hub.hf_api import RepoFile, RepoFolder  # noqa: E402
from huggingface_hub.utils._safetensors import (  # noqa: E402
    SafetensorsFileMetadata,
    SafetensorsRepoMetadata,
    TensorInfo,
)

REPO = "example-org/tiny-llama"


class FolderHub:
    """huggingface_hub's calls, answered from ``folder`` as the hub answers for a repo."""

    def __init__(self, folder: Path, error: Exception | None = None) -> None:
        self.folder, self.error, self.calls = folder, error, []

    def hf_hub_download(self, repo, filename, *, revision=None, etag_timeout=None):
        self.calls.append(("download", repo, filename, revision))
        if self.error:
            raise self.error
        return str(self.folder / filename)

    def HfApi(self):  # noqa: N802 - huggingface_hub's name
        hub = self

        class Api:
            def list_repo_tree(self, repo, revision=None):
                hub.calls.append(("tree", repo, revision))
                return [RepoFolder(path=p.name, oid="0") if p.is_dir() else
                        RepoFile(path=p.name, size=p.stat().st_size, oid="0")
                        for p in sorted(hub.folder.iterdir())]
        return Api()

    def get_safetensors_metadata(self, repo, *, revision=None, timeout=None):
        files = sorted(self.folder.glob("*.safetensors"))
        if not files:
            raise hf.errors.NotASafetensorsRepoError("no safetensors")
        metas, weight_map = {}, {}
        for f in files:
            header = read_safetensors_header(f)
            tensors = {n: TensorInfo(dtype=t["dtype"], shape=t["shape"],
                                     data_offsets=tuple(t["data_offsets"]))
                       for n, t in header.items() if n != "__metadata__"}
            metas[f.name] = SafetensorsFileMetadata(metadata=header.get("__metadata__", {}),
                                                    tensors=tensors)
            weight_map |= {n: f.name for n in tensors}
        return SafetensorsRepoMetadata(metadata=None, sharded=len(files) > 1,
                                       weight_map=weight_map, files_metadata=metas)


def _client(hub: FolderHub) -> hub_model.HubClient:
    client = hub_model.HubClient()
    client.hub = hub
    client.check_reachable = lambda: None
    return client


def _same_features(remote, local) -> None:
    a = remote.model_dump(exclude={"model", "source"})
    b = local.model_dump(exclude={"model", "source"})
    assert a == b
    assert remote.model == REPO and remote.source == "hub"


def test_a_hub_model_has_the_features_of_the_same_files_in_a_folder(llama_dir: Path) -> None:
    hub = FolderHub(llama_dir)
    remote = hub_model.from_hub(REPO, revision="v1", client=_client(hub), platform="cuda",
                                vllm_version="0.10.1.1")
    _same_features(remote, from_model_dir(llama_dir, platform="cuda", vllm_version="0.10.1.1"))
    assert remote.estimated == ["compiled_graph_bytes"]  # counted from headers, not estimated
    assert remote.tokenizer_bytes == 1234  # tokenizer.json's size from the listing
    assert {c[0] for c in hub.calls} == {"download", "tree"}
    assert all(c[-1] == "v1" for c in hub.calls)  # the revision reaches every call


def test_a_hub_model_without_safetensors_counts_its_other_weight_files(
        llama_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bin-only"
    folder.mkdir()
    shutil.copy(llama_dir / "config.json", folder)
    (folder / "pytorch_model.bin").write_bytes(b"\0" * 5000)
    remote = hub_model.from_hub(REPO, client=_client(FolderHub(folder)), platform="cuda")
    _same_features(remote, from_model_dir(folder, platform="cuda"))
    assert remote.weight_bytes == 5000 and "params" in remote.estimated


def _http_error(kind: type, status: int, message: str) -> Exception:
    # the HTTP client huggingface_hub is built on: httpx (1.x), httpx2 (2.x)
    http = importlib.import_module(hf.errors.Response.__module__.split(".")[0])
    url = f"https://huggingface.co/{REPO}/resolve/main/config.json"
    return kind(message, response=http.Response(status, request=http.Request("GET", url)))


@pytest.mark.parametrize("make, says", [
    (lambda: _http_error(hf.errors.GatedRepoError, 401,
                         "401 Client Error. Access to model example-org/tiny-llama is "
                         "restricted."), "HF_TOKEN"),
    (lambda: _http_error(hf.errors.RepositoryNotFoundError, 404,
                         "404 Client Error. Repository Not Found"), "check the id and revision"),
    (lambda: ConnectionError("Name or service not known"),
     "give the model's folder or its config.json"),
])
def test_a_hub_that_refuses_is_one_line_saying_what_to_do(llama_dir: Path, make, says) -> None:
    error = make()
    with pytest.raises(FeatureError) as info:
        hub_model.from_hub(REPO, client=_client(FolderHub(llama_dir, error)))
    line = str(info.value)
    assert "\n" not in line and line.startswith(REPO) and says in line
    assert type(error).__name__ in line


def test_a_local_folder_named_like_a_hub_id_is_the_folder(llama_dir: Path, monkeypatch) -> None:
    monkeypatch.chdir(llama_dir.parent.parent)
    local = Path(llama_dir.parent.name) / llama_dir.name  # ORG/NAME-shaped, and a folder
    assert hub_model.HUB_ID.match(str(local)) and not hub_model.is_hub_id(local)
    assert load_features(local).source == "model_dir"


def test_predict_without_a_reachable_hub_answers_in_one_line_at_once(tmp_path: Path) -> None:
    """The real front door, offline: no traceback and no minute of retries."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "coldstart", "predict",
                           "meta-llama/Meta-Llama-3-8B", "--fit", "study"],
                          capture_output=True, text=True, env=env, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "HF_HUB_OFFLINE" in lines[0] and "config.json" in lines[0]


def test_a_name_that_is_neither_path_nor_hub_id_points_at_the_fixtures(tmp_path: Path) -> None:
    with pytest.raises(FeatureError, match="coldstart fixtures path NAME"):
        load_features(tmp_path / "smollm2-135m")


def test_a_run_of_a_hub_model_gets_its_features_from_the_hub(llama_dir: Path, tmp_path: Path,
                                                             monkeypatch, capsys) -> None:
    """`analysis.features --hub-only --matrix M` (the Kubernetes merge Job's step): a hub
    model's boot records the hub id as its model_path, and its features are read from the hub
    at the revision the matrix names, equal to the same files' in a folder; a folder model is
    named and left out; a run with no hub model writes nothing, and is no error."""
    from analysis.features.sources import read_features_json
    from document import benchmark_entry, new_document, write_run
    from document.boot_result import BootResult

    hub = FolderHub(llama_dir)
    client = _client(hub)
    monkeypatch.setattr(hub_model, "HubClient", lambda: client)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(f"version: 1\nmodels:\n  - hub: {REPO}\n    name: tiny\n"
                      "    revision: v1\naxes:\n  loader: [safetensors]\n")
    boots = [BootResult(state="measured", model="tiny", model_path=REPO, platform="cuda",
                        vllm_version="0.10.1.1", wall_s=1.0,
                        engine_config={"max_model_len": 8192}),
             BootResult(state="measured", model="own", model_path=str(llama_dir),
                        platform="cuda", vllm_version="0.10.1.1", wall_s=1.0)]
    doc = tmp_path / "merged.json"
    write_run(new_document([benchmark_entry(b, name=f"t[{b.model}]", params={})
                            for b in boots]), doc)
    out = tmp_path / "merged.features.json"
    assert coldstart(["features", str(doc), "-o", str(out), "--hub-only", "--matrix",
                      str(matrix)]) == 0
    written = read_features_json(out)
    assert set(written) == {"tiny"} and written["tiny"].source == "hub"
    local = from_model_dir(llama_dir, platform="cuda", vllm_version="0.10.1.1")
    assert written["tiny"].model_dump(exclude={"model", "source", "max_model_len"}) == \
        local.model_dump(exclude={"model", "source", "max_model_len"})
    assert written["tiny"].max_model_len == 8192  # the boot's engine config, as a fit's
    assert hub.calls and all(c[-1] == "v1" for c in hub.calls)  # the matrix's revision
    assert f"own: not a hub model (its folder {llama_dir})" in capsys.readouterr().err

    folders_only = tmp_path / "folders.json"
    write_run(new_document([benchmark_entry(boots[1], name="t[own]", params={})]),
              folders_only)
    out.unlink()
    assert coldstart(["features", str(folders_only), "-o", str(out), "--hub-only"]) == 0
    assert "no measured boot of a hub model" in capsys.readouterr().out and not out.exists()
