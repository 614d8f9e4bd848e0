"""The values of deploy/kubernetes/params/params.env that a matrix decides, printed as its
lines (``KEY=value``):

    python deploy/plan.py examples/matrices/gpu-node.yaml --splits 3 --rounds 3

- ``GPUS``: the most GPUs one cell boots on (deploy/gpus.py);
- ``DEADLINE_S``: the shard Job's ``activeDeadlineSeconds``: every attempt of an index
  (``ATTEMPTS``, the Job's ``backoffLimitPerIndex`` + 1) booting its share of the cells (the
  cells over the splits, rounded up) at the hard limit each (``boot_timeout``), one priming
  boot per cell beyond its rounds, and ``SETUP_S`` for scheduling, the image and the models'
  download. A Job past it ends Failed (DeadlineExceeded) rather than waiting for ever;
- ``GPU_PRODUCT``, ``TOLERATION``: the matrix's ``node.gpu_product`` and ``node.toleration``,
  where it names them (else said on stderr: keep the file's, or drop them from the Job);
- ``MODELS_STORAGE``: the pod's ephemeral storage for its models: twice the weights' bytes (a
  tensorized copy, a fixture's build beside its files) and ``SCRATCH_GIB`` for compile caches
  and logs. A hub model's bytes come from the hub's listing (``--model-bytes`` where this
  machine cannot reach it), a folder's from its files, a fixture's from its parameters (bf16).

A matrix that cannot be read, or a model whose size cannot be known, is one line and exit 2.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

ATTEMPTS = 2  # deploy/kubernetes/base/job.yaml: backoffLimitPerIndex 1, one retry
SETUP_S = 900
DEFAULT_BOOT_TIMEOUT_S = 900.0  # benchmarks/conftest.py's, where the matrix names none
SCRATCH_GIB = 8
GIB = 1024 ** 3
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def model_bytes(model) -> int:
    """The weights' bytes of a matrix model (benchmarks.matrix.file.Model)."""
    if model.kind == "fixture":
        from benchmarks.split import parameters_b

        return int(parameters_b(model.source) * 1e9 * 2)
    if model.kind == "path":
        folder = Path(model.source)
        if not folder.is_dir():
            raise ValueError(f"model folder {folder} is not on this machine: give --model-bytes")
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    from analysis.features.hub_model import HubClient
    from document.errors import FeatureError

    try:
        client = HubClient()
        client.check_reachable()
        sizes = client.file_sizes(model.source, model.revision)
    except FeatureError as exc:
        raise ValueError(f"{model.source}: {exc}; give --model-bytes") from None
    except Exception as exc:  # noqa: BLE001 - gated, unknown: one line, what to do
        raise ValueError(f"{model.source}: the hub's listing could not be read "
                         f"({type(exc).__name__}); give --model-bytes") from None
    return sum(size for name, size in sizes.items() if name.endswith(WEIGHT_SUFFIXES))


def plan_lines(matrix: str, splits: int, rounds: int | None,
               weights: int | None = None) -> tuple[list[str], list[str]]:
    """(the params.env lines, the notes for stderr) of ``matrix`` run in ``splits`` shards."""
    from benchmarks.matrix.cells import load_plan
    from benchmarks.preflight import cell_gpus

    plan = load_plan(matrix)
    settings = plan.settings
    rounds = rounds or (settings.rounds if settings and settings.rounds else 1)
    timeout = settings.boot_timeout if settings and settings.boot_timeout else \
        DEFAULT_BOOT_TIMEOUT_S
    share = math.ceil(len(plan.cells) / splits)
    deadline = int(ATTEMPTS * share * (rounds + 1) * timeout + SETUP_S)
    if weights is None:
        used = {c.model for c in plan.cells}
        weights = sum(model_bytes(m) for label, m in plan.models.items() if label in used)
    storage = math.ceil(2 * weights / GIB) + SCRATCH_GIB
    lines = [f"GPUS={max(cell_gpus(plan, c) for c in plan.cells)}",
             f"DEADLINE_S={deadline}"]
    notes = []
    node = settings.node if settings else None
    for key, value, name in (("GPU_PRODUCT", node and node.gpu_product, "gpu_product"),
                             ("TOLERATION", node and node.toleration, "toleration")):
        if value:
            lines.append(f"{key}={value}")
        else:
            notes.append(f"plan: {key}: the matrix names no node.{name}; keep params.env's, "
                         "or drop it from the Job (the CPU overlay does)")
    lines.append(f"MODELS_STORAGE={storage}Gi")
    return lines, notes


if __name__ == "__main__":  # the form the Kubernetes docs and manifests name: coldstart cluster-plan
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from coldstart.cli import run_script

    sys.exit(run_script("deploy/plan.py", "cluster-plan"))
