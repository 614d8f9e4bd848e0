"""``coldstart calibrate --fit PREDICTOR -o calibrated.json``: one boot of a model the
predictor was fitted on, on this machine, and the predictor scaled to this machine by it.

    coldstart calibrate --fit cpu-scaling -o here.json      # boots rand-smollm2-135m-l4 (minutes)
    coldstart predict MODEL_DIR --fit here.json             # this machine's seconds

The reference model is ``--model`` (a fixture of the predictor's training set), by default
the first fixture of its training set (the scaling matrix lists its smallest shape first).
It boots in the predictor's configuration (loader, compile cache, page cache, entrypoint), a
cold compile cache in a private cache home as the fitted run's cells had. The scaling itself
is ``analysis.calibrate``; the calibrated file records both machines and every ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from analysis.calibrate import calibrate_predictor
from analysis.dataset import CONFIG_FIELDS, info_identity
from analysis.features import boot_features
from analysis.predict import choose_group, load_predictor
from analysis.predictors import describe_calibration, resolve_fit
from coldstart.cli import InputError, run_program

__all__ = ["this_machine", "reference_model", "run_calibration", "main"]


def this_machine() -> dict[str, Any]:
    """This machine in the terms a run records its own (pytest-benchmark's ``machine_info``
    and the suite's ``machine_info.coldstart``), read by ``analysis.dataset.info_identity``
    as ``analysis.fit`` reads a run's."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    from benchmarks.provenance import machine_facts

    info = pytest_benchmark_generate_machine_info() | {"coldstart": machine_facts()}
    return info_identity(info, [])


def reference_model(group: dict[str, Any], wanted: str | None) -> str:
    """The fixture to boot: ``wanted``, which must be one of the training models, else the
    first training model that is a fixture."""
    from fixtures.catalog import CATALOG

    train = list(group.get("train") or [])
    if wanted is not None:
        if wanted not in train:
            raise InputError(f"--model {wanted!r}: not a training model of this predictor "
                             f"({', '.join(train) or 'none recorded'})")
        if wanted not in CATALOG:
            raise InputError(f"--model {wanted!r}: not a fixture this suite can build")
        return wanted
    for name in train:
        if name in CATALOG:
            return name
    raise InputError("no training model of this predictor is a fixture this suite can build: "
                     "give a predictor fitted on fixtures (e.g. --fit cpu-scaling)")


def run_calibration(doc: dict[str, Any], group: dict[str, Any], model: str,
                    timeout_s: float, work: Path) -> dict[str, Any]:
    """Boot ``model`` as ``group``'s configuration and return the calibrated document."""
    import os

    from fixtures.build import ensure_model
    from harness.boot import BootSpec, installed_vllm_version, run_boot

    key = group["key"]
    if key.get("vllm_version") and installed_vllm_version() != key["vllm_version"]:
        raise SystemExit(f"the predictor is of vLLM {key['vllm_version']}, this environment has "
                         f"{installed_vllm_version()}: calibrate with the release it was fitted on")
    path = ensure_model(model)
    spec = BootSpec(model=model, model_path=path, work_dir=work / "boot",
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
    return calibrate_predictor(doc, group, result, boot_features(result), this_machine())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = __doc__.split("\n")[0]
    parser.add_argument("--fit", required=True, help="a shipped predictor name or a predictor file")
    parser.add_argument("--model", help="the training model to boot (default: the first fixture)")
    parser.add_argument("-o", "--out", type=Path, required=True, help="the calibrated predictor")
    parser.add_argument("--boot-timeout", type=float, default=900.0)
    for field in CONFIG_FIELDS:
        parser.add_argument(f"--{field.replace('_', '-')}", dest=field,
                            help=f"choose the predictor's configuration by {field}")


def run(args: argparse.Namespace) -> int:
    path, _ = resolve_fit(args.fit)
    doc = load_predictor(path)
    group = choose_group(doc, {f: getattr(args, f) for f in CONFIG_FIELDS})
    model = reference_model(group, args.model)
    with tempfile.TemporaryDirectory(prefix="coldstart-calibrate-") as tmp:
        calibrated = run_calibration(doc, group, model, args.boot_timeout, Path(tmp))
    args.out.write_text(json.dumps(calibrated, indent=2) + "\n")
    for name, row in calibrated["calibration"]["scales"].items():
        measured = row["measured_s"]
        print(f"  {name:36} measured {measured if measured is None else round(measured, 2)!s:>8}"
              f"  predicted {row['predicted_s']:8.2f}  x{row['scale']:.2f}"
              + (f" ({row['from']})" if "from" in row else ""))
    print(describe_calibration(calibrated))
    print(f"calibrated predictor: {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program("benchmarks.calibrate", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
