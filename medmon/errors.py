"""The root of medmon's errors, shared by every package.

Tree::

    MedmonError
    ├── StorageError                          the database cannot be reached or written
    ├── medmon.monitor.errors.PlanError       a plan file that cannot be loaded or is invalid
    ├── medmon.monitor.errors.GovernanceError a governance action refused
    ├── medmon.baselines.errors.BaselineError
    ├── medmon.probes.errors.ProbeError
    └── medmon.alerts.errors.AlertError
"""

from __future__ import annotations

__all__ = ["MedmonError", "StorageError"]


class MedmonError(Exception):
    """Base of every error medmon raises on purpose."""


class StorageError(MedmonError):
    """The database could not be reached or written."""
