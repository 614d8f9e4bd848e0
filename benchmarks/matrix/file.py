"""Matrix files: the cells a team wants booted, written in YAML, validated before any boot.

    version: 1
    models:
      - smollm2-135m                          # a fixture name
      - path: /models/Llama-3.1-8B-Instruct   # a local model folder
        name: llama8b                         # the model's name in cell ids (default: folder name)
        engine_args: {enforce_eager: true}    # this model only
        env: {VLLM_CPU_KVCACHE_SPACE: "8"}
        budgets: {ready_s: 300}
      - hub: Qwen/Qwen2.5-0.5B-Instruct       # vLLM downloads it (machines that may download)
        revision: main
    axes:                                     # the cells are the product of these lists
      loader: [safetensors, runai_streamer]
      compile_cache: [cold, warm]
      page_cache: [warm]
      entrypoint: [offline]
      max_model_len: [2048, 8192]             # any other lower-case key: an engine argument
      VLLM_USE_AOT_COMPILE: ["0", "1"]        # an UPPER_CASE key: an environment variable
    engine_args: {gpu_memory_utilization: 0.85}   # every cell
    env: {}
    rounds: 3
    boot_timeout: 900
    budgets: {ready_s: 120, torch_compile: 60}    # seconds; ready_s is the wall time to ready
    serve_params: serve_params.json           # vLLM's `bench sweep startup --serve-params` sets

Instead of ``axes``, ``configurations`` lists chosen points (each a mapping of axis values):
the built-in smoke matrix covers every state of every axis without the product's boots.

Every problem is a :class:`MatrixFileError` whose one line names the file, the line and the
key; engine-argument names are checked against the installed vLLM's ``EngineArgs``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import product
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from benchmarks.matrix.file_schema import (
    ARG_NAME,
    AXIS_DEFAULTS,
    BASE_AXES,
    ENV_NAME,
    RESERVED_ENGINE_ARGS,
    MatrixFile,
    MatrixFileError,
    MatrixSettings,
    Model,
    ModelEntry,
)
from benchmarks.matrix.yaml_loader import UniqueKeyLoader, locate

__all__ = ["load", "model_from_string", "names_engine_args", "engine_arg_names"]


# --------------------------------------------------------------------------------- loading
def load(path: Path, *, engine_arg_names: frozenset[str] | None = None,
         fixture_names: Iterable[str] | None = None) -> tuple[list[Model], list[dict[str, Any]],
                                                              MatrixSettings]:
    """Read and check ``path``: its models, its configurations (dicts of axis values, base
    axes first) and its settings. ``engine_arg_names`` (the installed vLLM's ``EngineArgs``
    fields) checks engine-argument names; None skips that check."""
    where = str(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise MatrixFileError(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        root = yaml.compose(text, Loader=UniqueKeyLoader)
        data = yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise MatrixFileError(f"{where}{line}: YAML: {' '.join(str(problem).split())}") from None
    if data is None:
        raise MatrixFileError(f"{where}: empty matrix file")
    if not isinstance(data, dict):
        raise MatrixFileError(f"{where}:1: a matrix file is a mapping (models:, axes:, ...)")

    def fail(loc: Iterable[Any], message: str) -> MatrixFileError:
        line, keys = locate(root, loc)
        key = ".".join(str(k) for k in keys)
        return MatrixFileError(f"{where}{f':{line}' if line else ''}: {key or 'file'}: {message}")

    def invalid(exc: ValidationError, prefix: list[Any]) -> MatrixFileError:
        err = exc.errors()[0]
        return fail([*prefix, *err["loc"]], err["msg"].removeprefix("Value error, "))

    try:
        spec = MatrixFile.model_validate(data)
    except ValidationError as exc:
        raise invalid(exc, []) from None

    fixtures = set(fixture_names) if fixture_names is not None else _fixture_names()
    base = path.parent
    models = _models(spec, fixtures, base, fail, invalid)
    if spec.serve_params is not None:
        models += _serve_param_models(spec.serve_params, base, fixtures, fail)
    if not models:
        raise fail(["models"], "no model: name at least one")
    seen: dict[str, int] = {}
    for i, m in enumerate(models):
        if m.label in seen:
            raise fail(["models", i], f"duplicate model {m.label!r} (also models[{seen[m.label]}]); "
                                      "give one of them another name")
        seen[m.label] = i

    configurations = _configurations(spec, fail)
    if engine_arg_names is not None:
        _check_engine_args(spec, models, configurations, engine_arg_names, fail)
    return models, configurations, MatrixSettings(spec.rounds, spec.boot_timeout, dict(spec.budgets),
                                            dict(spec.engine_args), dict(_env(spec.env)),
                                            spec.witness, spec.node)


def _fixture_names() -> set[str]:
    from fixtures.catalog import CATALOG

    return set(CATALOG)


def _env(values: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    # YAML reads 1 and true as numbers and booleans; the environment holds strings, and
    # vLLM's flags read "1"/"0".
    return tuple((k, _env_value(v)) for k, v in values.items())


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _models(spec: MatrixFile, fixtures: set[str], base: Path, fail, invalid) -> list[Model]:
    if spec.models == "all-fixtures":
        return [Model(name, "fixture", name) for name in sorted(fixtures)]
    out = []
    for i, raw in enumerate(spec.models):
        if isinstance(raw, str):
            entry = _entry_from_string(raw, fixtures, base)
        else:
            try:
                entry = ModelEntry.model_validate(raw)
            except ValidationError as exc:
                raise invalid(exc, ["models", i]) from None
        out.append(_model(entry, i, fixtures, base, fail))
    return out


def _entry_from_string(text: str, fixtures: set[str], base: Path) -> ModelEntry:
    """A bare model string: a fixture name, else an existing folder, else a hub id."""
    if text in fixtures:
        return ModelEntry(fixture=text)
    folder = _resolve(Path(text), base)
    if folder.is_dir() or text.startswith(("/", ".", "~")):
        return ModelEntry(path=Path(text))
    return ModelEntry(hub=text)


def _resolve(path: Path, base: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else (base / path)


def _model(entry: ModelEntry, i: int, fixtures: set[str], base: Path, fail) -> Model:
    for key, value in entry.engine_args.items():
        if key == "enforce_eager":  # a model that must boot eager: its cells compile nothing
            if not isinstance(value, bool):
                raise fail(["models", i, "engine_args", key], "true or false")
            continue
        if key in RESERVED_ENGINE_ARGS:
            raise fail(["models", i, "engine_args", key],
                       "set by the axes (model, loader, compile_cache), not by hand")
    for key in entry.env:
        if not ENV_NAME.match(key):
            raise fail(["models", i, "env", key], "an environment variable is UPPER_CASE")
    common = dict(revision=entry.revision, engine_args=tuple(entry.engine_args.items()),
                  env=_env(entry.env), budgets=tuple(entry.budgets.items()))
    if entry.kind == "fixture":
        if entry.fixture not in fixtures:
            raise fail(["models", i, "fixture"],
                       f"unknown fixture {entry.fixture!r}; `coldstart fixtures list` names them")
        return Model(entry.label, "fixture", entry.fixture, **common)  # type: ignore[arg-type]
    if entry.kind == "path":
        folder = _resolve(entry.path, base).resolve()  # type: ignore[arg-type]
        if not folder.is_dir():
            raise fail(["models", i], f"model folder {folder} does not exist")
        if not (folder / "config.json").is_file():
            raise fail(["models", i], f"model folder {folder} has no config.json")
        label = entry.name or folder.name
        return Model(label, "path", str(folder), **common)
    from document.boot_result import HUB_ID

    if not HUB_ID.match(entry.hub or ""):
        raise fail(["models", i, "hub"], f"unknown model {entry.hub!r}: not a fixture "
                   "(`coldstart fixtures list`), a model folder, or a hub id (ORG/NAME)")
    return Model(entry.label, "hub", entry.hub, **common)  # type: ignore[arg-type]


def _serve_param_models(file: Path, base: Path, fixtures: set[str], fail) -> list[Model]:
    """vLLM's ``bench sweep startup --serve-params`` file: a JSON list of parameter sets,
    each one model entry named by its ``_benchmark_name``."""
    path = _resolve(file, base)
    try:
        sets = json.loads(path.read_text())
    except OSError as exc:
        raise fail(["serve_params"], f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise fail(["serve_params"], f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    if not isinstance(sets, list) or not all(isinstance(s, dict) for s in sets):
        raise fail(["serve_params"], f"{path}: a list of parameter sets (objects)")
    out = []
    for j, params in enumerate(sets):
        params = {k.replace("-", "_"): v for k, v in params.items()}
        name = params.pop("_benchmark_name", None)
        model = params.pop("model", None)
        if not model:
            raise fail(["serve_params"], f"{path}: set {j} names no model")
        entry = _entry_from_string(str(model), fixtures, path.parent)
        revision = params.pop("revision", None)
        entry = entry.model_copy(update={"name": name, "engine_args": params,
                                         "revision": revision if entry.hub else None})
        try:
            out.append(_model(entry, j, fixtures, path.parent, fail))
        except MatrixFileError as exc:
            raise fail(["serve_params"], f"{path}: set {j}: {str(exc).split(': ', 2)[-1]}") \
                from None
    return out


def _configurations(spec: MatrixFile, fail) -> list[dict[str, Any]]:
    if spec.configurations is not None:
        points = spec.configurations
        if not points:
            raise fail(["configurations"], "empty: list at least one configuration")
        out = []
        for i, point in enumerate(points):
            for key, value in point.items():
                _check_axis_value(key, value, ["configurations", i, key], fail)
            out.append(_ordered({**AXIS_DEFAULTS, **point}))
        return _unique(out)
    axes = {k: (v if isinstance(v, list) else [v]) for k, v in (spec.axes or {}).items()}
    for key, values in axes.items():
        if not values:
            raise fail(["axes", key], "empty list: name at least one value, or leave the axis out")
        if len(set(map(repr, values))) != len(values):
            raise fail(["axes", key], "a value is named twice")
        for j, value in enumerate(values):
            _check_axis_value(key, value, ["axes", key, j], fail)
    axes = {**{k: [v] for k, v in AXIS_DEFAULTS.items() if k not in axes}, **axes}
    keys = list(axes)
    return _unique([_ordered(dict(zip(keys, values)))
                    for values in product(*(axes[k] for k in keys))])


def _check_axis_value(key: str, value: Any, loc: list[Any], fail) -> None:
    if key in BASE_AXES:
        if value not in BASE_AXES[key]:
            raise fail(loc, f"unknown {key} {value!r}; one of {', '.join(BASE_AXES[key])}")
    elif key in RESERVED_ENGINE_ARGS:
        raise fail(loc, "set by the axes (model, loader, compile_cache), not as an axis")
    elif not (ENV_NAME.match(key) or ARG_NAME.match(key)):
        raise fail(loc, "an axis is a base axis, an engine argument (lower_case) or an "
                        "environment variable (UPPER_CASE)")


def _ordered(point: dict[str, Any]) -> dict[str, Any]:
    """Base axes first, in today's id order, then the others as the file gives them."""
    return {**{k: point[k] for k in BASE_AXES}, **{k: v for k, v in point.items()
                                                   if k not in BASE_AXES}}


