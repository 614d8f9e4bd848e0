"""``coldstart ingest``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.ingest``; the commands split (issue 30) moves them here."""

from analysis.ingest import add_arguments, run  # noqa: F401
