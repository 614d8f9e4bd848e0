"""``coldstart calibrate``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.calibrate``; the commands split (issue 30) moves them here."""

from benchmarks.calibrate import add_arguments, run  # noqa: F401
