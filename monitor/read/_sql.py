"""Small SQL building blocks shared by the read modules: day buckets, intervals, windows.

Everything here builds expressions for the database to evaluate; nothing loads rows to
aggregate them in Python.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import Date, cast
from sqlmodel import Session, col, func, select

from medmon.baselines.interval import wilson_interval
from medmon.probes.models import ProbeRun


def dialect(session: Session) -> str:
    """The database's dialect name (``sqlite`` or ``postgresql``)."""
    return session.get_bind().dialect.name


def day_of(session: Session, column: Any) -> Any:
    """An expression for the UTC calendar day of a timestamp column.

    SQLite stores UTC text, so ``date()`` is exact; PostgreSQL converts a ``timestamptz`` with
    the session time zone, so the value is moved to UTC before the cast.
    """
    if dialect(session) == "postgresql":
        return cast(func.timezone("UTC", column), Date)
    return func.date(column)


def as_day(value: object) -> date:
    """A day bucket as a ``date`` (SQLite answers text, PostgreSQL a date)."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def wilson_interval_of_mean(mean: float | None, n: int) -> tuple[float | None, float | None]:
    """95% Wilson interval from a mean of ``n`` scores in [0, 1] alone (no spread needed).

    A bounded score's variance is at most ``p (1 - p)``, so the Wilson interval (exact in form
    for pass/fail scores) is conservative for graded ones and does not collapse to a point when
    every answer in a small run scored 1.
    """
    if mean is None or n <= 0:
        return None, None
    lo, hi = wilson_interval(min(max(mean, 0.0), 1.0), n)
    return lo, hi


def latest_runs(task_id: str, limit: int, *, since: datetime | None = None, until: datetime | None = None) -> Any:
    """A subquery of the ids of a task's latest ``limit`` runs (any purpose), started between
    ``since`` and ``until`` when given."""
    query = select(ProbeRun.id).where(ProbeRun.task_id == task_id)
    if since is not None:
        query = query.where(col(ProbeRun.started_at) >= since)
    if until is not None:
        query = query.where(col(ProbeRun.started_at) <= until)
    return query.order_by(col(ProbeRun.id).desc()).limit(limit).scalar_subquery()


def safe_float(value: Any) -> float | None:  # a database scalar: a number, a Decimal or NULL
    return None if value is None else float(value)
