"""``python -m analysis.fit``, the README's form of ``coldstart fit``: the command's own
``add_arguments`` and ``run`` (``coldstart.commands.fit``), its usage and error lines named by
this form."""

import sys

from coldstart.cli import run_program
from coldstart.commands.fit import add_arguments, run

if __name__ == "__main__":
    sys.exit(run_program("analysis.fit", add_arguments, run))
