"""The lowest layer: time, the database URL, engines and sessions.

Every package's tables import their time helpers from here, so this module imports no table
module. Creating the tables needs all of them registered: that is
``medmon.monitor.storage.make_engine``, one layer up.

SQLite is the default and runs in WAL mode so the dashboard can read while the service writes;
PostgreSQL is used in production. The URL comes from the plan, or ``MEDMON_DATABASE_URL``
overrides it.

Every timestamp is UTC, by one column type: sqlmodel gives each ``datetime`` field its
``UTCDateTime`` (``timestamp with time zone`` on PostgreSQL, UTC text on SQLite), which returns
aware UTC datetimes from rows, selected columns and ``min``/``max`` alike, and refuses a naive
datetime on the way in: one is usually local time (``datetime.now()``), and storing it as UTC
would shift it silently. ``tests/test_db_time.py`` checks every table's columns.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

__all__ = ["DEFAULT_URL", "ENV_URL", "as_utc", "connect", "resolve_url", "session_scope", "utcnow"]

DEFAULT_URL = "sqlite:///medmon.db"
ENV_URL = "MEDMON_DATABASE_URL"


def utcnow() -> datetime:
    """The current time, UTC-aware (sqlmodel rejects naive datetimes here)."""
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """A datetime from outside the database (a parsed option, a scheduler's fire time) in UTC; naive means UTC."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def resolve_url(plan_url: str | None = None) -> str:
    """The database URL: ``MEDMON_DATABASE_URL`` first, then the plan's, then the default."""
    return os.environ.get(ENV_URL) or plan_url or DEFAULT_URL


def _sqlite_pragmas(dbapi_connection: Any, _record: object) -> None:  # a DB-API connection: untyped by design
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def connect(url: str | None = None) -> Engine:
    """An engine for ``url`` (resolved by :func:`resolve_url`); creates no table."""
    url = resolve_url(url)
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        Path(url.removeprefix("sqlite:///")).expanduser().parent.mkdir(parents=True, exist_ok=True)
    kwargs: dict[str, object] = {}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
    else:
        kwargs["pool_pre_ping"] = True
    engine = create_engine(url, **kwargs)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
