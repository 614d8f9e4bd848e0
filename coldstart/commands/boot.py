"""``coldstart boot``. TRANSITIONAL stub: its add_arguments and run still live in
``harness.__main__``; the commands split (issue 30) moves them here."""

from harness.__main__ import add_arguments, run  # noqa: F401
