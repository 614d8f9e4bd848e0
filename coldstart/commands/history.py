"""``coldstart history``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.history``; the commands split (issue 30) moves them here."""

from benchmarks.history import add_arguments, run  # noqa: F401
