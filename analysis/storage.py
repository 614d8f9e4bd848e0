"""Storage as an input: the bandwidth a boot's weights were loaded at.

The seconds ``model_loading`` takes are the weight bytes over the rate the storage delivers
them, and that rate is a property of the machine and of its page cache, not of the model: the
reference study loaded most models at about 0.55 GB/s and the two granite4.0-h models, whose
files were cached, at 7.9 GB/s. A line on the weight bytes alone takes a cached model for an
architecture effect (granite4.0-h-32b: 143 s predicted, 28.6 s measured). So a boot carries
its measured load bandwidth (``ModelFeatures.load_bandwidth``, bytes per second), and the
fit may choose the feature ``weight_bytes_over_load_bandwidth``: the seconds the weights take
at that bandwidth (``analysis.fit.selection.CANDIDATE_FEATURES``).

Where the bandwidth of a boot comes from:

- this suite's boots: ``BootResult.evidence.weights.load_gbps``, the weight files'
  bytes over the traced weight-loading seconds (``harness.interpret``);
- the study's boots (and any boot without that evidence): the model's weight bytes (the
  log's "Model loading took X GiB") over the boot's ``model_loading.load_weights`` seconds
  (the log's "Loading weights took X seconds").

A row of several boots takes their median. At prediction time the bandwidth is the operator's
storage (``analysis.predict --load-gbps``), by default the training boots' median
(``training_bandwidth``, written into the predictor file).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from analysis.features.model_features import ModelFeatures, feature_parts
from analysis.predictor_file import LoadBandwidth, PredictorGroup
from document.errors import InputError

__all__ = ["LOAD_BANDWIDTH_FEATURE", "boot_load_bandwidth", "predicted_storage",
           "row_load_bandwidth", "training_bandwidth", "uses_load_bandwidth",
           "with_load_bandwidth"]

LOAD_BANDWIDTH_FEATURE = "weight_bytes_over_load_bandwidth"


def boot_load_bandwidth(boot: Any, weight_bytes: int | None) -> float | None:
    """Bytes per second one boot (a ``BootResult``) loaded its weights at; None: unknown."""
    gbps = boot.evidence.weights.load_gbps if boot.evidence.weights else None
    if isinstance(gbps, (int, float)) and gbps > 0:
        return float(gbps) * 1e9
    seconds = (boot.subphases or {}).get("model_loading.load_weights")
    if weight_bytes and seconds and seconds > 0:
        return weight_bytes / float(seconds)
    return None


def row_load_bandwidth(boots: Sequence[Any], features: ModelFeatures) -> ModelFeatures:
    """``features`` with the median load bandwidth of ``boots`` (unchanged when none is
    known: a bandwidth given with the features stays)."""
    known = [bw for b in boots
             if (bw := boot_load_bandwidth(b, features.weight_bytes)) is not None]
    if not known:
        return features
    return with_load_bandwidth(features, statistics.median(known))


def with_load_bandwidth(features: ModelFeatures, bandwidth: float | None) -> ModelFeatures:
    """A copy of ``features`` loading at ``bandwidth`` bytes per second."""
    return features.model_copy(update={"load_bandwidth": bandwidth})


def training_bandwidth(features: Iterable[ModelFeatures]) -> LoadBandwidth | None:
    """The training boots' load bandwidths: median, range and count (bytes per second),
    what a prediction assumes when the operator gives none; None when no boot measured one."""
    values = [f.load_bandwidth for f in features if f.load_bandwidth is not None]
    if not values:
        return None
    return LoadBandwidth.of(values)


def uses_load_bandwidth(group: PredictorGroup) -> bool:
    """Whether a predictor group (``analysis.predict``) has a fitted line on the bandwidth."""
    return any(m.status == "fit" and m.feature and "load_bandwidth" in feature_parts(m.feature)
               for m in group.phases.values())


def predicted_storage(group: PredictorGroup, features: ModelFeatures,
                      load_gbps: float | None) -> tuple[ModelFeatures, str | None]:
    """The features a prediction uses, with the storage it assumes, and the line saying so.

    ``load_gbps`` (GB/s, the operator's storage) wins; else a bandwidth the features carry
    (``--set`` or a features file); else the training boots' median (the predictor file's
    ``load_bandwidth``). None for the line when no line of ``group`` depends on storage.

    Raises
    ------
    InputError
        ``load_gbps`` is not positive, or a line needs a bandwidth and none is known.
    """
    if load_gbps is not None and not load_gbps > 0:
        raise InputError(f"--load-gbps {load_gbps}: must be > 0")
    if not uses_load_bandwidth(group):
        return features, None
    if load_gbps is not None:
        return (with_load_bandwidth(features, load_gbps * 1e9),
                f"load bandwidth: {load_gbps:g} GB/s (--load-gbps)")
    if features.load_bandwidth is not None:
        return features, (f"load bandwidth: {features.load_bandwidth / 1e9:.3g} GB/s (from "
                          "the model's features)")
    known = group.load_bandwidth
    if known is None:
        raise InputError("the model_loading line is fitted on the load bandwidth and the "
                         "predictor records none: give your storage's with --load-gbps GBPS")
    median = known.median_bytes_per_s
    return (with_load_bandwidth(features, median),
            f"load bandwidth: {median / 1e9:.3g} GB/s, the median of the {known.n} "
            f"training boots ({known.min_bytes_per_s / 1e9:.3g}-"
            f"{known.max_bytes_per_s / 1e9:.3g} GB/s); give your storage's with "
            "--load-gbps GBPS (a page cache holding the files loads far faster)")
