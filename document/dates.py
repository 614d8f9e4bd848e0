"""The date a page or a file says it was written: now, or ``SOURCE_DATE_EPOCH`` where it is set.

``SOURCE_DATE_EPOCH`` is the reproducible-builds convention
(https://reproducible-builds.org/specs/source-date-epoch/): with it set, a report page or a
predictor made twice from the same data is the same bytes, which is how a refactoring shows
that it changed no output (scripts/golden_outputs.py). Only the stamps that say when something
was written read it; no measurement does (boots time themselves on ``time.monotonic_ns``).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone

from document.errors import InputError

__all__ = ["written_at"]


def written_at() -> datetime:
    """Now, in this machine's time zone; ``SOURCE_DATE_EPOCH``'s second, in UTC, where set."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch:
        return datetime.now().astimezone()
    # The spec asks a malformed value to fail the build rather than be ignored.
    if not epoch.isdigit():
        raise InputError(f"SOURCE_DATE_EPOCH={epoch!r}: not a whole number of seconds")
    return datetime.fromtimestamp(int(epoch), timezone.utc)
