"""What ``pytest benchmarks/`` prints at its end: where each cell's seconds went, phase by
phase, and the step that comes next. pytest-benchmark's own table has the wall times alone;
the question the run is for is answered here, before any analysis step."""

from __future__ import annotations

from pathlib import Path

from document.boot_result import PHASE_NAMES, BootResult

__all__ = ["HEADING", "cell_line", "summary_lines"]

HEADING = "vllm-coldstart: each cell's seconds by phase (its median round)"


def cell_line(cell_id: str, result: BootResult, checks_failed: list[str] | None = None) -> str:
    """One line: the cell, its state, and for a measured one the time to ready and each
    phase that ran (a phase that does not apply, CUDA graphs on CPU, is left out); a cell
    that failed its checks says so first, with why: its seconds measured something else."""
    if result.state != "measured":
        return f"{cell_id}: {result.state}: {(result.reason or '')[:200]}"
    if checks_failed:
        cell_id = f"{cell_id}: FAILED its checks ({'; '.join(checks_failed)[:200]})"
    parts = [f"{name} {result.phases[name]:.2f}" for name in PHASE_NAMES
             if result.phases.get(name) is not None]
    if result.residual_s is not None:
        parts.append(f"residual {result.residual_s:.2f}")
    ready = "-" if result.wall_s is None else f"{result.wall_s:.1f}"
    return f"{cell_id}: ready in {ready} s = " + ", ".join(parts)


def summary_lines(results: dict[str, BootResult], json_path: str | Path | None,
                  checks_failed: dict[str, list[str]] | None = None) -> list[str]:
    """Every cell's line, then where the whole table is and what to run next."""
    checks_failed = checks_failed or {}
    lines = [cell_line(cid, r, checks_failed.get(cid)) for cid, r in results.items()]
    if json_path:
        lines.append(f"every column: coldstart table {json_path}; next: coldstart fit "
                     f"{json_path} (phases per model), coldstart report {json_path} (a page)")
    return lines
