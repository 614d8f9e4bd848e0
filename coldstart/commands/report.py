"""``coldstart report``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.report.cli``; the commands split (issue 30) moves them here."""

from analysis.report.cli import add_arguments, run  # noqa: F401
