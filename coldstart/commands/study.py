"""``coldstart study FIGURE_DIR -o study.json [--features-out features.json]``: the reference
study's published data as a result document the analysis reads (``analysis.study``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from analysis.study import read_study, study_document
from coldstart.cli import check_output
from document import write_run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Turn the reference study's comparison_results.json into a result "
                          "document.")
    parser.add_argument("source", help="figure folder or (avg_)comparison_results.json")
    parser.add_argument("-o", "--output", required=True, help="result document to write")
    parser.add_argument("--models-config", help="the study's models_config.json")
    parser.add_argument("--logs", metavar="FOLDER",
                        help="boot logs to read model facts from where the figure has none")
    parser.add_argument("--features-out", help="also write {model: features} JSON here")


def run(args: argparse.Namespace) -> int:
    check_output(args.output, "-o")
    check_output(args.features_out, "--features-out")
    study = read_study(args.source, models_config=args.models_config, logs=args.logs)
    write_run(study_document(study), args.output)
    if args.features_out:
        Path(args.features_out).write_text(json.dumps(
            {k: v.model_dump(mode="json") for k, v in study.features.items()}, indent=2) + "\n")
    print(f"{len(study.results)} models -> {args.output}")
    return 0
