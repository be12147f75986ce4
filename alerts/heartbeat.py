"""The monitor's own pulse, so that a monitor that stopped is itself an alert.

The scheduler calls ``beat`` on every alert pass. Before beating it reads ``last_beat`` and
hands it to ``medmon.alerts.rules.heartbeat_missed``: after a restart the gap is reported as an alert
(scheduled probes did not run meanwhile), which clears at the next pass. A process that never
comes back cannot report itself; point an external check (the service's health endpoint or an
Alertmanager dead man's switch) at it for that.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlmodel import Session

from medmon.alerts.models import Heartbeat


def last_beat(session: Session, name: str) -> Heartbeat | None:
    """The named heartbeat, or None if it never beat."""
    return session.get(Heartbeat, name)


def beat(session: Session, name: str, now: datetime, *, tolerance: timedelta) -> Heartbeat:
    """Record a beat; a gap longer than ``tolerance`` starts a new unbroken run (``since``)."""
    row = session.get(Heartbeat, name)
    if row is None:
        row = Heartbeat(name=name, since=now, beat_at=now)
    elif now - row.beat_at > tolerance:
        row.since = now
    row.beat_at = now
    session.add(row)
    return row
