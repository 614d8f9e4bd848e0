"""A metric of a cell's boots, round by round: a phase, the total, the residual, a sub-phase
(``phase.sub``) or a phase's part in none of its sub-phases (``phase.`` + ``NO_SUBPHASE``);
its median over the measured rounds (the one median every page states); and the cell a boot is
of, as ``analysis.compare`` and ``analysis.report`` name it.
"""

from __future__ import annotations

import math
import statistics

from document import CELL_AXES, cell_axes
from document.boot_result import BootResult, cell_id

__all__ = ["CELL_FIELDS", "NO_SUBPHASE", "OVERLAPPING_SUBPHASES", "OVERLAP_TOLERANCE_S",
           "RESIDUAL", "TOTAL", "cell_of_boot", "median_of_rounds",
           "median_of_values", "metric_values"]

TOTAL = "total"
RESIDUAL = "residual"
# The part of a phase its sub-phases do not cover, per round: the phase less its sub-phases.
NO_SUBPHASE = "in no sub-phase"
# framework_bootstrap's sub-phases are stretches of different processes and nested calls
# (model_inspection inside engine_config: harness.timeline.cut_phases), not a partition: the
# phase less their sum means nothing. The other phases' sub-phases are one process's calls in
# sequence; a round whose sub-phases still sum to more than the phase (by more than this)
# leaves its cell without a remainder.
OVERLAPPING_SUBPHASES = frozenset({"framework_bootstrap"})
OVERLAP_TOLERANCE_S = 0.005
# A cell is named as its run's test id names it (document.CELL_AXES), so that what
# compare prints is what check, pytest and the run page print. The platform is no part of
# it: a document holds each cell once, and the two sides' platforms are checked with the
# machine (analysis.compare).
CELL_FIELDS = CELL_AXES


def cell_of_boot(b: BootResult) -> str:
    """The cell a boot is of: its run's cell id (``document.cell_axes``)."""
    return cell_id(cell_axes(b))


def _no_subphase(b: BootResult, phase: str) -> float | None:
    """The seconds of ``phase`` in none of its sub-phases, in one round; None where the phase
    has no sub-phase measured or its sub-phases overlap (sum to more than the phase)."""
    value = b.phases.get(phase)
    subs = [v for k, v in b.subphases.items() if k.split(".")[0] == phase and v is not None]
    if value is None or not subs or phase in OVERLAPPING_SUBPHASES:
        return None
    rest = value - sum(subs)
    return None if rest < -OVERLAP_TOLERANCE_S else max(rest, 0.0)


def metric_values(boots: list[BootResult], metric: str, total_from_wall: bool) -> list[float]:
    """Each round's value of ``metric``: a phase, ``TOTAL``, ``RESIDUAL``, a sub-phase
    (``phase.sub``) or a phase's remainder (``phase.`` + ``NO_SUBPHASE``)."""
    out = []
    for b in boots:
        if metric == TOTAL:
            if total_from_wall:
                v = b.wall_s
            else:
                present = [x for x in b.phases.values() if x is not None]
                v = sum(present) if present else None
        elif metric == RESIDUAL:
            v = b.residual_s
        elif metric.endswith(f".{NO_SUBPHASE}"):
            v = _no_subphase(b, metric.split(".")[0])
        elif "." in metric:
            v = b.subphases.get(metric)
        else:
            v = b.phases.get(metric)
        if v is not None and math.isfinite(v):
            out.append(float(v))
    return out


def median_of_rounds(boots: list[BootResult], metric: str) -> float | None:
    """The median of ``metric`` over the measured rounds of one cell (None if none has it).

    The one median of a metric every page states: ``analysis.compare``'s base and new
    columns, and ``analysis.report``'s run page. The total is the wall time when every
    measured round has one, else the sum of the phases.
    """
    rounds = [b for b in boots if b.state == "measured"]
    wall = all(b.wall_s is not None for b in rounds)
    return median_of_values(metric_values(rounds, metric, wall))


def median_of_values(values: list[float]) -> float | None:
    """The median of a metric's round values (None for none): the middle one, or the mean of
    the two middle ones (an even count)."""
    # Symmetric, so a drift that ABBA order splits evenly cancels.
    return statistics.median(values) if values else None

