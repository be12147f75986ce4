"""Alerts as the dashboard shows them: open and past, their history, undeliverable notifications."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

import alerts as alerts_pkg
from alerts import Alert, Notification, NotificationStatus
from alerts.lifecycle import OPEN
from alerts.models import AlertEvent
from monitor.read._sql import as_time


def alerts_list(session: Session, *, open_only: bool = False, limit: int = 200) -> list[Alert]:
    """Alerts, newest first; ``open_only`` keeps firing, acknowledged and silenced ones."""
    query = select(Alert)
    if open_only:
        query = query.where(col(Alert.status).in_(OPEN))
    return list(session.exec(query.order_by(col(Alert.starts_at).desc()).limit(limit)).all())


def past_alerts(session: Session, *, limit: int = 200) -> list[Alert]:
    """Resolved alerts, most recently ended first."""
    query = select(Alert).where(col(Alert.status).not_in(OPEN))
    return list(session.exec(query.order_by(col(Alert.ends_at).desc(), col(Alert.id).desc()).limit(limit)).all())


def alert_events(session: Session, alert_id: int) -> list[AlertEvent]:
    """Every transition of one alert, oldest first, with who made it and why."""
    return list(session.exec(select(AlertEvent).where(AlertEvent.alert_id == alert_id)
                             .order_by(col(AlertEvent.id))).all())


@dataclass(frozen=True)
class DeadLetter:
    """A notification that could not be delivered, with the last error the channel gave."""

    id: int
    alert_id: int
    route: str
    event: str
    attempts: int
    last_error: str
    created_at: datetime | None
    summary: str


def dead_letter_list(session: Session, *, limit: int = 200) -> list[DeadLetter]:
    """Undeliverable notifications, newest first (through ``alerts.dead_letters`` when it exists)."""
    finder = getattr(alerts_pkg, "dead_letters", None)
    if finder is not None:
        rows = list(finder(session))[:limit]
    else:
        rows = list(session.exec(select(Notification).where(Notification.status == NotificationStatus.dead)
                                 .order_by(col(Notification.id).desc()).limit(limit)).all())
    return [DeadLetter(n.id or 0, n.alert_id, n.route, n.event, n.attempts, n.last_error or "", as_time(n.created_at),
                       str((n.payload or {}).get("summary", ""))) for n in rows]
