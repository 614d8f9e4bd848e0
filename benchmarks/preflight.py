"""Before a cell's first boot: can it boot here at all?

A cell that cannot succeed on this machine ends at once, in one line saying which and why,
never after its rounds have each met the same wall (an 8B hub model on a CPU machine without
the hub: every round of every cell ended in "OSError: We couldn't connect to
'https://huggingface.co'", 40 minutes for 16 cells). What is checked:

- **skipped**, this machine is not one for the cell: the matrix's ``node.platform`` is not
  this machine's; the cell needs more GPUs (tensor x pipeline x data parallel size) than this
  machine shows; the matrix's ``node.gpu_product`` is not among them. Another node may run it.
- **failed**, the cell as configured cannot boot anywhere like this: its hub model is not in
  the local hub cache and the hub cannot be reached (``HF_HUB_OFFLINE``, no name resolution),
  or refuses its files (gated without a token, an unknown id or revision); the token file its
  ``HF_TOKEN_PATH`` names is not there (the Kubernetes Secret not mounted).

The hub is asked once per model, token and revision, with the timeouts of
``analysis.features.hub_model`` (the one-line reasons ``coldstart predict`` gives too).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.matrix.cells import Cell, Plan, load_plan, select

PARALLEL_ARGS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
GPU_PLATFORMS = ("cuda", "rocm", "xpu")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
SECRET_COMMAND = "kubectl create secret generic hf-token --from-file=hf-token=TOKEN_FILE"

Refusal = tuple[str, str]  # ("skipped" | "failed", the one line)


def _size(values: Mapping[str, Any], name: str) -> int:
    value = values.get(name, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: {value!r} is not a whole number of 1 or more")
    return value


def cell_gpus(plan: Plan, cell: Cell) -> int:
    """The GPUs one boot of ``cell`` uses: tensor x pipeline x data parallel size, each from
    where the boot takes it: the file's ``engine_args``, the cell's axes, the model entry's
    own (the model's wins)."""
    common = dict(plan.settings.engine_args) if plan.settings else {}
    model = plan.models.get(cell.model)
    own = dict(model.engine_args) if model is not None else {}
    values = common | dict(cell.extra) | own
    count = 1
    for name in PARALLEL_ARGS:
        count *= _size(values, name)
    return count


def _visible_gpus() -> list[str]:
    """The names of the GPUs a boot here may use (NVML; CUDA_VISIBLE_DEVICES narrows)."""
    from harness.machine import gpu_models

    names = gpu_models()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        names = names[:len([v for v in visible.split(",") if v.strip()])]
    return names


def _label(name: str) -> str:
    """A GPU's name as GPU feature discovery labels it (nvidia.com/gpu.product)."""
    return "-".join(name.split())


def _cached_weights(repo: str, revision: str | None) -> bool:
    """The hub cache here holds ``repo``'s config.json and weights: it boots offline."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    found = try_to_load_from_cache(repo, "config.json", revision=revision)
    if not isinstance(found, str):
        return False
    return any(p.suffix in WEIGHT_SUFFIXES for p in Path(found).parent.iterdir())


def _token(env: Mapping[str, str], repo: str) -> tuple[str | None, str | None]:
    """(the hub token the boot would be given, why it is missing where one is named)."""
    if env.get("HF_TOKEN"):
        return env["HF_TOKEN"], None
    path = env.get("HF_TOKEN_PATH")
    if not path:
        return None, None
    try:
        token = Path(path).read_text().strip()
    except OSError as exc:
        return None, (f"hub model {repo}: its token file HF_TOKEN_PATH={path} cannot be read "
                      f"({exc.strerror or exc}); create the Secret ({SECRET_COMMAND}) and mount "
                      f"it there, or set HF_TOKEN")
    if not token:
        return None, f"hub model {repo}: its token file HF_TOKEN_PATH={path} is empty"
    return token, None


class Preflight:
    """The pre-flight of a session's cells; ``check(cell)`` is None or a ``Refusal``.

    ``gpus`` and ``access`` stand in for NVML and the hub in tests."""

    def __init__(self, plan: Plan | None, environ: Mapping[str, str] | None = None,
                 gpus: Callable[[], list[str]] | None = None,
                 access: Callable[[str, str | None, str | None], None] | None = None):
        self.plan = plan
        self.environ = dict(os.environ if environ is None else environ)
        self._gpus_of = gpus or _visible_gpus
        self._gpus: list[str] | None = None
        self._access = access
        self._hub: dict[tuple[Any, ...], str | None] = {}

    def gpus(self) -> list[str]:
        if self._gpus is None:
            self._gpus = self._gpus_of()
        return self._gpus

    def check(self, cell: Cell) -> Refusal | None:
        if self.plan is None:
            return None
        return self.machine(cell) or self._model(cell)

    def machine(self, cell: Cell) -> Refusal | None:
        node = self.plan.settings.node if self.plan.settings else None
        gpus = self.gpus()
        here = "cuda" if gpus else "cpu"
        wanted = node.platform if node and node.platform else None
        if wanted and wanted != here:
            return "skipped", (f"needs platform {wanted} (the matrix's node.platform); this "
                               f"machine is {here} ({len(gpus)} GPUs)")
        need = cell_gpus(self.plan, cell)
        if (wanted or here) in GPU_PLATFORMS and need > len(gpus):
            return "skipped", (f"needs {need} GPUs (tensor x pipeline x data parallel size); "
                               f"this machine has {len(gpus)}")
        product = node.gpu_product if node else None
        if product and gpus and product not in {_label(g) for g in gpus}:
            return "skipped", (f"needs GPU {product} (the matrix's node.gpu_product); this "
                               f"machine has {', '.join(sorted(set(map(_label, gpus))))}")
        return None

    def _env(self, cell: Cell) -> dict[str, str]:
        """The variables the boot is given, as harness.spec layers them."""
        from benchmarks.matrix.file_schema import ENV_NAME

        settings = self.plan.settings
        model = self.plan.models.get(cell.model)
        return {**self.environ, **(dict(settings.env) if settings else {}),
                **(dict(model.env) if model is not None else {}),
                **{k: str(v) for k, v in cell.extra if ENV_NAME.match(k)}}

    def _model(self, cell: Cell) -> Refusal | None:
        model = self.plan.models.get(cell.model)
        if model is None or model.kind != "hub":
            return None
        env = self._env(cell)
        repo, revision = model.source, model.revision
        token, missing = _token(env, repo)
        if missing:
            return "failed", missing
        key = (repo, revision, token)
        if key not in self._hub:
            self._hub[key] = self._hub_problem(repo, revision, token, env)
        why = self._hub[key]
        return ("failed", why) if why else None

    def _hub_problem(self, repo: str, revision: str | None, token: str | None,
                     env: Mapping[str, str]) -> str | None:
        from document.errors import FeatureError

        if _cached_weights(repo, revision):
            return None  # vLLM boots it from the cache, hub or not
        offline = env.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
        if offline:
            return (f"hub model {repo}: not in the hub cache here, and HF_HUB_OFFLINE is set: "
                    "vLLM cannot download it; fill the cache first or name a folder (path:)")
        try:
            if self._access is not None:
                self._access(repo, revision, token)
            else:
                from analysis.features.hub_model import HubClient

                HubClient().check_access(repo, revision, token)
        except FeatureError as exc:
            return f"hub model {exc}"
        return None


# The marker of a collected cell that the pre-flight skips on this machine: it boots nothing,
# so the busy-machine refusal (the root conftest.py) does not count it.
CANNOT_BOOT_HERE = "cannot_boot_here"


def mark_cannot_boot_here(items: list[Any], plan: Plan | None, cells: list[Cell]) -> None:
    """Mark each of pytest's ``items`` whose cell (its parametrization id) this machine is not
    one for (``Preflight.machine``: platform, GPU count, GPU product)."""
    if plan is None:
        return
    check = Preflight(plan)
    by_id = {c.id: c for c in cells}
    for item in items:
        cell = by_id.get(getattr(getattr(item, "callspec", None), "id", None))
        if cell is not None and check.machine(cell) is not None:
            item.add_marker(CANNOT_BOOT_HERE)


def plan_here(matrix: str, narrow: Mapping[str, list[str] | None]) -> tuple[Plan, list[Cell],
                                                                          str | None]:
    """The plan and selected cells of ``matrix``, its engine-argument names checked against
    the installed vLLM (a subprocess importing it: about a minute on 2 cores) only where a
    cell can run on this machine; else a note saying they were not."""
    plan = load_plan(matrix)
    cells = select(plan, **narrow)
    check = Preflight(plan)
    if any(check.machine(c) is None for c in cells):
        plan = load_plan(matrix, check_engine_args=True)
        return plan, select(plan, **narrow), None
    return plan, cells, ("engine arguments not checked against the installed vLLM: no cell "
                         "of this matrix can run on this machine (pre-flight)")
