"""One scheduler per database: leadership by a PostgreSQL advisory lock or a file lock.

Two ``medmon serve`` processes against the same database would each fire every probe (the
scheduler's job store is not a lock). The one holding the lock schedules; any other waits as a
hot standby, polling, and takes over once the holder is gone: the operating system drops a
file lock when its process dies, and PostgreSQL drops a session's advisory lock when its
connection closes. A leader that loses its lock connection (the database restarted, or an
administrator terminated it) must stop scheduling until it holds the lock again, or two
schedulers could run at once; ``still_held`` is how the service finds out.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Protocol

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.pool import NullPool

log = logging.getLogger("medmon.leader")

LOCK_NAME = "medmon-scheduler"
# libpq settings so a leader cut off by the network notices within seconds, not hours.
_PG_CONNECT = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}


class Leadership(Protocol):
    """A lock that at most one process holds at a time."""

    description: str

    def try_acquire(self) -> bool:
        """Take the lock if it is free; never blocks for long."""

    def still_held(self) -> bool:
        """Whether the lock is still ours (False once lost; then ``try_acquire`` again)."""

    def release(self) -> None:
        """Give the lock up (idempotent)."""


def advisory_key(name: str = LOCK_NAME) -> int:
    """A stable signed 64-bit key for ``pg_try_advisory_lock``."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class FileLeadership:
    """An exclusive ``flock`` on a file beside the SQLite database (local filesystems only)."""

    def __init__(self, path: Path, identity: str = "") -> None:
        self.path = path
        self.identity = identity
        self.description = f"file lock {path}"
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{self.identity}\n".encode())  # who leads, for an operator reading the file
        self._fd = fd
        return True

    def still_held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class PostgresLeadership:
    """A session-level advisory lock held on a dedicated connection for as long as we lead."""

    def __init__(self, url: str, name: str = LOCK_NAME) -> None:
        self.key = advisory_key(name)
        self._engine = create_engine(url, poolclass=NullPool, connect_args=_PG_CONNECT)
        self.description = f"advisory lock {self.key} on {make_url(url).render_as_string(hide_password=True)}"
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def try_acquire(self) -> bool:
        with self._lock:
            if self._conn is not None:
                return True
            try:
                conn = self._engine.connect()
                got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key}).scalar())
                conn.commit()
            except Exception as exc:  # database unreachable: stay a standby and poll again
                log.debug("cannot reach the database for the leader lock: %s", exc)
                return False
            if not got:
                conn.close()
                return False
            self._conn = conn
            return True

    def still_held(self) -> bool:
        with self._lock:
            if self._conn is None:
                return False
            try:
                self._conn.execute(text("SELECT 1")).scalar()
                self._conn.commit()
                return True
            except Exception as exc:
                log.warning("lost the leader lock connection: %s", exc)
                self._drop()
                return False

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.invalidate()
                conn.close()
            except Exception:  # closing a dead connection can fail; it is gone either way
                log.debug("closing the lost lock connection failed", exc_info=True)

    def release(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
                    self._conn.commit()
                    self._conn.close()
                except Exception:  # the session is ending anyway, which releases the lock
                    log.debug("unlock failed", exc_info=True)
                self._conn = None
        self._engine.dispose()


class LocalLeadership:
    """In-memory SQLite has one process by definition: always the leader."""

    description = "in-memory database (no lock needed)"

    def try_acquire(self) -> bool:
        return True

    def still_held(self) -> bool:
        return True

    def release(self) -> None:
        return None


def leadership_for(url: str, identity: str = "") -> Leadership:
    """The right lock for a database URL: advisory lock on PostgreSQL, ``<db>.lock`` for SQLite."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        return PostgresLeadership(parsed.render_as_string(hide_password=False))
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:"):
            return LocalLeadership()
        return FileLeadership(Path(f"{database}.lock"), identity)
    raise ValueError(f"no leader lock for database backend {parsed.get_backend_name()!r}")
