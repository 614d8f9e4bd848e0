"""``coldstart compare``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.compare``; the commands split (issue 30) moves them here."""

from analysis.compare import add_arguments, run  # noqa: F401
