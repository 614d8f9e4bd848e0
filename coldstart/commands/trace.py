"""``coldstart trace``. TRANSITIONAL stub: its add_arguments and run still live in
``harness.trace``; the commands split (issue 30) moves them here."""

from harness.trace import add_arguments, run  # noqa: F401
