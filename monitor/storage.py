"""Database setup shared by every package: one SQLModel metadata, one engine per process edge.

SQLite is the default and runs in WAL mode so the dashboard can read while the service writes;
PostgreSQL is used in production. The URL comes from the plan, or ``MEDMON_DATABASE_URL``
overrides it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, SQLModel, create_engine

from monitor.errors import StorageError

DEFAULT_URL = "sqlite:///medmon.db"
ENV_URL = "MEDMON_DATABASE_URL"


def utcnow() -> datetime:
    """The current time, UTC-aware (sqlmodel rejects naive datetimes here)."""
    return datetime.now(timezone.utc)


def as_utc(value: datetime) -> datetime:
    """SQLite returns naive datetimes; everything medmon stores is UTC."""
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def resolve_url(plan_url: str | None = None) -> str:
    """The database URL: ``MEDMON_DATABASE_URL`` first, then the plan's, then the default."""
    return os.environ.get(ENV_URL) or plan_url or DEFAULT_URL


def _sqlite_pragmas(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def make_engine(url: str | None = None, *, create: bool = True) -> Engine:
    """Create an engine for ``url`` and, by default, every medmon table.

    Importing the table modules here keeps one metadata for the whole project while each
    package still owns its own ``models.py``.
    """
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
    if create:
        create_tables(engine)
    return engine


def create_tables(engine: Engine) -> None:
    """Create every table that does not exist yet."""
    import_all_models()
    try:
        SQLModel.metadata.create_all(engine)
    except Exception as exc:  # translated once, at the boundary
        raise StorageError(f"cannot create tables at {engine.url.render_as_string()}: {exc}") from exc


def import_all_models() -> None:
    """Register every package's tables on the shared metadata."""
    import alerts.models  # noqa: F401
    import baselines.models  # noqa: F401
    import monitor.models  # noqa: F401
    import probes.models  # noqa: F401


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
