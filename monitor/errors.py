"""Errors raised by the monitor; their root, ``MedmonError``, is in ``medmon.errors``.

Tree::

    MedmonError (medmon.errors)
    ├── PlanError            a plan file that cannot be loaded or is invalid
    ├── StorageError         the database cannot be reached or written (medmon.errors)
    └── GovernanceError      a governance action refused (e.g. approval by a non-owner)
"""

from __future__ import annotations

from dataclasses import dataclass

from medmon.errors import MedmonError, StorageError

__all__ = ["GovernanceError", "MedmonError", "PlanError", "PlanIssue", "StorageError"]


@dataclass(frozen=True)
class PlanIssue:
    """One problem in a plan file, located by field path and line."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"


class PlanError(MedmonError):
    """A plan file that cannot be used; carries every issue found, not just the first."""

    def __init__(self, source: str, issues: list[PlanIssue]) -> None:
        self.source = source
        self.issues = issues
        lines = "\n".join(f"  {i}" for i in issues)
        super().__init__(f"{source}: {len(issues)} problem(s)\n{lines}")


class GovernanceError(MedmonError):
    """A governance action that is refused: it names what is missing or who may act instead."""
