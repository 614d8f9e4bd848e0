"""``coldstart fixtures``. TRANSITIONAL stub: its add_arguments and run still live in
``fixtures.__main__``; the commands split (issue 30) moves them here."""

from fixtures.__main__ import add_arguments, run  # noqa: F401
