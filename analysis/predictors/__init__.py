"""The predictors that ship in the package: fitted on published data, one file per machine.

    coldstart predict MODEL_DIR_OR_CONFIG --fit study     # a shipped name or a file
    coldstart predict --list-fits
    coldstart predictors build [--check]                  # re-make them (a checkout)

Each ``NAME.json`` here is a predictor file of ``analysis.fit`` plus a ``provenance`` entry:
the data it was fitted on and whose it is, the machine, the vLLM release, the date and the
command (``analysis.predictors.remake`` holds the recipes and writes the files). A predictor
describes the machine its seconds were measured on and nothing else. Only the standard
library is imported here, so ``analysis.predict`` stays as light as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.predictor_file import PredictorFile, load_predictor
from document.errors import InputError

__all__ = ["ALIASES", "PACKAGE_DIR", "DEFAULT_GPU", "shipped_names", "shipped_file",
           "resolve_fit", "describe_predictor", "describe_calibration", "list_lines"]

PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_GPU = "study-h100-nvl"
# Short names for a shipped file: "study" is the study's main machine (its node n1), the one
# every figure but two was measured on.
ALIASES: dict[str, str] = {"study": DEFAULT_GPU}


def _files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PACKAGE_DIR.glob("*.json"))}


def shipped_names() -> list[str]:
    """The names ``--fit`` takes: the aliases, then one per shipped file."""
    return [*ALIASES, *_files()]


def shipped_file(name: str) -> Path | None:
    """The shipped predictor file of a name (or alias); None when there is none."""
    return _files().get(ALIASES.get(name, name))


def resolve_fit(value: str) -> tuple[Path, str | None]:
    """``--fit``'s value as (predictor file, shipped name or None for a file of one's own).

    A shipped name wins over a file of that name in the working folder only when the value
    has no folder and no suffix (``study``, not ``./study`` or ``study.json``). Anything
    that looks like a path is returned as it is, so a missing file is the reader's "no such
    file"; a bare word that is neither is refused with the shipped names.
    """
    shipped = shipped_file(value)
    p = Path(value)
    if shipped is not None and p.name == value and not p.suffix:
        return shipped, value
    if p.exists() or p.name != value or p.suffix:
        return p, None
    raise InputError(f"--fit {value!r}: not a shipped predictor nor a file; shipped: "
                     f"{', '.join(shipped_names())} (or give a predictor file of analysis.fit)")


def _machine_words(machine: dict[str, Any]) -> str:
    gpu = machine.get("gpu")
    cpu = machine.get("cpu")
    count = machine.get("cpu_count")
    notes = [f"{count} CPUs" if count else "", f"node {machine['node']}" if machine.get("node")
             else ""]
    words = f"{gpu} + {cpu or 'CPU not recorded'}" if gpu else (cpu or "CPU not recorded")
    notes = [n for n in notes if n]
    return f"{words} ({', '.join(notes)})" if notes else words


def describe_predictor(predictor: PredictorFile, key: dict[str, Any], name: str | None,
                       path: Path) -> str:
    """One line: which predictor answered, for which machine and vLLM release."""
    machine = predictor.machine
    prov = predictor.provenance or {}
    if name is None:
        who = str(path)
    else:
        full = ALIASES.get(name, name)
        who = f"{name} (shipped{'' if full == name else ': ' + full})"
    release = key.get("vllm_version") or "not recorded"
    platform = f" on {key['platform']}" if key.get("platform") else ""
    line = f"predictor: {who}; machine: {_machine_words(machine) if machine else 'not recorded'}"
    line += f"; vLLM {release}{platform}"
    if prov.get("fitted"):
        line += f"; fitted {prov['fitted']} on {', '.join(predictor.inputs)}"
    return line


_CELL_CONFIG = ("loader", "compile_cache", "page_cache", "entrypoint")


def list_lines() -> list[str]:
    """``--list-fits``: one line per shipped name: machine, vLLM release, data."""
    out = [f"{alias}: the same as {target}" for alias, target in ALIASES.items()]
    for name, path in _files().items():
        predictor = load_predictor(path)
        prov = predictor.provenance or {}
        groups = predictor.groups
        releases = sorted({str(g.key.get("vllm_version")) for g in groups})
        platforms = sorted({str(g.key.get("platform")) for g in groups})
        # The cells' configuration it was fitted in: a study fit is of warm compile caches, the
        # CPU scaling fit of cold ones, and a boot in another is another boot.
        configs = sorted({" ".join(f"{k}={v}" for k, v in g.key.items()
                                   if k in _CELL_CONFIG and v is not None) for g in groups})
        out.append(f"{name}: {_machine_words(predictor.machine)}; vLLM "
                   f"{', '.join(releases)} on {', '.join(platforms)}; "
                   f"{' | '.join(c for c in configs if c) or 'configuration not recorded'}; "
                   f"fitted {prov.get('fitted', '?')} on {', '.join(predictor.inputs)}")
    return out


def describe_calibration(predictor: PredictorFile) -> str:
    """One line: which machine the predictor's seconds are of, and whether it was calibrated."""
    def name(machine: Any) -> str:
        if not isinstance(machine, dict) or not machine:
            return "a machine not recorded"
        return ", ".join(f"{k}={v}" for k, v in machine.items())

    cal = predictor.calibration
    if cal is not None:
        whole = (cal.get("scales") or {}).get("whole_boot", {}).get("scale")
        second = f" and {cal['second_reference_model']}" if cal.get(
            "second_reference_model") else ""
        return (f"calibrated to {name(cal.get('machine'))} by boots of "
                f"{cal.get('reference_model')}{second} (x{whole:.2f} of the whole boot; fitted on "
                f"{name(cal.get('fitted_on'))})" if isinstance(whole, (int, float)) else
                f"calibrated to {name(cal.get('machine'))}")
    return (f"not calibrated: the seconds are those of the machine it was fitted on, "
            f"{name(predictor.machine)} (`coldstart calibrate --fit ...` scales them to this "
            "machine with two boots)")
