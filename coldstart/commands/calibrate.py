"""``coldstart calibrate``: scale a predictor to this machine by boots of models it was fitted on.

    coldstart calibrate --fit cpu-scaling -o here.json   # boots rand-smollm2-135m-l4 and
                                                        # rand-llama3.2-1b (about 5 min)
    coldstart predict MODEL_DIR --fit here.json          # this machine's seconds

``--model`` and ``--second-model`` name the reference models (default: the smallest and the
largest training fixture), ``--one-boot`` boots the first alone; ``benchmarks.calibrate``
says why two boots and how they boot.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from analysis.dataset import CONFIG_FIELDS
from analysis.predict import choose_group
from analysis.predictor_file import load_predictor, write_predictor
from analysis.predictors import describe_calibration, resolve_fit
from benchmarks.calibrate import reference_models, run_calibration
from coldstart.cli import check_output


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
    predictor = load_predictor(path)
    group = choose_group(predictor, {f: getattr(args, f) for f in CONFIG_FIELDS})
    models = reference_models(group, args.model, args.second_model, one_boot=args.one_boot)
    with tempfile.TemporaryDirectory(prefix="coldstart-calibrate-") as tmp:
        calibrated = run_calibration(predictor, group, models, args.boot_timeout, Path(tmp))
    write_predictor(calibrated, args.out)
    for name, row in calibrated.calibration["scales"].items():
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