def _unique(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({json.dumps(p, sort_keys=False, default=str): p for p in points}.values())


def _check_engine_args(spec: MatrixFile, models: list[Model], points: list[dict[str, Any]],
                       known: frozenset[str], fail) -> None:
    def check(name: str, loc: list[Any]) -> None:
        if name in RESERVED_ENGINE_ARGS:
            raise fail(loc, "set by the axes (model, loader, compile_cache), not by hand")
        if name not in known:
            close = _closest(name, known)
            raise fail(loc, f"unknown engine argument {name!r} for the installed vLLM"
                            + (f" (did you mean {close!r}?)" if close else ""))

    for name in spec.engine_args:
        check(name, ["engine_args", name])
    # The file's own models come first; those after them come from serve_params.
    listed = len(spec.models) if isinstance(spec.models, list) else 0
    for i, m in enumerate(models):
        for name, _ in m.engine_args:
            if name != "enforce_eager":  # a model's own, checked by _model
                check(name, ["models", i, "engine_args", name] if i < listed
                      else ["serve_params"])
    where = "configurations" if spec.configurations is not None else "axes"
    for i, point in enumerate(points):
        for name in point:
            if name not in BASE_AXES and not ENV_NAME.match(name):
                check(name, [where, name] if where == "axes" else [where, i, name])
    for key in spec.env:
        if not ENV_NAME.match(key):
            raise fail(["env", key], "an environment variable is UPPER_CASE")


def names_engine_args(models: list[Model], points: list[dict[str, Any]],
                      settings: MatrixSettings) -> bool:
    """Whether a loaded matrix names any engine argument (then worth checking against vLLM)."""
    return bool(settings.engine_args or any(m.engine_args for m in models) or any(
        k not in BASE_AXES and not ENV_NAME.match(k) for p in points for k in p))


def model_from_string(text: str, base: Path | None = None) -> Model:
    """A model named on the command line (``--models``): a fixture name, else a model
    folder, else a hub id; a MatrixFileError (one line) when it is none of them."""
    fixtures = _fixture_names()
    entry = _entry_from_string(text, fixtures, base or Path.cwd())

    def fail(_loc: Any, message: str) -> MatrixFileError:
        return MatrixFileError(f"{text}: {message}")

    return _model(entry, 0, fixtures, base or Path.cwd(), fail)


def _closest(name: str, known: Iterable[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return found[0] if found else None


def engine_arg_names() -> frozenset[str]:
    """The installed vLLM's ``EngineArgs`` field names, read in a subprocess (importing vLLM
    costs seconds and memory the parent of the boots should not carry)."""
    import subprocess
    import sys

    code = ("import dataclasses, json; from vllm.engine.arg_utils import EngineArgs; "
            "print(json.dumps([f.name for f in dataclasses.fields(EngineArgs)]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise MatrixFileError(f"cannot read the installed vLLM's EngineArgs: {tail}")
    return frozenset(json.loads(done.stdout.strip().splitlines()[-1]))
