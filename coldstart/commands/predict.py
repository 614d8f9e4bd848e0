"""``coldstart predict --fit PREDICTOR MODEL``: each start-up phase of a model never booted,
with prediction intervals, as a table (and ``--json``); ``analysis.predict`` predicts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from analysis.console import console_width
from analysis.dataset import CONFIG_FIELDS, config_label
from analysis.features.model_features import feature_parts
from analysis.features.sources import like_training, load_features
from analysis.predict import (
    apply_overrides,
    choose_group,
    domain_warnings,
    predict_features,
    prediction_json,
    split_phases,
    storage_span,
)
from analysis.predictor_file import load_predictor
from analysis.predictors import (
    describe_calibration,
    describe_predictor,
    list_lines,
    resolve_fit,
    shipped_names,
)
from analysis.storage import predicted_storage
from coldstart.cli import check_output
from document.errors import InputError, UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = "Predict the start-up phases of a model."
    parser.add_argument("model", nargs="?",
                        help="model folder, HF config.json, features JSON, or a hub id ORG/NAME "
                             "(config, safetensors headers and file sizes are fetched, no "
                             "weights; a gated model needs HF_TOKEN)")
    parser.add_argument("--revision", help="with a hub id: the branch, tag or commit (main)")
    parser.add_argument("--fit", help="predictor file written by analysis.fit, or a shipped "
                                      f"predictor: {', '.join(shipped_names())}")
    parser.add_argument("--list-fits", action="store_true", help="list the shipped predictors")
    for f in CONFIG_FIELDS:
        parser.add_argument(f"--{f.replace('_', '-')}", dest=f, default=None,
                            help=f"choose the fitted configuration by {f}")
    parser.add_argument("--axis", action="append", default=[], metavar="NAME=VALUE",
                        help="choose the fitted configuration by an axis of the run's matrix "
                             "file (an engine argument or variable: max_model_len=2048)")
    parser.add_argument("--capture-sizes", type=int,
                        help="number of CUDA-graph capture sizes (default: vLLM's default "
                             "list for the platform; 0 on CPU)")
    parser.add_argument("--compile-cache-dir", help="a measured boot's compile cache folder, "
                                                   "for the compiled-graph size")
    parser.add_argument("--set", action="append", default=[], metavar="FEATURE=VALUE",
                        help="give or override a feature (e.g. tokenizer_bytes=1842767)")
    parser.add_argument("--load-gbps", type=float, metavar="GBPS",
                        help="the storage's weight-loading bandwidth in GB/s (default: the "
                             "training boots' median, said in the output)")
    parser.add_argument("--name", help="model name to print")
    parser.add_argument("--level", type=float, default=0.95, help="interval level (0.95)")
    parser.add_argument("--json", help="write the prediction as JSON here")


def run(args: argparse.Namespace) -> int:
    if args.list_fits:
        print("\n".join(list_lines()))
        return 0
    if args.fit is None:  # not required=True: --list-fits needs no predictor
        raise UsageError("the following arguments are required: --fit (a predictor file or "
                         f"{', '.join(shipped_names())})")
    if args.model is None:
        raise UsageError("the following arguments are required: model")
    check_output(args.json, "--json")
    if not 0 < args.level < 1:
        raise InputError(f"--level {args.level}: must be between 0 and 1")
    if args.capture_sizes is not None and args.capture_sizes < 0:
        raise InputError(f"--capture-sizes {args.capture_sizes}: must be >= 0")

    fit_path, fit_name = resolve_fit(args.fit)
    predictor = load_predictor(fit_path)
    bad = [a for a in args.axis if "=" not in a]
    if bad:
        raise InputError(f"--axis {bad[0]!r}: give NAME=VALUE")
    group = choose_group(predictor, {**{f: getattr(args, f) for f in CONFIG_FIELDS},
                               **dict(a.split("=", 1) for a in args.axis)})
    key = group.key
    features = load_features(args.model, platform=key.get("platform"),
                             vllm_version=key.get("vllm_version"),
                             capture_sizes=args.capture_sizes,
                             compile_cache_dir=args.compile_cache_dir, model=args.name,
                             revision=args.revision)
    features, method_line = like_training(apply_overrides(features, args.set), group)
    storage_assumed = args.load_gbps is None and features.load_bandwidth is None
    features, storage_line = predicted_storage(group, features, args.load_gbps)
    alpha = 1 - args.level
    parts, total = predict_features(group, features, alpha)
    sums = split_phases(group, parts, alpha)
    span = storage_span(group, features, alpha) if storage_assumed else None
    if span:
        storage_line = (f"{storage_line}. The interval is at that bandwidth; at the training "
                        f"boots' slowest ({span['slowest_gbps']:.3g} GB/s) the total is "
                        f"{span['total_at_slowest_s']:.1f} s, at their fastest "
                        f"({span['fastest_gbps']:.3g} GB/s) {span['total_at_fastest_s']:.1f} s")

    from rich.console import Console
    from rich.table import Table

    warnings = domain_warnings(group, features)
    console = Console(width=console_width(120))
    table = Table(title=f"{features.model}: predicted start-up ({config_label(key)})",
                  title_justify="left")
    # Phase and feature names are identifiers a user copies (into --set): kept whole, the
    # notes wrap instead.
    names = [*parts, *group.split, "total"]
    feats = [group.phases[n].feature or "constant" for n in parts]
    table.add_column("phase", no_wrap=True, min_width=max(map(len, names)))
    table.add_column("feature", no_wrap=True,
                     min_width=max(map(len, [*feats, "sum of the sub-phases above"])))
    for h in ("predicted s", f"{args.level:.0%} interval"):
        table.add_column(h, no_wrap=True)
    table.add_column("note")
    for name, p in parts.items():
        model = group.phases[name]
        if model.status == "not_applicable":
            table.add_row(name, "-", "not applicable", "", "")
            continue
        feat = model.feature or "constant"
        flag = []
        if p.extrapolated:
            flag.append("outside the training range")
        if model.feature and any(part in features.estimated
                                 for part in feature_parts(model.feature)):
            flag.append("feature estimated")
        if warnings.get(name):
            flag.append("off the line's kind of model")
        table.add_row(name, feat, f"{p.mean_s:.2f}", f"[{p.low_s:.2f}, {p.high_s:.2f}]",
                      ", ".join(flag))
        for phase, subs in group.split.items():
            if name == subs[-1] and phase in sums:
                s = sums[phase]
                table.add_row(phase, "sum of the sub-phases above", f"{s.mean_s:.2f}",
                              f"[{s.low_s:.2f}, {s.high_s:.2f}]", "")
    table.add_row("total", "", f"{total.mean_s:.2f}", f"[{total.low_s:.2f}, {total.high_s:.2f}]",
                  "outside the training range" if total.extrapolated else "")
    console.print(table)
    for name, lines in warnings.items():
        for line in lines:
            console.print(f"warning: {name}: {line}")
    for line in (method_line, storage_line):
        if line:
            console.print(line, soft_wrap=True)
    if features.estimated:
        console.print("estimated features: " + ", ".join(features.estimated))
    console.print(describe_predictor(predictor, key, fit_name, fit_path), soft_wrap=True)
    console.print(describe_calibration(predictor), soft_wrap=True)
    if args.json:
        out = prediction_json(features, group, parts, total, args.level)
        out["machine"] = predictor.machine
        out["storage"] = storage_line
        out["storage_span"] = span
        out["predictor"] = {"name": fit_name, "file": str(fit_path),
                            "provenance": predictor.provenance}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0
