"""``python -m analysis.predictors build|list``: see ``analysis.predictors.build``."""

import sys

from analysis.predictors.build import add_arguments, main, run

__all__ = ["add_arguments", "run", "main"]

if __name__ == "__main__":
    sys.exit(main())
