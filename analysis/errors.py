"""Errors the analysis modules raise for input a user can fix, apart from the CLI that reports
them (``analysis._cli`` catches them; the modules that raise them need not import it)."""

from __future__ import annotations

__all__ = ["FeatureError"]


class FeatureError(ValueError):
    """A model folder or feature file that cannot give the features asked for."""
