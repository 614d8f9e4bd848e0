"""``coldstart compact``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.compact``; the commands split (issue 30) moves them here."""

from benchmarks.compact import add_arguments, run  # noqa: F401
