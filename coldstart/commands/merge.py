"""``coldstart merge``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.merge``; the commands split (issue 30) moves them here."""

from analysis.merge import add_arguments, run  # noqa: F401
