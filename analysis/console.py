"""What a program's output looks like on a terminal and in a pipe: the bottom layer, as
``document.errors`` is, so the library's tables (fit, predict, compare) size themselves
alike whichever verb prints them. Only the standard library is imported here."""

from __future__ import annotations

import os
import sys

__all__ = ["console_width"]


def console_width(piped: int) -> int | None:
    """A rich Console's width: the terminal's (None: rich measures it), else for a file or a
    pipe ``piped`` columns, where rich would take 80, or COLUMNS where that asks for more
    (a child of this suite's pytest sees COLUMNS=80 unasked)."""
    if sys.stdout.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return max(piped, int(columns)) if columns.isdigit() else piped
