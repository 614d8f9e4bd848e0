"""``coldstart predictors``. TRANSITIONAL stub: its add_arguments and run still live in
``analysis.predictors.build``; the commands split (issue 30) moves them here."""

from analysis.predictors.build import add_arguments, run  # noqa: F401
