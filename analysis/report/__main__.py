"""``python -m analysis.report`` and ``coldstart report``: see ``analysis.report.cli``."""

import sys

from analysis.report.cli import add_arguments, main, run

__all__ = ["add_arguments", "run", "main"]

if __name__ == "__main__":
    sys.exit(main())
