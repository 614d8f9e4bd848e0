"""``python -m analysis.fit`` and ``coldstart fit``: see ``analysis.fit.cli``."""

import sys

from analysis.fit.cli import add_arguments, main, run

__all__ = ["add_arguments", "run", "main"]

if __name__ == "__main__":
    sys.exit(main())
