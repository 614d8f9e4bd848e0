"""The log reader against logs whose printed durations someone transcribed by hand.

A manifest lists, per log file, every duration the log prints, in the form of
``tests/data/logs/public/manifest.json``: ``printed`` holds ``[words, value_s, maps_to,
process]`` and, optionally, a fifth item, the boot (1-based, in the log's order) the line
belongs to, where a log holds several; without it the line is read in the last boot.

A printed duration is reproduced where the reader gives the same value within 5 % + 0.05 s
(issue 27's tolerance): for one that maps to a phase, a subphase or the printed total,
there; for one that maps to none (another rank's line, a boot before the asserted one), among
every duration the reader took from the log (``log_durations`` and the values of repeated
lines). The facts compared are those the entry states: its engine ("v0" / "v1"; null where no
line of the excerpt states it), its platform (unless "not stated ...") and its TP size.
``scripts/heldout_check.py`` runs this over a folder and prints the score.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from document import boot_result
from harness.logs.reader import log_boots

__all__ = ["agrees", "check_entry", "check_manifest", "fact_agrees", "Outcome", "LogOutcome"]


def agrees(got: float | None, printed: float) -> bool:
    """Within 5 % + 0.05 s of the printed value (the second term covers whole-second and
    two-decimal rounding of small values)."""
    return got is not None and abs(got - printed) <= 0.05 * abs(printed) + 0.05


@dataclass
class Outcome:
    """One printed duration and what the reader gave for it."""

    words: str
    printed: float
    target: str | None
    boot: int | None
    got: float | None
    reproduced: bool


@dataclass
class LogOutcome:
    """One log: its printed durations, the boots read, and the facts beside the expected."""

    file: str
    boots_read: int
    durations: list[Outcome] = field(default_factory=list)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: str | None = None

    @property
    def reproduced(self) -> int:
        return sum(o.reproduced for o in self.durations)


def value_of(result: boot_result.BootResult, target: str) -> float | None:
    if target == "printed_total":
        return result.printed_total_s
    if "." in target:
        return result.subphases.get(target)
    return result.phases.get(target)


def _read_values(boots: list[boot_result.BootResult]) -> list[float]:
    values: list[float] = []
    for boot in boots:
        values.extend(v for v in boot.log_durations.values() if v is not None)
        for repeated in boot.evidence.occurrences.values():
            values.extend(repeated)
    return values


def _expected_platform(text: str | None) -> str | None:
    """The platform a manifest names ("npu (Ascend)", "rocm (MI50, gfx906)"), or None where
    it says the log does not state one."""
    if not text or text.startswith("not stated"):
        return None
    return text.split()[0].lower()


def check_entry(folder: Path, entry: dict[str, Any]) -> LogOutcome:
    """Read one manifest entry's log and compare it with what the entry says it prints."""
    path = folder / entry["file"]
    try:
        boots = log_boots(path)
    except Exception as exc:  # noqa: BLE001 - a reader crash is itself the finding
        out = LogOutcome(file=entry["file"], boots_read=0, error=f"{type(exc).__name__}: {exc}")
        out.durations = [Outcome(p[0], p[1], p[2], (p[4] if len(p) > 4 else None), None, False)
                         for p in entry["printed"]]
        return out
    out = LogOutcome(file=entry["file"], boots_read=len(boots))
    every = _read_values(boots)
    for item in entry["printed"]:
        words, printed, target = item[0], float(item[1]), item[2]
        boot = item[4] if len(item) > 4 else None
        if target is None:
            got = min(every, key=lambda v: abs(v - printed), default=None)
        elif boot is not None and not 1 <= boot <= len(boots):
            got = None
        else:
            got = value_of(boots[(boot or len(boots)) - 1], target)
        out.durations.append(Outcome(words, printed, target, boot, got, agrees(got, printed)))
    last = boots[-1]
    # null where no line of the excerpt states the engine: nothing to hold the reader to
    if entry.get("engine"):
        out.facts["engine"] = {"expected": entry["engine"],
                               "read": last.evidence.facts.get("engine")}
    expected_platform = _expected_platform(entry.get("platform"))
    if expected_platform is not None:
        out.facts["platform"] = {"expected": expected_platform, "read": last.platform}
    if entry.get("tensor_parallel"):
        config = last.engine_config
        out.facts["tensor_parallel"] = {
            "expected": entry["tensor_parallel"],
            "read": config.get("tensor_parallel_size", config.get("tensor_parallel_size_at_least"))}
    return out


def check_manifest(folder: Path, manifest: Path | None = None) -> dict[str, Any]:
    """Every log of a manifest (``folder/manifest.json`` by default) checked: a report with
    the totals (``printed``, ``reproduced``, by mapped / unmapped) and each log's outcome."""
    manifest = manifest or folder / "manifest.json"
    entries = json.loads(manifest.read_text(encoding="utf-8"))["logs"]
    logs = [check_entry(folder, entry) for entry in entries]
    rows = [o for log in logs for o in log.durations]
    mapped = [o for o in rows if o.target]
    facts = [(name, f) for log in logs for name, f in log.facts.items()]
    return {
        "logs": len(logs),
        "printed": len(rows),
        "reproduced": sum(o.reproduced for o in rows),
        "mapped": len(mapped),
        "mapped_reproduced": sum(o.reproduced for o in mapped),
        "facts_checked": len(facts),
        "facts_agreeing": sum(fact_agrees(name, f) for name, f in facts),
        "crashed": [log.file for log in logs if log.error],
        "per_log": [dict(asdict(log), reproduced=log.reproduced) for log in logs],
    }


def fact_agrees(name: str, fact: dict[str, Any]) -> bool:
    """Whether a checked fact (engine, platform, tensor_parallel) is what the manifest says."""
    expected, read = fact["expected"], fact["read"]
    if name == "tensor_parallel":
        return read is not None and int(read) == int(expected)
    return read is not None and str(read).lower() == str(expected).lower()
