"""One verdict from a comparison: pass, regression or inconclusive, why, and what would decide.

The statuses of ``analysis.changes`` are of three kinds, and so is the verdict:

- **regression** (exit 1): a change the evidence shows (``FAILING``: a total or a phase
  whose interval's lower end is above its margin, at its share of alpha; a cell that failed
  in NEW, a cell whose share of failed rounds grew);
- **inconclusive** (exit 3): what could not be judged (``INCONCLUSIVE``: a total whose
  interval's upper end is beyond its margin, a slowdown beyond the margin the interval does
  not confirm, a cell with no measured round on a side, a cell that failed its checks on a
  side, rounds skipped or a metric lost) and machines that differ, or nothing compared;
- **pass** (exit 0): every cell's total bounded: the upper end of its interval inside the
  margin (``analysis.bounds``: a pass is wrong with probability at most alpha), and no
  phase's regression confirmed or possible.

Machines that differ make any change the machine's as much as the release's: inconclusive,
a regression among the reasons. A user accepts what is inconclusive only by a flag
(``--accept-inconclusive``; narrower: ``--allow-missing``, ``--accept-machine-difference``),
and the verdict then still says inconclusive, with what was accepted, and exits 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from analysis.changes import FAILING, INCONCLUSIVE, MISSING, POSSIBLE, CellChange
from document import AXIS_OPTIONS, CELL_AXES

__all__ = ["EXIT_CODES", "EXIT_INCONCLUSIVE", "RULE", "Verdict", "capped", "command_groups",
           "exit_code",
           "gate_command", "judge", "verdict_lines"]

EXIT_CODES = {"pass": 0, "regression": 1, "inconclusive": 3}
# 2 is a bad input or a refused comparison, as for every verb (coldstart.cli).
EXIT_INCONCLUSIVE = EXIT_CODES["inconclusive"]


def exit_code(verdict: str, *, accepted_inconclusive: bool = False) -> int:
    """What a verdict exits with: ``EXIT_CODES``, but 0 for an inconclusive verdict whose
    every undecided comparison the user accepted by a flag (``--accept-inconclusive``): what
    they chose, said beside it. The one rule compare, the gate and gate-summary exit by."""
    return 0 if verdict == "inconclusive" and accepted_inconclusive else EXIT_CODES[verdict]
RULE = ("per cell and metric, a t-interval of the change on log seconds, the margin the "
        "larger of --threshold x the base median and --noise-floor-s; pass: every cell's "
        "total has its upper end inside the margin (one-sided alpha per look, an "
        "intersection-union test) and no phase regresses; regression: a total or phase whose "
        "lower end is above the margin (alpha split over cells, half to the total, half over "
        "the phases; spent over a sequential gate's looks); inconclusive: anything else, a "
        "cell unmeasured or failing its checks on a side, machines that differ")
# Reasons past this many are counted, not listed: the table has every one.
MAX_REASONS = 12


class Verdict(BaseModel):
    """The verdict of a comparison, as compare.json, the console and the page state it."""

    verdict: Literal["pass", "regression", "inconclusive"]
    exit_code: int
    reasons: list[str] = Field(default_factory=list)
    # The command that would decide an inconclusive verdict (None for the others), runnable
    # as given, and what to know about running it.
    decide_with: str | None = None
    decide_note: str | None = None
    # What was inconclusive and accepted by a flag: then the exit code is 0.
    accepted: list[str] = Field(default_factory=list)
    rule: str = RULE


def _change_line(c: CellChange, strict: bool = False) -> str:
    counted = "counted as a regression by --strict: " if strict and c.status in POSSIBLE else ""
    line = f"{counted}{c.cell}: {c.metric} {c.status}"
    if c.change_s is not None and c.change_rel is not None:
        line += f" {c.change_s:+.2f} s ({100 * c.change_rel:+.0f} %)"
    return line + (f": {c.note}" if c.note else "")


def capped(lines: list[str]) -> list[str]:
    """At most MAX_REASONS lines for a console or a page; the JSON keeps every one."""
    if len(lines) <= MAX_REASONS:
        return lines
    return [*lines[:MAX_REASONS], f"... and {len(lines) - MAX_REASONS} more (every one in "
                                  "compare's --json, verdict.reasons)"]


def judge(changes: list[CellChange], *, machine_differences: dict[str, tuple] | None = None,
          strict: bool = False, allow_missing: bool = False,
          accept_inconclusive: bool = False, accept_machine_difference: bool = False,
          decide_with: str | None = None, decide_note: str | None = None) -> Verdict:
    """The verdict of ``changes`` (``analysis.changes.compare_results``).

    ``strict`` makes a slowdown the rounds cannot confirm a regression rather than
    inconclusive; ``allow_missing`` accepts cells and metrics missing on a side,
    ``accept_machine_difference`` differing machines, ``accept_inconclusive`` everything
    inconclusive. ``decide_with``: the command an inconclusive verdict names.
    """
    regressing = FAILING | (POSSIBLE if strict else set())
    regressions = [_change_line(c, strict) for c in changes if c.status in regressing]
    undecided: list[str] = []
    accepted: list[str] = []
    for c in changes:
        if c.status not in INCONCLUSIVE or c.status in regressing:
            continue
        (accepted if allow_missing and c.status in MISSING else undecided).append(
            _change_line(c))
    if machine_differences:
        line = "the machines differ: " + "; ".join(
            f"{k} {a!r} vs {b!r}" for k, (a, b) in machine_differences.items())
        (accepted if accept_machine_difference else undecided).insert(0, line)
    judged = [c for c in changes if c.p_adjusted is not None or c.change_s is not None
              or c.status in FAILING or c.status == "fixed in new"]
    if not judged and not regressions:
        undecided.append("no cell was measured on both sides: nothing was compared")

    machines_apart = bool(machine_differences) and not accept_machine_difference
    if regressions and not machines_apart:
        return Verdict(verdict="regression", exit_code=1, reasons=regressions + undecided,
                       accepted=accepted)
    if undecided:
        if machines_apart and regressions:
            undecided += [f"on different machines, not the release's to answer for: {r}"
                          for r in regressions]
        if accept_inconclusive:
            return Verdict(verdict="inconclusive",
                           exit_code=exit_code("inconclusive", accepted_inconclusive=True),
                           reasons=[],
                           accepted=accepted + undecided)
        return Verdict(verdict="inconclusive", exit_code=EXIT_INCONCLUSIVE, reasons=undecided,
                       decide_with=decide_with, decide_note=decide_note, accepted=accepted)
    totals = [c for c in judged if c.gated and c.status in ("no change", "improvement")]
    return Verdict(verdict="pass", exit_code=0, accepted=accepted,
                   reasons=[f"{len(judged)} comparison(s) judged: every cell's total bounded "
                            f"({len(totals)} total(s): each interval's upper end inside its "
                            "margin), no phase regressing or possibly regressing"])


def gate_command(base_release: str, new_release: str, matrix: str | None,
                 cells: Iterable[dict[str, str]], *, rounds_now: int = 0) -> str:
    """The ``coldstart gate`` command that would decide cells left undecided: both releases
    booted interleaved on one machine, narrowed to those cells' axis values, adding rounds
    to each cell until it is decided (more than ``rounds_now``, the rounds that did not)."""
    cells = list(cells)
    same = base_release == new_release
    max_rounds = max(8, rounds_now + 4)
    commands = []
    boxes = command_groups(cells)
    for n, box in enumerate(boxes, 1):
        parts = [f"coldstart gate --base {base_release} --new {new_release}"]
        if matrix:
            parts.append(f"--matrix {matrix}")
        for axis in CELL_AXES:
            values = sorted({c[axis] for c in box if c.get(axis)})
            if values:
                parts.append(f"--{AXIS_OPTIONS[axis]} {','.join(values)}")
        parts.append(f"--max-rounds {max_rounds}")
        # Each group's documents apart: the gate's default folder is per release pair.
        if len(boxes) > 1 or same:
            parts.append(f"--out-dir results/decide-{n}")
        commands.append(" ".join(parts))
    # "; " rather than "&&": a group that stays undecided or regresses (a non-zero exit)
    # must not stop the others from running.
    return " ; ".join(commands)


def command_groups(cells: list[dict[str, str]]) -> list[list[dict[str, str]]]:
    """``cells`` cut into groups each of which axis options select exactly (every value of one
    axis, one value of each other): the axis options take a cross product, so options made
    of the union of scattered cells' values would boot many cells nobody asked about. One
    group where the union is exactly the cells; else the grouping along the axis that needs
    the fewest groups."""
    def product(group: list[dict[str, str]]) -> int:
        size = 1
        for axis in CELL_AXES:
            size *= max(1, len({c.get(axis) for c in group if c.get(axis)}))
        return size

    unique = list({tuple(c.get(a) for a in CELL_AXES): c for c in cells}.values())
    if len(unique) <= 1 or product(unique) == len(unique):
        return [unique] if unique else [[]]
    best: list[list[dict[str, str]]] | None = None  # the axis with the fewest groups
    for axis in CELL_AXES:
        groups: dict[tuple[str | None, ...], list[dict[str, str]]] = {}
        for c in unique:
            groups.setdefault(tuple(c.get(a) for a in CELL_AXES if a != axis), []).append(c)
        if best is None or len(groups) < len(best):
            best = list(groups.values())
    return best or [unique]


def verdict_lines(verdict: Verdict) -> list[str]:
    """The verdict as the console states it: a headline, then why, then what would decide."""
    head = f"verdict: {verdict.verdict.upper()} (exit {verdict.exit_code})"
    if verdict.verdict == "inconclusive" and verdict.exit_code == 0:
        head += ", accepted by --accept-inconclusive"
    lines = [head, *(f"  why: {r}" for r in capped(verdict.reasons))]
    lines += [f"  accepted: {a}" for a in capped(verdict.accepted)]
    if verdict.decide_with:
        lines.append(f"  to decide it: {verdict.decide_with}")
    if verdict.decide_note:
        lines.append(f"  ({verdict.decide_note})")
    lines.append(f"  the rule: {verdict.rule}")
    return lines
