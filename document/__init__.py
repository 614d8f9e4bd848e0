"""The result document, typed: its models and their constructors (``models``), the one reader
(``read``: ``read_run``, ``read_cells``, ``read_results``), the one writer (``write``:
``write_run``) and the edits a run goes through after it is written (``edit``: its stats
restated, compacted). Import from here; ``docs/format.md`` describes the format."""

from document.edit import compact, restate_stats
from document.gate_record import GateBoot, GateDecision, GateDesign, GateRecord, GateStop
from document.machine_facts import FixtureStorage, MachineFacts
from document.models import (
    AXIS_OPTIONS,
    CELL_AXES,
    STATS_TIMER,
    CellInfo,
    CellsLogLine,
    Entry,
    RunCell,
    RunMeta,
    UnrecordedCell,
    benchmark_entry,
    boot_of,
    cell_axes,
    cell_params,
    headline_round,
    measured_walls,
    stats_of,
    wall_stats,
)
from document.read import (
    cells_log_line,
    check_version,
    read_boots,
    read_cells,
    read_results,
    read_run,
    run_document,
    run_of_pytest_benchmark,
)
from document.run import RunDocument, new_document, recorded_facts
from document.write import write_run

__all__ = ["AXIS_OPTIONS", "CELL_AXES", "STATS_TIMER", "CellInfo", "CellsLogLine", "Entry",
           "GateBoot", "GateDecision", "GateDesign", "GateRecord", "GateStop",
           "FixtureStorage", "MachineFacts",
           "RunCell", "RunDocument", "RunMeta", "UnrecordedCell", "benchmark_entry", "boot_of",
           "cell_axes", "cell_params", "cells_log_line", "check_version", "compact",
           "headline_round", "measured_walls", "new_document", "run_of_pytest_benchmark",
           "read_boots", "read_cells",
           "read_results", "read_run", "recorded_facts", "restate_stats", "run_document",
           "stats_of", "wall_stats", "write_run"]
