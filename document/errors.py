"""The errors a user can fix, at the bottom of the import graph: every layer (harness,
benchmarks, analysis, fixtures, deploy) may raise them, and the command line
(``coldstart.cli.run_cli``) answers each in one line ``PROG: error: MESSAGE``, exit code 2.
Only the standard library is imported here."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["UserError", "InputError", "UsageError", "FeatureError", "USER_ERRORS", "unreadable"]


class UserError(Exception):
    """Input a user can fix (a missing file, a document of the wrong shape, too few points to
    fit, a bad option): the base of every error the programs answer in one line."""


class InputError(UserError, ValueError):
    """Any input a program refuses that no more specific error names (a holdout name not in
    the data, an option out of range, ...)."""


class UsageError(InputError):
    """A usage error ``run`` finds that argparse cannot (an option another needs): said as
    argparse's own are, naming the program's ``--help``."""


# The OS errors come from paths given on the command line: a missing input, an output folder
# that does not exist or is a file, no permission, a read-only file system, a full disk.
USER_ERRORS: tuple[type[BaseException], ...] = (UserError, OSError)


class FeatureError(UserError, ValueError):
    """A model folder or feature file that cannot give the features asked for."""


def unreadable(path: str | Path) -> str | None:
    """Why the file ``path`` cannot be read, in the words every verb's error line uses, or
    None: the one check of an input file (a run, a log, a cells log) before reading it."""
    p = Path(path)
    if p.is_dir():
        return "is a folder, not a file"
    if not p.exists():
        return "no such file"
    if not p.is_file():
        return "not a regular file"
    if not os.access(p, os.R_OK):
        return "permission denied"
    return None
