"""Errors of the baselines package: ``BaselineError`` and below (see ``monitor.errors``)."""

from __future__ import annotations

from monitor.errors import MedmonError


class BaselineError(MedmonError):
    """Baseline evidence that cannot be imported; the message names the file and key."""


class CanaryFormatError(BaselineError):
    """A canary file line that does not follow the canary JSONL format."""
