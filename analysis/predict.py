"""Predict each start-up phase of a model never booted, with prediction intervals.

    python -m analysis.predict --fit predictor.json MODEL_DIR_OR_CONFIG_JSON
        [--loader safetensors] [--compile-cache warm] [--platform cuda] [--vllm-version V]
        [--capture-sizes N] [--compile-cache-dir DIR] [--json FILE]
    python -m analysis.predict --fit study MODEL_DIR_OR_CONFIG_JSON   # a shipped predictor
    python -m analysis.predict --list-fits

``--fit`` takes a predictor file or the name of one that ships in the package
(``analysis.predictors``: the study's three GPU machines, this project's CPU run).

The model is a folder (features from ``config.json``, safetensors headers and tokenizer files;
no weight is read), an HF ``config.json`` (parameters from the architecture, marked
estimated) or a JSON file of ``ModelFeatures``. The predictor file (``analysis.fit``) holds
one set of phase models per configuration; the options choose one when it holds several.

Each phase's interval is the OLS prediction interval of a new observation; the total's adds
the phases' variances (phases taken as independent) with Welch-Satterthwaite degrees of
freedom (see ``analysis.regression``). Only numpy and scipy are needed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import typing
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from analysis.dataset import CONFIG_FIELDS, config_label
from analysis.features.hf_config import TORCH_DTYPE_BYTES
from analysis.features.model_features import ModelFeatures, feature_parts, feature_value, trait_kind
from analysis.features.sources import like_training, load_features
from analysis.predictor_file import load_predictor
from analysis.predictors import (
    describe_calibration,
    describe_predictor,
    list_lines,
    resolve_fit,
    shipped_names,
)
from analysis.regression import PhaseModel, Prediction, combine_predictions
from analysis.storage import predicted_storage, uses_load_bandwidth, with_load_bandwidth
from coldstart.cli import check_output, run_program
from coldstart.console import console_width
from coldstart.errors import InputError, UsageError
from harness.schema import validation_summary

__all__ = ["predict_features", "split_phases", "choose_group",
           "domain_warnings", "main"]



def choose_group(doc: dict[str, Any], wanted: dict[str, str | None]) -> dict[str, Any]:
    """The configuration matching every given field; refuses an ambiguous choice."""
    given = {k: v for k, v in wanted.items() if v is not None}
    matches = [g for g in doc["groups"]
               if all(str(g["key"].get(k)) == str(v) for k, v in given.items())]
    if len(matches) == 1:
        return matches[0]
    options = "; ".join(config_label(g["key"]) for g in doc["groups"])
    if not matches:
        raise InputError(f"no fitted configuration matches {config_label(given)}; "
                         f"the predictor has: {options}")
    raise InputError(f"{len(matches)} fitted configurations match; choose with --loader / "
                     f"--compile-cache / ... / --axis NAME=VALUE: {options}")


def predict_features(group: dict[str, Any], features: ModelFeatures,
                     alpha: float = 0.05) -> tuple[dict[str, Prediction], Prediction]:
    """Per-phase (and fitted sub-phase) and total predictions of one configuration.

    The total sums every entry of the group; a phase fitted as its sub-phases
    (``group["split"]``) is in it through them (see ``split_phases``).
    """
    parts = {}
    for name, raw in group["phases"].items():
        model = PhaseModel.model_validate(raw)
        x = None if model.feature is None else feature_value(features, model.feature)
        parts[name] = model.predict(x, alpha)
    return parts, combine_predictions(list(parts.values()), alpha)


def storage_span(group: dict[str, Any], features: ModelFeatures,
                 alpha: float = 0.05) -> dict[str, float] | None:
    """The total at the slowest and at the fastest storage the training boots had: what
    the assumed (median) bandwidth hides: the study's cached granite4.0-h files loaded at
    7.9 GB/s, its other models at about 0.55 (``analysis.storage``). None when no line is on
    the bandwidth or the predictor records no range."""
    known = group.get("load_bandwidth")
    if not uses_load_bandwidth(group) or not known:
        return None
    slow, fast = known["min_bytes_per_s"], known["max_bytes_per_s"]
    totals = [predict_features(group, with_load_bandwidth(features, bw), alpha)[1].mean_s
              for bw in (slow, fast)]
    return {"slowest_gbps": slow / 1e9, "total_at_slowest_s": totals[0],
            "fastest_gbps": fast / 1e9, "total_at_fastest_s": totals[1]}


def split_phases(group: dict[str, Any], parts: dict[str, Prediction],
                 alpha: float = 0.05) -> dict[str, Prediction]:
    """Each phase fitted as the sum of its sub-phases: that sum and its interval."""
    return {phase: combine_predictions([parts[s] for s in subs], alpha)
            for phase, subs in (group.get("split") or {}).items()
            if all(s in parts for s in subs)}


def domain_warnings(group: dict[str, Any], features: ModelFeatures) -> dict[str, list[str]]:
    """Where the fitted lines may not describe this model, by fitted entry ("total": all).

    A model of a kind (MoE, hybrid Mamba, quantized) that no training model was, or whose
    every training model of that kind a line set aside as an outlier, gets a number from
    lines that were fitted without its kind: the interval does not cover that. Predictor
    files without ``train_traits`` (written before it existed) give no warnings.
    """
    if "train_traits" not in group:
        return {}
    out: dict[str, list[str]] = {}
    for kind in dict.fromkeys(features.trait_kinds()):
        members = [m for m, traits in group["train_traits"].items()
                   if kind in (trait_kind(t) for t in traits)]
        if not members:
            out.setdefault("total", []).append(f"no {kind} model among the training models")
            continue
        for name, raw in group["phases"].items():
            outliers = raw.get("outliers") or {}
            if raw.get("status") == "fit" and all(m in outliers for m in members):
                out.setdefault(name, []).append(
                    f"its {kind} training models were outliers of this line "
                    f"({', '.join(members)})")
    return out


def _field_kind(name: str) -> type | None:
    """int, bool or str: what ``--set`` may give a ``ModelFeatures`` field; None: nothing."""
    annotation = ModelFeatures.model_fields[name].annotation
    origin = typing.get_origin(annotation)
    if origin in (dict, list):
        return None
    kinds = set(typing.get_args(annotation)) if origin is not None else {annotation}
    # Count = Annotated[int, Field(ge=0)]: the type under the constraint
    kinds = {typing.get_args(k)[0] if typing.get_origin(k) is typing.Annotated else k
             for k in kinds}
    for kind in (bool, int, str):  # bool first: a flag is not a count
        if kind in kinds:
            return kind
    return None  # dicts and lists (params_by_dtype, estimated)


def _override_value(item: str, name: str, value: str) -> int | bool | str:
    kind = _field_kind(name)
    if name == "dtype":
        dtypes = sorted(TORCH_DTYPE_BYTES)
        if value.replace("torch.", "") not in dtypes:
            raise InputError(f"--set {item!r}: not a dtype ({', '.join(dtypes)})")
        return value
    if name == "quantization":
        return value  # a method name ("fp8", "awq", ...): only read as a trait
    if kind is str:  # source, compiled_graph_method: bookkeeping, not features
        raise InputError(f"--set {item!r}: {name} is not a feature")
    if kind is bool:
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise InputError(f"--set {item!r}: {name} is a flag: true or false")
    if kind is int:
        try:
            number = float(value) if "." in value or "e" in value.lower() else int(value)
        except ValueError as exc:
            raise InputError(f"--set {item!r}: {value!r} is not a number") from exc
        # Counts and byte sizes: "1.5e9" is fine, 1.5 parameters or 1e999 (inf) are not.
        if not (math.isfinite(number) and float(number).is_integer()):
            raise InputError(f"--set {item!r}: {name} is a whole number (a count or bytes)")
        if number < 0:
            raise InputError(f"--set {item!r}: {name} cannot be negative")
        return int(number)
    raise InputError(f"--set {item!r}: {name} cannot be set from the command line")


def _apply_overrides(features: ModelFeatures, items: list[str]) -> ModelFeatures:
    data = features.model_dump()
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in ModelFeatures.model_fields or name in ("model", "estimated"):
            raise InputError(f"--set {item!r}: expected FEATURE=VALUE with a feature of "
                             "analysis.features.ModelFeatures")
        data[name] = _override_value(item, name, value)
        data["estimated"] = [e for e in data["estimated"] if e != name]
    try:
        return ModelFeatures.model_validate(data)
    except ValidationError as exc:  # a combination the model refuses: still one line
        raise InputError(f"--set: {validation_summary(exc)}") from exc


def _as_json(features: ModelFeatures, group: dict[str, Any], parts: dict[str, Prediction],
             total: Prediction, level: float) -> dict[str, Any]:
    sums = split_phases(group, parts, 1 - level)
    warnings = domain_warnings(group, features)
    phases = {p: {"predicted_s": v.mean_s, "low_s": v.low_s, "high_s": v.high_s,
                  "feature": group["phases"][p].get("feature"),
                  "status": group["phases"][p].get("status"),
                  "extrapolated": v.extrapolated,
                  "warnings": warnings.get(p, [])} for p, v in parts.items()}
    for p, v in sums.items():
        phases[p] = {"predicted_s": v.mean_s, "low_s": v.low_s, "high_s": v.high_s,
                     "feature": None, "status": "sum of sub-phases",
                     "subphases": group["split"][p], "extrapolated": v.extrapolated,
                     "warnings": [w for sub in group["split"][p] for w in warnings.get(sub, [])]}
    return {
        "model": features.model,
        "config": group["key"],
        "interval_level": level,
        "total_measured_as": group.get("measured_total"),
        "phases": phases,
        "total": {"predicted_s": total.mean_s, "low_s": total.low_s, "high_s": total.high_s,
                  "extrapolated": total.extrapolated, "warnings": warnings.get("total", [])},
        "features": features.model_dump(mode="json"),
        "estimated_features": features.estimated,
    }


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
    doc = load_predictor(fit_path)
    bad = [a for a in args.axis if "=" not in a]
    if bad:
        raise InputError(f"--axis {bad[0]!r}: give NAME=VALUE")
    group = choose_group(doc, {**{f: getattr(args, f) for f in CONFIG_FIELDS},
                               **dict(a.split("=", 1) for a in args.axis)})
    key = group["key"]
    features = load_features(args.model, platform=key.get("platform"),
                             vllm_version=key.get("vllm_version"),
                             capture_sizes=args.capture_sizes,
                             compile_cache_dir=args.compile_cache_dir, model=args.name,
                             revision=args.revision)
    features, method_line = like_training(_apply_overrides(features, args.set), group)
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
    names = [*parts, *(group.get("split") or {}), "total"]
    feats = [group["phases"][n].get("feature") or "constant" for n in parts]
    table.add_column("phase", no_wrap=True, min_width=max(map(len, names)))
    table.add_column("feature", no_wrap=True,
                     min_width=max(map(len, [*feats, "sum of the sub-phases above"])))
    for h in ("predicted s", f"{args.level:.0%} interval"):
        table.add_column(h, no_wrap=True)
    table.add_column("note")
    for name, p in parts.items():
        raw = group["phases"][name]
        if raw.get("status") == "not_applicable":
            table.add_row(name, "-", "not applicable", "", "")
            continue
        feat = raw.get("feature") or "constant"
        flag = []
        if p.extrapolated:
            flag.append("outside the training range")
        if raw.get("feature") and any(part in features.estimated
                                      for part in feature_parts(raw["feature"])):
            flag.append("feature estimated")
        if warnings.get(name):
            flag.append("off the line's kind of model")
        table.add_row(name, feat, f"{p.mean_s:.2f}", f"[{p.low_s:.2f}, {p.high_s:.2f}]",
                      ", ".join(flag))
        for phase, subs in (group.get("split") or {}).items():
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
    machine = doc.get("machine") if isinstance(doc.get("machine"), dict) else {}
    console.print(describe_predictor(doc, key, fit_name, fit_path), soft_wrap=True)
    console.print(describe_calibration(doc), soft_wrap=True)
    if args.json:
        out = _as_json(features, group, parts, total, args.level)
        out["machine"] = machine
        out["storage"] = storage_line
        out["storage_span"] = span
        out["predictor"] = {"name": fit_name, "file": str(fit_path),
                            "provenance": doc.get("provenance")}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_program("analysis.predict", add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
