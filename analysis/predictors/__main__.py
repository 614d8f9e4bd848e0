"""``python -m analysis.predictors build|list``: see ``analysis.predictors.build``."""

import sys

from analysis.predictors.build import main
from coldstart.cli import run_cli

sys.exit(run_cli("analysis.predictors", main))
