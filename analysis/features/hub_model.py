"""Features of a model on the Hugging Face hub, named by its id (``ORG/NAME``), without its
weights: its ``config.json`` (downloaded into huggingface_hub's cache), its safetensors headers
(fetched by range requests, as ``huggingface_hub.get_safetensors_metadata`` does) and the
sizes of its tokenizer and other weight files (the repository's listing). What the same files
in a local folder give (``analysis.features.model_folder.from_model_dir``), read remotely: a user
predicts a model before downloading gigabytes of it.

huggingface_hub is imported only here and only when a hub id is asked for: the analysis side
does not need it otherwise. A gated repository (Llama) needs ``HF_TOKEN`` as huggingface_hub
reads it.
"""

from __future__ import annotations

import fnmatch
import json
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import getproxies

from analysis.features.model_features import ModelFeatures
from analysis.features.model_files import tokenizer_bytes_of
from analysis.features.model_folder import (
    OTHER_WEIGHT_PATTERNS,
    features_of_parts,
)
from analysis.features.model_folder import (
    boot_features as folder_boot_features,
)
from document.boot_result import HUB_ID
from document.errors import FeatureError

__all__ = ["HubClient", "boot_features", "from_hub", "is_hub_id"]

# How long one request may take: an offline machine answers in seconds, not minutes.
HUB_TIMEOUT_S = 10.0


def is_hub_id(target: str | Path) -> bool:
    """``ORG/NAME`` that is no local path (a local folder of that name wins, as in vLLM)."""
    return bool(HUB_ID.match(str(target))) and not Path(target).exists()


class HubClient:
    """The three calls made to the hub; tests hand in one that serves a local folder."""

    def __init__(self) -> None:
        try:
            import huggingface_hub
        except ImportError as exc:
            raise FeatureError("a hub id needs huggingface_hub (pip install huggingface_hub), "
                               "or give the model's folder or config.json") from exc
        self.hub = huggingface_hub

    def check_reachable(self) -> None:
        """Fail at once where the hub cannot answer (offline mode, no name resolution),
        not after huggingface_hub's retries of a request that cannot succeed."""
        from huggingface_hub import constants

        if constants.HF_HUB_OFFLINE:
            raise FeatureError("HF_HUB_OFFLINE is set: a hub id cannot be read; give the "
                               "model's folder or config.json")
        host = urlparse(constants.ENDPOINT).hostname or ""
        if getproxies().get("https"):  # the proxy resolves the name, not this machine
            return
        try:
            socket.getaddrinfo(host, 443)
        except OSError as exc:
            raise FeatureError(f"the Hugging Face hub ({host}) cannot be reached from here "
                               f"({exc}); give the model's folder or config.json") from exc

    def config(self, repo: str, revision: str | None) -> Path:
        return Path(self.hub.hf_hub_download(repo, "config.json", revision=revision,
                                             etag_timeout=HUB_TIMEOUT_S))

    def check_access(self, repo: str, revision: str | None, token: str | None) -> None:
        """Fail in one line where ``repo``'s files cannot be read with ``token`` (a gated
        model without one, an unknown id), by fetching its config.json: what a boot's
        download would meet first, met here in seconds."""
        where = f"{repo}@{revision}" if revision else repo
        self.check_reachable()
        try:
            self.hub.hf_hub_download(repo, "config.json", revision=revision, token=token,
                                     etag_timeout=HUB_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - offline, gated, unknown: one line
            raise FeatureError(_why_not_fetched(where, exc)) from exc

    def file_sizes(self, repo: str, revision: str | None) -> dict[str, int]:
        entries = self.hub.HfApi().list_repo_tree(repo, revision=revision)
        return {e.path: e.size for e in entries if getattr(e, "size", None) is not None}

    def safetensors_headers(self, repo: str, revision: str | None) -> list[tuple[str, dict]]:
        """``(file, header)`` per safetensors file; none for a repository without them."""
        from huggingface_hub.errors import NotASafetensorsRepoError

        try:
            meta = self.hub.get_safetensors_metadata(repo, revision=revision,
                                                     timeout=HUB_TIMEOUT_S)
        except NotASafetensorsRepoError:
            return []
        return [(f"{repo}/{name}",
                 {tensor: {"dtype": t.dtype, "shape": list(t.shape),
                           "data_offsets": list(t.data_offsets)}
                  for tensor, t in fm.tensors.items()})
                for name, fm in sorted(meta.files_metadata.items())]


def from_hub(repo: str, *, revision: str | None = None, model: str | None = None,
             client: HubClient | None = None, **kwargs: Any) -> ModelFeatures:
    """Features of hub model ``repo`` at ``revision`` (default: main); ``kwargs`` are
    ``from_model_dir``'s (platform, vllm_version, capture_sizes, compile_cache_dir)."""
    if not HUB_ID.match(repo):
        raise FeatureError(f"{repo!r} is not a hub id (ORG/NAME)")
    client = client or HubClient()
    where = f"{repo}@{revision}" if revision else repo
    client.check_reachable()
    try:
        config_path = client.config(repo, revision)
        sizes = client.file_sizes(repo, revision)
        headers = client.safetensors_headers(repo, revision)
    except FeatureError:
        raise
    except Exception as exc:  # noqa: BLE001 - offline, gated, unknown: one line, what to do
        raise FeatureError(_why_not_fetched(where, exc)) from exc
    try:
        cfg = json.loads(Path(config_path).read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FeatureError(f"{where}: its config.json is not JSON ({exc})") from exc
    if not isinstance(cfg, dict):
        raise FeatureError(f"{where}: its config.json is not a JSON object")
    other = [size for name, size in sizes.items()
             if any(fnmatch.fnmatch(name, pat) for pat in OTHER_WEIGHT_PATTERNS)]
    return features_of_parts(cfg, headers, other, where=where, model=model or repo,
                             source="hub", tokenizer_bytes=tokenizer_bytes_of(sizes), **kwargs)


def boot_features(result: Any, revision: str | None = None) -> ModelFeatures:
    """The features of a hub model's boot (its ``model_path`` the hub id vLLM was given), as
    ``analysis.features.model_folder.boot_features`` reads a folder's, from the hub at ``revision``:
    where the boot's files are gone (a shard's pod, another runner), a gated model's with
    the token."""
    return folder_boot_features(result, read=lambda repo, **kwargs: from_hub(
        repo, revision=revision, **kwargs))


def _why_not_fetched(where: str, exc: Exception) -> str:
    kind = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if kind == "GatedRepoError" or status in (401, 403):
        hint = "a gated model: accept its licence on the hub and set HF_TOKEN"
    elif kind in ("RepositoryNotFoundError", "RevisionNotFoundError"):
        hint = "check the id and revision (a private repository needs HF_TOKEN)"
    else:
        hint = "no hub here? give the model's folder or its config.json instead"
    return f"{where}: could not read it from the Hugging Face hub ({kind}: {first}); {hint}"
