"""Timestamps are stored and read as UTC by one column type, on SQLite and PostgreSQL alike.

Code reading a timestamp back compares it with ``utcnow()`` and prints it with "UTC": it must be
aware and in UTC however it was read (a row, a selected column, an aggregate).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import DateTime, func
from sqlalchemy.engine import Engine
from sqlalchemy.exc import StatementError
from sqlmodel import Session, SQLModel, UTCDateTime, select

from medmon.alerts.models import Heartbeat
from medmon.monitor.storage import import_all_models

PARIS = timezone(timedelta(hours=1))


def test_every_timestamp_column_of_every_table_is_utc() -> None:
    import_all_models()
    columns = [
        c
        for t in SQLModel.metadata.tables.values()
        for c in t.columns
        if isinstance(c.type, DateTime) or isinstance(getattr(c.type, "impl", None), DateTime)
    ]
    assert len(columns) > 50
    naive = [f"{c.table.name}.{c.name}" for c in columns if not isinstance(c.type, UTCDateTime)]
    assert naive == [], f"timestamp columns not stored as UTC: {naive}"


def test_an_aware_time_comes_back_the_same_instant_in_utc(engine: Engine) -> None:
    at = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=PARIS)
    with Session(engine) as s:
        s.add(Heartbeat(name="monitor", since=at, beat_at=at + timedelta(minutes=5)))
        s.commit()
    with Session(engine) as s:
        row = s.exec(select(Heartbeat)).one()
        assert row.since == at and row.since.tzinfo == UTC
        assert row.since.isoformat() == "2026-03-01T08:30:15.123456+00:00"
        since, beat_at = s.execute(select(Heartbeat.since, Heartbeat.beat_at)).one()
        assert (since.tzinfo, beat_at.tzinfo) == (UTC, UTC)
        assert beat_at - since == timedelta(minutes=5)


def test_max_and_min_over_a_timestamp_are_aware(engine: Engine) -> None:
    start = datetime(2026, 3, 1, tzinfo=UTC)
    with Session(engine) as s:
        for i in range(3):
            s.add(Heartbeat(name=f"m{i}", since=start, beat_at=start + timedelta(hours=i)))
        s.commit()
    with Session(engine) as s:
        latest, earliest = s.exec(select(func.max(Heartbeat.beat_at), func.min(Heartbeat.beat_at))).one()
    assert latest == start + timedelta(hours=2) and latest.tzinfo == UTC
    assert earliest == start and earliest.tzinfo == UTC


def test_a_naive_time_is_refused_not_guessed(engine: Engine) -> None:
    """A naive datetime is usually local time (``datetime.now()``): storing it as UTC would shift it silently."""
    with Session(engine) as s:
        s.add(Heartbeat(name="monitor", since=datetime(2026, 3, 1, 9, 30), beat_at=datetime(2026, 3, 1, 9, 35)))
        with pytest.raises(StatementError, match="timezone"):
            s.commit()
    with Session(engine) as s:
        with pytest.raises(StatementError, match="timezone"):
            s.exec(select(Heartbeat).where(Heartbeat.beat_at > datetime(2026, 3, 1))).all()
