"""Features of a model that explain its start-up phases, read without reading its weights;
``python -m analysis.features RESULT.json ... -o features.json`` writes them for a fit.

Every feature carries its unit in its name (``params``, ``weight_bytes``, ``tokenizer_bytes``,
``layers``, ...). A feature that could not be read and was computed from something else (an
architecture formula, a per-layer average) is listed in ``ModelFeatures.estimated``, so a report
can say which numbers are measured and which are guesses.

Sources, in the order of preference:

- a model folder (``from_model_dir``): ``config.json``, the safetensors headers (the 8-byte
  little-endian header length followed by the JSON header; the tensor data is never read),
  tokenizer files;
- an HF ``config.json`` alone (``from_hf_config``): parameters from the architecture formula;
- the reference study's ``models_config.json`` (``read_study_models_config``);
- a JSON file of ``ModelFeatures`` (``read_features_json``).

Each job has its module in this package:

- ``analysis.features.model_features``: ``ModelFeatures``, feature values and units, traits;
- ``analysis.features.hf_config``: the architecture from ``config.json``, the parameter formula;
- ``analysis.features.model_files``: safetensors headers, tokenizer bytes, the compile cache's size;
- ``analysis.features.model_folder``: features of a model folder, a config alone, a boot's model;
- ``analysis.features.study_models``: features of the reference study's models;
- ``analysis.features.sources``: features JSON files, and ``load_features`` of any source.

Imports without vLLM or torch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from analysis.features.model_folder import boot_features
from coldstart.cli import check_output, progress_name, run_program
from coldstart.errors import FeatureError
from harness.document import read_results

__all__ = ["main"]

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("The features of every model in the result files, read from their "
                          "model folders (a hub model's from the hub), as a file fit's "
                          "--features takes: a fit can then be repeated where the model "
                          "folders are not.")
    parser.add_argument("results", nargs="+", metavar="RUN.json", help="result documents")
    parser.add_argument("-o", "--out", required=True, metavar="FEATURES.json")
    parser.add_argument("--matrix", help="the matrix the results are of: a hub model is read "
                                         "at the revision it names (default: the hub's main)")
    parser.add_argument("--hub-only", action="store_true",
                        help="only the hub models, the others named and left out (where their "
                             "folders are not: the Kubernetes merge Job's); none is no error")


def _hub_revisions(matrix: str | None) -> dict[str, str | None]:
    """{model label: revision} of the matrix's hub models."""
    if matrix is None:
        return {}
    from benchmarks.matrix.plan import load_plan

    try:
        plan = load_plan(matrix)
    except ValueError as exc:  # MatrixFileError, an unknown built-in matrix
        raise FeatureError(f"--matrix: {exc}") from None
    return {label: m.revision for label, m in plan.models.items() if m.kind == "hub"}


def run(args: argparse.Namespace) -> int:
    """``python -m analysis.features RESULT.json ... -o features.json``: the features of every
    model in the result files, read from their model folders, as a file ``--features`` takes
    (so a fit can be repeated where the model folders are not)."""
    from analysis.features.hub_model import boot_features as hub_boot_features
    from analysis.features.hub_model import is_hub_id

    check_output(args.out, "-o")
    revisions = _hub_revisions(args.matrix)
    out: dict[str, Any] = {}
    left_out: dict[str, str] = {}
    for path in args.results:
        for r in read_results(path):
            if r.model in out or r.state != "measured" or not r.model_path:
                continue
            if args.hub_only and not is_hub_id(r.model_path):
                left_out[r.model] = r.model_path
                continue
            features = hub_boot_features(r, revisions.get(r.model)) \
                if is_hub_id(r.model_path) else boot_features(r)
            out[r.model] = features.model_dump(mode="json")
    prog = progress_name(args, "analysis.features")
    for model, folder in sorted(left_out.items()):
        print(f"{prog}: {model}: not a hub model (its folder {folder}): left out (--hub-only)",
              file=sys.stderr)
    if not out:
        if args.hub_only:
            print(f"{prog}: no measured boot of a hub model in {', '.join(args.results)}: "
                  f"{args.out} not written")
            return 0
        raise FeatureError("no measured boot with a model folder in "
                           f"{', '.join(args.results)}: no features to write")
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"features of {len(out)} models -> {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program("analysis.features", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
