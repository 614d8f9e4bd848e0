"""The features of every model in result documents (``features_of_runs``), read from each
measured boot's model folder, a hub model's from the hub: what ``coldstart features`` writes
as a file ``--features`` takes, so a fit can be repeated where the model folders are not.
Imports without vLLM or torch.
"""

from __future__ import annotations

from typing import Any

from analysis.features.model_folder import boot_features
from document import read_results

__all__ = ["features_of_runs"]


def features_of_runs(paths: list[str], *, revisions: dict[str, str | None],
                     hub_only: bool = False) -> tuple[dict[str, Any], dict[str, str]]:
    """``{model: features as JSON}`` of the measured boots in ``paths`` (each model once, the
    first boot of it with a model folder), a hub model read at its revision in ``revisions``
    (else the hub's main); and ``{model: folder}`` of those left out because ``hub_only``
    and their model is a folder, not a hub id."""
    from analysis.features.hub_model import boot_features as hub_boot_features
    from analysis.features.hub_model import is_hub_id

    out: dict[str, Any] = {}
    left_out: dict[str, str] = {}
    for path in paths:
        for r in read_results(path):
            if r.model in out or r.state != "measured" or not r.model_path:
                continue
            if hub_only and not is_hub_id(r.model_path):
                left_out[r.model] = r.model_path
                continue
            features = hub_boot_features(r, revisions.get(r.model)) \
                if is_hub_id(r.model_path) else boot_features(r)
            out[r.model] = features.model_dump(mode="json")
    return out, left_out
