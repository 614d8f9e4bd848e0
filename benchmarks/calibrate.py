"""A predictor scaled to this machine by boots of models it was fitted on (``coldstart
calibrate``).

The reference models are the smallest training fixture (by default the first of its
training set: the scaling matrix lists its smallest shape first) and the largest (by default
the one of the most parameters), or the first alone. Two boots tell each line's intercept and slope apart (a machine may import at
one speed and compile each layer at another); one scales every line by one ratio. They boot
in the predictor's configuration (loader, compile cache, page cache, entrypoint), each with a
cold compile cache in a private cache home as the fitted run's cells had. The scaling itself
is ``analysis.predictor_scale``; the calibrated file records both machines and every ratio.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.dataset import info_identity
from analysis.features.model_folder import boot_features
from analysis.predictor_file import PredictorFile, PredictorGroup
from analysis.predictor_scale import calibrate_predictor
from document.errors import InputError, UserError

__all__ = ["CalibrationError", "this_machine", "reference_models", "run_calibration"]


class CalibrationError(UserError):
    """A calibration that cannot give a true factor: the predictor was fitted on another
    platform or vLLM release than this machine boots, or its reference boot was not
    measured. Answered in one line by the command line (exit 2), as every error a user
    can act on is; the library raises, never exits."""


def this_machine() -> dict[str, Any]:
    """This machine in the terms a run records its own (pytest-benchmark's ``machine_info``
    and the suite's ``machine_info.coldstart``), read by ``analysis.dataset.info_identity``
    as ``analysis.fit`` reads a run's."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    from benchmarks.provenance import machine_facts

    info = pytest_benchmark_generate_machine_info() | {"coldstart": machine_facts().as_json()}
    return info_identity(info, [])


def _fixture_params(name: str) -> int:
    """A training fixture's parameter count from its architecture's config (no weights
    built): what tells the largest training model apart."""
    from analysis.features.hf_config import architecture_of, formula_params
    from fixtures.catalog import ARCHITECTURES, CATALOG

    fixture = CATALOG[name]
    if fixture.architecture not in ARCHITECTURES:
        return 0
    cfg = {**ARCHITECTURES[fixture.architecture], "num_hidden_layers": fixture.layers}
    counted = formula_params(architecture_of(cfg))
    return counted[0] if counted else 0


def reference_models(group: PredictorGroup, wanted: str | None = None,
                     second: str | None = None, *, one_boot: bool = False) -> list[str]:
    """The fixtures to boot: ``wanted`` (else the first training model that is a fixture,
    the scaling matrix's smallest shape) and, unless ``one_boot``, ``second`` (else the
    training fixture of the most parameters): the two a line's intercept and slope are told
    apart by. Each must be a training model of the predictor that this suite can build."""
    from fixtures.catalog import CATALOG

    train = list(group.train)

    def checked(name: str, option: str) -> str:
        if name not in train:
            raise InputError(f"{option} {name!r}: not a training model of this predictor "
                             f"({', '.join(train) or 'none recorded'})")
        if name not in CATALOG:
            raise InputError(f"{option} {name!r}: not a fixture this suite can build")
        return name

    fixtures = [name for name in train if name in CATALOG]
    if wanted is not None:
        first = checked(wanted, "--model")
    elif fixtures:
        first = fixtures[0]
    else:
        raise InputError("no training model of this predictor is a fixture this suite can "
                         "build: give a predictor fitted on fixtures (e.g. --fit cpu-scaling)")
    if one_boot:
        return [first]
    if second is not None:
        other = checked(second, "--second-model")
    else:
        other = max(fixtures, key=_fixture_params)
    return [first] if other == first else [first, other]


def _boot_reference(group: PredictorGroup, model: str, timeout_s: float, work: Path):
    import os

    from fixtures.build import ensure_model
    from harness.boot import run_boot
    from harness.spec import BootSpec

    key = group.key
    spec = BootSpec(model=model, model_path=ensure_model(model), work_dir=work / "boot",
                    loader=key.get("loader") or "safetensors",
                    compile_cache=key.get("compile_cache") or "cold",
                    page_cache=key.get("page_cache") or "warm",
                    entrypoint=key.get("entrypoint") or "offline", timeout_s=timeout_s)
    print(f"calibrate: booting {model} ({spec.loader}, compile cache {spec.compile_cache}, "
          f"page cache {spec.page_cache}, {spec.entrypoint})", flush=True)
    # A private cache home: a cold compile cache finds nothing kept from before.
    previous = os.environ.get("COLDSTART_CACHE_DIR")
    os.environ["COLDSTART_CACHE_DIR"] = str(work / "cache")
    try:
        result = run_boot(spec)
    finally:
        if previous is None:
            os.environ.pop("COLDSTART_CACHE_DIR", None)
        else:
            os.environ["COLDSTART_CACHE_DIR"] = previous
    if result.state != "measured":
        raise CalibrationError(f"the reference boot of {model} {result.state}: {result.error}")
    if key.get("platform") and result.platform != key["platform"]:
        raise CalibrationError(f"the predictor is of platform {key['platform']}, this machine "
                               f"boots {result.platform}")
    print(f"calibrate: {model} booted in {result.wall_s:.1f} s", flush=True)
    return result


def run_calibration(predictor: PredictorFile, group: PredictorGroup, models: list[str] | str,
                    timeout_s: float, work: Path) -> PredictorFile:
    """Boot each of ``models`` (one or two, ``reference_models``) as ``group``'s
    configuration and return the calibrated document."""
    from harness.spec import installed_vllm_version

    key = group.key
    if key.get("vllm_version") and installed_vllm_version() != key["vllm_version"]:
        raise CalibrationError(f"the predictor is of vLLM {key['vllm_version']}, this environment "
                               f"has {installed_vllm_version()}: calibrate with the release it "
                               "was fitted on")
    models = [models] if isinstance(models, str) else list(models)
    boots = [_boot_reference(group, m, timeout_s, work / f"reference-{i}")
             for i, m in enumerate(models)]
    refs = [(b, boot_features(b)) for b in boots]
    return calibrate_predictor(predictor, group, *refs[0], this_machine(),
                               second=refs[1] if len(refs) > 1 else None)


if __name__ == "__main__":  # the form earlier docs used: runs its verb (coldstart.cli.run_old_form)
    import sys

    from coldstart.cli import run_old_form

    sys.exit(run_old_form("benchmarks.calibrate"))
