"""Errors the analysis modules raise for input a user can fix, apart from the CLI that reports
them (``coldstart.cli.run_cli`` catches every ``UserError``)."""

from __future__ import annotations

from coldstart.errors import UserError

__all__ = ["FeatureError"]


class FeatureError(UserError, ValueError):
    """A model folder or feature file that cannot give the features asked for."""
