"""``coldstart study``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.study``; the commands split (issue 30) moves them here."""

from analysis.study import add_arguments, run  # noqa: F401
