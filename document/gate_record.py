"""What a gate records on each of its sides (``coldstart.gate``): the two releases and which
side this is, the design compare judges the sides by, and (a sequential gate) every boot
that was a warm-up or booted again, each cell's decision, the cells it never booted and a
stop. ``benchmarks.gate`` writes it; ``analysis.compare`` and ``RunDocument.run_label`` read
it by field. Documents of earlier gates hold only the releases, the side and the order: every
other field is optional, and keys a later gate adds are kept (``extra="allow"``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["GateBoot", "GateDecision", "GateDesign", "GateRecord", "GateStop"]


class GateBoot(BaseModel):
    """One boot the gate ran and did not measure as a round: a warm-up, or a round booted
    again because it was disturbed (``why``)."""
    model_config = ConfigDict(extra="allow")

    slot: int
    cell: str
    round: int
    file: str
    started_at: str | None = None
    duration_s: float | None = None
    other_cpu_cores: float | None = None  # benchmarks.disturbance: the load beside the boot
    why: str | None = None  # booted again: what disturbed it
    disturbed: str | None = None  # kept although disturbed: why no reboot was left


class GateDesign(BaseModel):
    """The design both sides record: ``fixed`` (``--rounds N``: one look that spends all of
    alpha) or ``sequential`` (the looks at each cell, by rounds a side, and the cells alpha
    was split over; ``analysis.bounds``)."""
    model_config = ConfigDict(extra="allow")

    kind: Literal["fixed", "sequential"]
    rounds: int | None = None
    first_rounds: int | None = None
    max_rounds: int | None = None
    max_minutes: float | None = None
    cells: int | None = None
    spending: str | None = None
    looks: dict[str, list[int]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _judgeable(self) -> GateDesign:
        # compare spends alpha over a sequential gate's looks by max_rounds and splits it over
        # its cells: a design without them cannot be judged as the gate ran it, and judging it
        # as one look at the whole alpha would claim more than the gate's rule allows.
        if self.kind == "sequential" and (self.max_rounds is None or self.cells is None):
            raise ValueError("a sequential design needs max_rounds and cells")
        return self


class GateDecision(BaseModel):
    """A cell's end in a sequential gate: its verdict at its last look and the rounds a side
    it took; ``why`` an undecided cell stopped."""
    model_config = ConfigDict(extra="allow")

    verdict: Literal["pass", "regression", "undecided"]
    rounds: int
    why: str | None = None


class GateStop(BaseModel):
    """A gate stopped before its end (Ctrl-C, a signal): after how many boots, why, and the
    cells it left undecided."""
    model_config = ConfigDict(extra="allow")

    after_boots: int
    why: str
    undecided: list[str] = Field(default_factory=list)


class GateRecord(BaseModel):
    """``coldstart.gate`` of a gate's side."""
    model_config = ConfigDict(extra="allow")

    base: str  # the releases as the gate names them, NAME==VERSION
    new: str
    side: Literal["base", "new"]
    order: str | None = None  # how the two releases' boots were interleaved (ABBA)
    design: GateDesign | None = None
    warmup: list[GateBoot] = Field(default_factory=list)
    rebooted: list[GateBoot] = Field(default_factory=list)
    decided: dict[str, GateDecision] = Field(default_factory=dict)
    stopped: GateStop | None = None
    not_booted: list[str] = Field(default_factory=list)  # chosen, never booted (budget)
    boots: int | None = None
    minutes: float | None = None

    def release(self, side: Literal["base", "new"]) -> str:
        """The release of ``side`` as the gate names it."""
        return self.base if side == "base" else self.new

    def of_one_release(self) -> bool:
        """A gate of a release against itself: both sides are one release."""
        return self.base == self.new
