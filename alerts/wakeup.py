"""Waking the delivery worker when a notification is written, instead of at its next tick.

The outbox is polled (every second in the service), so a finding used to wait half a tick on
average, and a whole tick at worst, before its webhook left. Now a session that writes a
notification is marked (:func:`announce`); when it commits, :data:`OUTBOX` counts one more
announcement and every waiter in the process wakes. Other processes hear of it through the
database: on PostgreSQL ``announce`` also issues ``NOTIFY medmon_outbox`` in the same
transaction (delivered only if it commits), and :class:`OutboxListener` turns each ``LISTEN``
notification into an announcement here. The tick stays as the fallback: SQLite across
processes, a dropped listener connection, a retry whose backoff has run out.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

CHANNEL = "medmon_outbox"
_MARK = "medmon.outbox_written"

__all__ = ["CHANNEL", "OUTBOX", "OutboxListener", "OutboxSignal", "announce"]


class OutboxSignal:
    """A count of committed notification writes that threads can wait on."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0

    def announce(self) -> None:
        """One more write committed: wake every waiter."""
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def count(self) -> int:
        """How many writes have been announced so far (compare two readings to see news)."""
        with self._changed:
            return self._count

    def wait_past(self, seen: int, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the count to move past ``seen``; return the count."""
        with self._changed:
            self._changed.wait_for(lambda: self._count != seen, timeout)
            return self._count


OUTBOX = OutboxSignal()


def announce(session: Session) -> None:
    """Say that ``session`` wrote a notification: delivery workers wake when it commits."""
    session.info[_MARK] = True
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text(f"NOTIFY {CHANNEL}"))  # sent by the server at commit, dropped on rollback


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    if session.info.pop(_MARK, False):
        OUTBOX.announce()


@event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_MARK, None)


class OutboxListener:
    """``LISTEN medmon_outbox`` on PostgreSQL, in a daemon thread: notifications written by other
    processes wake this one's delivery worker. Does nothing on other databases."""

    def __init__(self, engine: Engine, *, signal: OutboxSignal = OUTBOX, poll_s: float = 0.5) -> None:
        self.engine, self.signal, self.poll_s = engine, signal, poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> OutboxListener:
        if self.engine.dialect.name == "postgresql" and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="medmon-outbox-listener", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                self._listen()
                backoff = 0.5
            except Exception as exc:  # the database went away: the tick delivers until it is back
                log.warning("outbox listener lost its connection (%s); retrying in %.1fs", exc, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def _listen(self) -> None:
        raw = self.engine.raw_connection()
        conn: Any = raw.driver_connection  # psycopg's own Connection (LISTEN, notifies); the pool types it loosely
        raw.detach()  # a connection of its own for as long as it listens, never back to the pool
        try:
            conn.autocommit = True
            conn.execute(f"LISTEN {CHANNEL}")
            while not self._stop.is_set():
                for _ in conn.notifies(timeout=self.poll_s):
                    self.signal.announce()
        finally:
            raw.close()
