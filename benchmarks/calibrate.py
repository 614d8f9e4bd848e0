"""``coldstart calibrate --fit PREDICTOR -o calibrated.json``: two boots of models the
predictor was fitted on, on this machine, and the predictor scaled to this machine by them.

    coldstart calibrate --fit cpu-scaling -o here.json   # boots rand-smollm2-135m-l4 and
                                                        # rand-llama3.2-1b (about 5 min)
    coldstart predict MODEL_DIR --fit here.json          # this machine's seconds

The reference models are the smallest training fixture (``--model``, by default the first of
its training set: the scaling matrix lists its smallest shape first) and the largest
(``--second-model``, by default the one of the most parameters); ``--one-boot`` boots the
first alone. Two boots tell each line's intercept and slope apart (a machine may import at
one speed and compile each layer at another); one scales every line by one ratio. They boot
in the predictor's configuration (loader, compile cache, page cache, entrypoint), each with a
cold compile cache in a private cache home as the fitted run's cells had. The scaling itself
is ``analysis.predictor_scale``; the calibrated file records both machines and every ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from analysis.dataset import CONFIG_FIELDS, info_identity
from analysis.features.model_folder import boot_features
from analysis.predict import choose_group
from analysis.predictor_file import load_predictor, write_predictor
from analysis.predictor_scale import calibrate_predictor
from analysis.predictors import describe_calibration, resolve_fit
from coldstart.cli import check_output, run_program
from coldstart.errors import InputError

__all__ = ["this_machine", "reference_models", "run_calibration", "main"]


def this_machine() -> dict[str, Any]:
    """This machine in the terms a run records its own (pytest-benchmark's ``machine_info``
    and the suite's ``machine_info.coldstart``), read by ``analysis.dataset.info_identity``
    as ``analysis.fit`` reads a run's."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    from benchmarks.provenance import machine_facts

    info = pytest_benchmark_generate_machine_info() | {"coldstart": machine_facts()}
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


def reference_models(group: dict[str, Any], wanted: str | None = None,
                     second: str | None = None, *, one_boot: bool = False) -> list[str]:
    """The fixtures to boot: ``wanted`` (else the first training model that is a fixture,
    the scaling matrix's smallest shape) and, unless ``one_boot``, ``second`` (else the
    training fixture of the most parameters): the two a line's intercept and slope are told
    apart by. Each must be a training model of the predictor that this suite can build."""
    from fixtures.catalog import CATALOG

    train = list(group.get("train") or [])

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


def _boot_reference(group: dict[str, Any], model: str, timeout_s: float, work: Path):
    import os

    from fixtures.build import ensure_model
    from harness.boot import run_boot
    from harness.spec import BootSpec

    key = group["key"]
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
        raise SystemExit(f"the reference boot of {model} {result.state}: {result.error}")
    if key.get("platform") and result.platform != key["platform"]:
        raise SystemExit(f"the predictor is of platform {key['platform']}, this machine boots "
                         f"{result.platform}")
    print(f"calibrate: {model} booted in {result.wall_s:.1f} s", flush=True)
    return result


def run_calibration(doc: dict[str, Any], group: dict[str, Any], models: list[str] | str,
                    timeout_s: float, work: Path) -> dict[str, Any]:
    """Boot each of ``models`` (one or two, ``reference_models``) as ``group``'s
    configuration and return the calibrated document."""
    from harness.spec import installed_vllm_version

    key = group["key"]
    if key.get("vllm_version") and installed_vllm_version() != key["vllm_version"]:
        raise SystemExit(f"the predictor is of vLLM {key['vllm_version']}, this environment has "
                         f"{installed_vllm_version()}: calibrate with the release it was fitted on")
    models = [models] if isinstance(models, str) else list(models)
    boots = [_boot_reference(group, m, timeout_s, work / f"reference-{i}")
             for i, m in enumerate(models)]
    refs = [(b, boot_features(b)) for b in boots]
    return calibrate_predictor(doc, group, *refs[0], this_machine(),
                               second=refs[1] if len(refs) > 1 else None)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "scale a predictor to this machine by boots of two of its training models"
    parser.add_argument("--fit", required=True, help="a shipped predictor name or a predictor file")
    parser.add_argument("--model", help="the training model to boot (default: the first fixture)")
    parser.add_argument("--second-model", help="the second training model to boot (default: the "
                        "training fixture of the most parameters)")
    parser.add_argument("--one-boot", action="store_true",
                        help="boot one reference model only: every line scaled by one ratio")
    parser.add_argument("-o", "--out", type=Path, required=True, help="the calibrated predictor")
    parser.add_argument("--boot-timeout", type=float, default=900.0)
    for field in CONFIG_FIELDS:
        parser.add_argument(f"--{field.replace('_', '-')}", dest=field,
                            help=f"choose the predictor's configuration by {field}")


def run(args: argparse.Namespace) -> int:
    check_output(args.out, "-o")  # before the boots, not after them
    path, _ = resolve_fit(args.fit)
    doc = load_predictor(path)
    group = choose_group(doc, {f: getattr(args, f) for f in CONFIG_FIELDS})
    models = reference_models(group, args.model, args.second_model, one_boot=args.one_boot)
    with tempfile.TemporaryDirectory(prefix="coldstart-calibrate-") as tmp:
        calibrated = run_calibration(doc, group, models, args.boot_timeout, Path(tmp))
    write_predictor(calibrated, args.out)
    for name, row in calibrated["calibration"]["scales"].items():
        def seconds(v: Any) -> str:
            values = v if isinstance(v, list) else [v]
            return ", ".join("-" if x is None else f"{x:.2f}" for x in values)

        intercept = (f" (intercept x{row['intercept_scale']:.2f})"
                     if "intercept_scale" in row else "")
        print(f"  {name:36} measured {seconds(row['measured_s']):>14}  predicted "
              f"{seconds(row['predicted_s']):>14}  x{row['scale']:.2f}{intercept}"
              + (f" ({row['from']})" if "from" in row else ""))
    print(describe_calibration(calibrated))
    print(f"calibrated predictor: {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program("benchmarks.calibrate", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
