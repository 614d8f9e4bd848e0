"""What defines one boot (BootSpec) and the environment it is given.

A spec names the model, the matrix axes and the caller's engine arguments and variables; it
derives what the boot really gets (the harness's defaults, the exported environment, the
caller's settings, each recorded with where it came from) and the key under which boots can
share a warm compile cache. ``PreparedBoot`` is a spec whose untimed state is set.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from document.boot_result import COMPILE_CACHE_MODES, ENTRYPOINTS, HUB_ID, LOADERS, PAGE_CACHE_MODES
from document.evidence import Evidence
from document.secrets import REDACTED, is_secret_name
from harness import pagecache

DEFAULT_QUESTION = "What is the capital of France?"

# Defaults, each used only where neither the environment nor the caller (a matrix file) sets
# the value: the user's settings win. The fixture ones suit the 2-core, 24 GiB machine the
# fixtures are made for; a user's model boots with vLLM's own defaults.
DEFAULT_ENGINE_KWARGS: dict[str, Any] = {"seed": 0}
FIXTURE_ENGINE_KWARGS: dict[str, Any] = {"dtype": "bfloat16", "max_model_len": 512}
DEFAULT_ENV: dict[str, str] = {
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
FIXTURE_ENV: dict[str, str] = {
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; vLLM's default request exceeds small machines
}
# A model from a folder needs no hub; a hub id does (vLLM downloads it where it may).
LOCAL_MODEL_ENV: dict[str, str] = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# What the harness itself needs, over anything: log lines as they are written.
HARNESS_ENV: dict[str, str] = {"PYTHONUNBUFFERED": "1"}
# Environment variables recorded with each boot when set: what can change a start-up.
_RECORDED_ENV_PREFIXES = ("VLLM_", "HF_", "TRANSFORMERS_", "TORCH", "OMP_", "CUDA_VISIBLE")
# Where the caches live, which the harness sets per boot: not what they hold.
_CACHE_LOCATION_VARS = {"VLLM_CACHE_ROOT", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"}


@dataclass
class PreparedBoot:
    """A boot whose untimed state is set: what :func:`harness.launch.launch_boot` needs."""

    spec: "BootSpec"
    work: Path
    env: dict[str, str]
    evidence: Evidence  # filled in by prepare, then by interpret; the BootResult's
    version: str | None
    events_path: Path
    log_path: Path
    child_result_path: Path


class BootError(ValueError):
    """A boot that cannot even be attempted: bad spec, missing model folder, ..."""


def cache_home() -> Path:
    return Path(os.environ.get("COLDSTART_CACHE_DIR", Path.home() / ".cache" / "vllm-coldstart"))


def installed_version(*dists: str) -> str | None:
    """The version of the first of ``dists`` that is installed."""
    for dist in dists:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def installed_vllm_version() -> str | None:
    return installed_version("vllm", "vllm-cpu")


class BootSpec(BaseModel):
    """Everything that defines one boot. The matrix axes are named as in the test ids."""

    model_config = ConfigDict(extra="forbid")

    model: str
    # Exactly one: a local model folder, or a hub id that vLLM resolves (and downloads).
    model_path: Path | None = None
    hub_id: str | None = None
    revision: str | None = None
    # The fixture defaults (FIXTURE_ENGINE_KWARGS, FIXTURE_ENV): for the suite's own fixtures.
    fixture_defaults: bool = True
    # Where each engine_kwargs / env value came from ("matrix", "matrix model", "axis"), as
    # recorded with the result; unnamed ones are "caller".
    provenance: dict[str, str] = Field(default_factory=dict)
    # The cell's extra axes (engine arguments, variables), recorded with the result; their
    # values are already in engine_kwargs / env.
    axes: dict[str, Any] = Field(default_factory=dict)
    loader: str = "safetensors"
    compile_cache: str = "cold"
    page_cache: str = "warm"
    entrypoint: str = "offline"
    engine_kwargs: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = 600.0
    question: str = DEFAULT_QUESTION
    # Record the real model's answer (token ids and log-probs) for harness.correctness.
    check_answer: bool = False
    max_tokens: int = 16
    runai_concurrency: int = 4
    tensorizer_uri: Path | None = None
    work_dir: Path | None = None
    # False: no probe in the boot's processes (only readiness is marked): the bare boot that
    # the probe overhead is measured against (benchmarks/overhead.py).
    instrument: bool = True
    # vLLM's own OpenTelemetry spans as a third witness: the OTLP protocol the boot exports
    # them with ("http/protobuf" or "grpc") to a receiver in the parent (harness.launch);
    # None: tracing off.
    spans: str | None = None

    def check(self) -> None:
        """Reject what cannot boot, with one line that names the problem."""
        for axis, value, allowed in (("loader", self.loader, LOADERS),
                                     ("compile_cache", self.compile_cache, COMPILE_CACHE_MODES),
                                     ("page_cache", self.page_cache, PAGE_CACHE_MODES),
                                     ("entrypoint", self.entrypoint, ENTRYPOINTS)):
            if value not in allowed:
                raise BootError(f"unknown {axis} {value!r}; choose one of {', '.join(allowed)}")
        if not self.timeout_s > 0:  # also NaN
            raise BootError(f"timeout {self.timeout_s} s: must be more than 0")
        if self.spans is not None and self.spans not in ("http/protobuf", "grpc"):
            raise BootError(f"spans {self.spans!r}: the OTLP protocol is http/protobuf or grpc")
        if (self.model_path is None) == (self.hub_id is None):
            raise BootError("name exactly one model: a folder (model_path) or a hub id")
        if self.hub_id is not None and not HUB_ID.match(self.hub_id):
            raise BootError(f"{self.hub_id!r} is not a hub id (ORG/NAME)")
        if self.revision is not None and self.hub_id is None:
            raise BootError("revision is for a hub id; a folder is the revision it holds")
        if self.model_path is not None and not self.model_path.is_dir():
            raise BootError(f"model folder {self.model_path} does not exist")
        if self.model_path is not None and not (self.model_path / "config.json").is_file():
            raise BootError(f"model folder {self.model_path} has no config.json")
        if self.loader == "tensorizer" and (self.tensorizer_uri is None
                                            or not Path(self.tensorizer_uri).is_file()):
            raise BootError("loader tensorizer needs a serialized model file (tensorizer_uri); "
                            f"got {self.tensorizer_uri}")
        reserved = {"model", "load_format", "model_loader_extra_config", "enforce_eager"}
        clash = reserved & set(self.engine_kwargs)
        if clash:
            raise BootError(f"engine argument(s) {sorted(clash)} are set by the axes "
                            "(model, loader, compile_cache); use those instead")

    @property
    def model_ref(self) -> str:
        """What vLLM is given as ``model``: the folder, or the hub id."""
        return str(self.model_path) if self.model_path is not None else str(self.hub_id)

    def default_engine_kwargs(self) -> dict[str, Any]:
        return {**DEFAULT_ENGINE_KWARGS, **(FIXTURE_ENGINE_KWARGS if self.fixture_defaults
                                            else {})}

    def default_env(self) -> dict[str, str]:
        return {**DEFAULT_ENV, **(FIXTURE_ENV if self.fixture_defaults else {}),
                **(LOCAL_MODEL_ENV if self.model_path is not None else {})}

    def boot_env(self, environ: dict[str, str] | None = None) -> dict[str, str]:
        """The environment the boot gets (before the harness's per-boot cache folders and
        probe variables): defaults, then the exported environment, then the caller's."""
        environ = dict(os.environ if environ is None else environ)
        return {**self.default_env(), **environ, **self.env, **HARNESS_ENV}

    def settings_used(self, environ: dict[str, str] | None = None) -> dict[str, Any]:
        """Every engine argument and start-up variable the boot is given, with where it came
        from: ``default`` (the harness's), ``environment`` (exported), ``axis`` (the cell's
        loader / compile cache), or the caller's (``matrix``, ``matrix model``, ...). A
        secret-named one (``document.secrets.is_secret_name``: HF_TOKEN, VLLM_API_KEY,
        api_key, ...) is recorded as present and ``redacted``, never its value."""
        environ = dict(os.environ if environ is None else environ)
        defaults, given = self.default_engine_kwargs(), self.engine_kwargs
        args = {}
        for name, value in self.effective_engine_kwargs().items():
            source = (self.provenance.get(name, "caller") if name in given
                      else "default" if name in defaults and defaults[name] == value
                      else "axis")
            args[name] = {"value": value, "source": source}
        env = {}
        default_env = self.default_env()
        names = set(default_env) | set(self.env) | {
            k for k in environ if k.startswith(_RECORDED_ENV_PREFIXES)}
        for name in sorted(names - _CACHE_LOCATION_VARS):
            if name in self.env:
                env[name] = {"value": self.env[name],
                             "source": self.provenance.get(name, "caller")}
            elif name in environ:
                env[name] = {"value": environ[name], "source": "environment"}
            else:
                env[name] = {"value": default_env[name], "source": "default"}
        return {"engine_args": _redacted(args), "env": _redacted(env)}

    def effective_engine_kwargs(self) -> dict[str, Any]:
        kwargs = {**self.default_engine_kwargs(), **self.engine_kwargs}
        if self.revision is not None:
            kwargs["revision"] = self.revision
        if self.loader == "safetensors":
            kwargs["load_format"] = "safetensors"
        elif self.loader == "runai_streamer":
            kwargs["load_format"] = "runai_streamer"
            kwargs["model_loader_extra_config"] = {"concurrency": self.runai_concurrency}
        elif self.loader == "tensorizer":
            kwargs["load_format"] = "tensorizer"
            kwargs["model_loader_extra_config"] = {"tensorizer_uri": str(self.tensorizer_uri)}
        if self.compile_cache == "off":
            kwargs["enforce_eager"] = True
        if self.spans is not None:
            # With tracing on and log stats off (LLM's default) vLLM 0.32's first request dies
            # in output_processor.do_tracing (req_state.stats is None): stats on, said so.
            kwargs.setdefault("disable_log_stats", False)
        return kwargs

    def compile_cache_key(self) -> str:
        """Boots with equal keys can share a warm compile cache.

        vLLM keys its AOT cache on more than the version and the engine arguments (its
        VLLM_* variables, its config hash). Seen on 2026-12-01: CI's warm boot computed
        another AOT key than the cache a cold boot from another checkout had filled (same
        vllm-cpu 0.32.0, same arguments; what differed was not found) and compiled again. So
        a cache is shared only within one Python environment and one set of VLLM_* values,
        and a run's cold boot replaces it (``keep_as_warm_cache``).
        """
        env = self.boot_env()
        model = str(self.model_path.resolve()) if self.model_path is not None else self.hub_id
        ident = {"model_path": model, "loader": self.loader,
                 "engine_kwargs": self.effective_engine_kwargs(),
                 "vllm": installed_vllm_version(), "torch": installed_version("torch"),
                 "python_env": sys.prefix,
                 "vllm_env": {k: v for k, v in env.items()
                              if k.startswith("VLLM_") and k not in _CACHE_LOCATION_VARS},
                 "entrypoint": self.entrypoint}
        return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def weight_payload_files(self) -> list[Path]:
        """The files the loader reads the weights from (what bytes and GB/s are counted on)."""
        suffixes = (".tensors",) if self.loader == "tensorizer" else (".safetensors", ".bin",
                                                                      ".pt")
        return [f for f in self.weight_files() if f.suffix in suffixes]

    def weight_files(self) -> list[Path]:
        if self.model_path is None:
            # A hub model's files, where this machine has them already (vLLM's download
            # cache); none before its first download.
            files = pagecache.files_under([p for p in [_hub_snapshot(self)] if p])
        else:
            files = pagecache.files_under([self.model_path])
        if self.loader == "tensorizer" and self.tensorizer_uri:
            files.append(Path(self.tensorizer_uri))
        return files


def _redacted(settings: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: {**setting, "value": REDACTED, "redacted": True}
            if is_secret_name(name) and setting["value"] not in (None, "") else setting
            for name, setting in settings.items()}


def _hub_snapshot(spec: BootSpec) -> Path | None:
    """The local snapshot folder of a hub model, or None if it was never downloaded here."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(spec.hub_id, revision=spec.revision,
                                      local_files_only=True))
    except Exception:  # not downloaded, or huggingface_hub missing: nothing local to count
        return None


def resolve_model(name_or_path: str) -> tuple[str, Path]:
    """A fixture name (built on first use) or an existing model folder."""
    path = Path(name_or_path)
    if path.is_dir():
        return path.name, path
    try:
        from fixtures.build import ensure_model
        from fixtures.catalog import CATALOG
    except ImportError as exc:
        raise BootError(f"model {name_or_path!r} is not a folder and the fixture catalog "
                        f"cannot be imported ({exc})") from exc
    if name_or_path not in CATALOG:
        raise BootError(f"model {name_or_path!r} is neither a model folder nor a fixture "
                        f"name; fixtures: {', '.join(sorted(CATALOG))}")
    return name_or_path, ensure_model(name_or_path)
