"""``coldstart fit``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.fit.cli``; the commands split (issue 30) moves them here."""

from analysis.fit.cli import add_arguments, run  # noqa: F401
