"""``coldstart gate-summary``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.gate_summary``; the commands split (issue 30) moves them here."""

from benchmarks.gate_summary import add_arguments, run  # noqa: F401
