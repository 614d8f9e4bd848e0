"""``coldstart release-pick``. TRANSITIONAL stub: its add_arguments and run still live in
``benchmarks.release_pick``; the commands split (issue 30) moves them here."""

from benchmarks.release_pick import add_arguments, run  # noqa: F401
