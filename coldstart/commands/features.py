"""``coldstart features``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.features.cli``; the commands split (issue 30) moves them here."""

from analysis.features.cli import add_arguments, run  # noqa: F401
