"""``python -m analysis.features`` and ``coldstart features``: see ``analysis.features.cli``."""

import sys

from analysis.features.cli import add_arguments, main, run

__all__ = ["add_arguments", "run", "main"]

if __name__ == "__main__":
    sys.exit(main())
