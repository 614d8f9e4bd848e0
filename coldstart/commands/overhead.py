"""``coldstart overhead``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.overhead``; the commands split (issue 30) moves them here."""

from benchmarks.overhead import add_arguments, run  # noqa: F401
