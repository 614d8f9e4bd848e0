"""``coldstart schema``. TRANSITIONAL stub: its add_arguments and run still live in
``coldstart.schema``; the commands split (issue 30) moves them here."""

from coldstart.schema import add_arguments, run  # noqa: F401
