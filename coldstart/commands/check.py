"""``coldstart check``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.check``; the commands split (issue 30) moves them here."""

from benchmarks.check import add_arguments, run  # noqa: F401
