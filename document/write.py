"""The one writer of the result document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from document.read import run_document
from document.run import RunDocument
from document.secrets import environment_secrets, scrub


def write_run(doc: RunDocument | dict[str, Any], path: str | Path, *, indent: int = 2) -> None:
    """Write a result document, checked against the models first (a writer's mistake fails
    here, not in the reader of the file). The keys written are the ones given; a secret of
    this process's environment, or one a text shows, is not (``document.secrets``)."""
    typed = doc if isinstance(doc, RunDocument) else run_document(doc, str(path))
    data = scrub(typed.model_dump(mode="json", exclude_unset=True), environment_secrets())
    Path(path).write_text(json.dumps(data, indent=indent, sort_keys=False) + "\n")
