"""``coldstart predict``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.predict``; the commands split (issue 30) moves them here."""

from analysis.predict import add_arguments, run  # noqa: F401
