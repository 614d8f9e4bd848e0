"""``coldstart gate``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.gate``; the commands split (issue 30) moves them here."""

from benchmarks.gate import add_arguments, run  # noqa: F401
