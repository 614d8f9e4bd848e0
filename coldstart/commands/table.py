"""``coldstart table``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.table``; the commands split (issue 30) moves them here."""

from analysis.table import add_arguments, run  # noqa: F401
