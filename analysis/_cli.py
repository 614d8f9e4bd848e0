"""What every ``python -m analysis.X`` shares: one-line errors and exit code 2 for bad input."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from analysis.errors import FeatureError
from analysis.model import FitError
from coldstart import program_name
from harness.schema import SchemaError

# Input problems a user can fix: reported as one line, exit code 2, no traceback. The OS
# errors come from paths given on the command line: a missing input, an output folder that
# does not exist or is a file, no permission, a read-only file system, a full disk.
USER_ERRORS: tuple[type[BaseException], ...] = (SchemaError, FitError, FeatureError, OSError)


class InputError(ValueError):
    """Any other input the command refuses (a holdout name not in the data, ...)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are an ``InputError``: ``run_cli`` prints them as its one
    line (argparse itself prints the usage too, two lines or more). ``--help`` is unchanged."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{message} (see {self.prog} --help)")


def run_cli(prog: str, main: Callable[[list[str] | None], int],
            argv: list[str] | None = None) -> int:
    """Run ``main``; turn an input error into ``prog: error: <one line>`` and exit code 2.
    ``prog`` is the module (``analysis.fit``); run by the front door, the line names the
    verb (``coldstart fit: error: ...``)."""
    prog = program_name(prog, plain=prog)
    try:
        return main(argv)
    except (*USER_ERRORS, InputError) as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
