"""``python -m analysis.predictors build|list``: see ``analysis.predictors.build``."""

import sys

from analysis._cli import run_cli
from analysis.predictors.build import main

sys.exit(run_cli("analysis.predictors", main))
