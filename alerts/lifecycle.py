"""Alert lifecycle: fire, refresh, resolve, acknowledge; every change writes its outbox rows.

Transitions and notifications are written in the caller's transaction, so an alert change and
the notifications it owes are stored together or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from alerts.models import Alert, AlertEvent, AlertStatus, Notification, NotificationStatus
from alerts.signal import Signal

OPEN = (AlertStatus.firing, AlertStatus.acknowledged, AlertStatus.silenced)


def _transition(session: Session, alert: Alert, to: AlertStatus, now: datetime, actor: str, note: str = "") -> None:
    assert alert.id is not None
    session.add(AlertEvent(alert_id=alert.id, at=now, actor=actor, from_status=alert.status.value,
                           to_status=to.value, note=note))
    alert.status = to


def notification_body(alert: Alert, event: str, now: datetime) -> dict[str, Any]:
    """The channel-neutral notification content; channels render it their own way."""
    return {
        "event": event,
        "status": "resolved" if alert.status == AlertStatus.resolved else "firing",
        "fingerprint": alert.fingerprint,
        "labels": alert.labels,
        "severity": alert.severity.value,
        "summary": alert.summary,
        "task": alert.task_id,
        "category": alert.category,
        "owner": alert.owner,
        "evidence": alert.evidence,
        "dashboard_url": alert.dashboard_url,
        "starts_at": alert.starts_at.isoformat(),
        "ends_at": alert.ends_at.isoformat() if alert.ends_at else None,
        "sent_at": now.isoformat(),
    }


def enqueue(session: Session, alert: Alert, event: str, routes: Sequence[str], now: datetime) -> list[Notification]:
    """Write one outbox row per route; the idempotency key makes re-sends safe for receivers."""
    assert alert.id is not None
    rows = []
    for route in routes:
        key = f"{alert.fingerprint}:{event}:{route}:{now.timestamp():.6f}"
        row = Notification(alert_id=alert.id, route=route, idempotency_key=key, event=event,
                           payload=notification_body(alert, event, now), next_attempt_at=now, created_at=now)
        session.add(row)
        rows.append(row)
    alert.last_notified_at = now
    return rows


def apply_signal(session: Session, signal: Signal, routes: Sequence[str], now: datetime) -> Alert | None:
    """Create, refresh or resolve the alert a signal identifies; returns it (None if nothing to do)."""
    alert = session.exec(select(Alert).where(Alert.fingerprint == signal.fingerprint)).first()
    if signal.firing:
        if alert is None or alert.status == AlertStatus.resolved:
            if alert is None:
                alert = Alert(fingerprint=signal.fingerprint, labels=signal.labels, task_id=signal.labels.get("task", ""),
                              rule=signal.labels.get("rule", ""), status=AlertStatus.firing)
                session.add(alert)
                session.flush()
                session.add(AlertEvent(alert_id=alert.id, at=now, actor="medmon", from_status=None,
                                       to_status=AlertStatus.firing.value, note=signal.summary))
            else:
                _transition(session, alert, AlertStatus.firing, now, "medmon", signal.summary)
            alert.starts_at, alert.ends_at = now, None
            alert.acknowledged_by = alert.acknowledged_at = alert.ack_note = None
            alert.resolved_by = alert.resolve_reason = None
            _update(alert, signal, now)
            enqueue(session, alert, "firing", routes, now)
        else:
            _update(alert, signal, now)
        session.add(alert)
        return alert
    if alert is None or alert.status == AlertStatus.resolved:
        return None
    alert.ends_at = now
    alert.resolve_reason = signal.summary or "stream recovered"
    _transition(session, alert, AlertStatus.resolved, now, "medmon", alert.resolve_reason)
    enqueue(session, alert, "resolved", routes, now)
    session.add(alert)
    return alert


def _update(alert: Alert, signal: Signal, now: datetime) -> None:
    alert.severity = signal.severity
    alert.summary = signal.summary
    alert.owner = signal.owner
    alert.category = signal.category
    alert.dashboard_url = signal.dashboard_url
    alert.evidence = signal.evidence
    alert.last_seen_at = now


def renotify_due(session: Session, routes: Sequence[str], repeat: timedelta, now: datetime) -> int:
    """Re-send firing, unacknowledged alerts whose last notification is older than ``repeat``."""
    count = 0
    for alert in session.exec(select(Alert).where(Alert.status == AlertStatus.firing)).all():
        last = alert.last_notified_at
        if last is not None and (last if last.tzinfo else last.replace(tzinfo=now.tzinfo)) + repeat <= now:
            enqueue(session, alert, "repeat", routes, now)
            session.add(alert)
            count += 1
    return count


def acknowledge(session: Session, alert_id: int, actor: str, note: str, now: datetime) -> Alert:
    """A person takes ownership of a firing alert; repeats stop until it fires anew."""
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise LookupError(f"no alert with id {alert_id}")
    if alert.status != AlertStatus.firing:
        raise ValueError(f"alert {alert_id} is {alert.status.value}, only a firing alert can be acknowledged")
    alert.acknowledged_by, alert.acknowledged_at, alert.ack_note = actor, now, note
    _transition(session, alert, AlertStatus.acknowledged, now, actor, note)
    session.add(alert)
    return alert


def resolve(session: Session, alert_id: int, actor: str, reason: str, routes: Sequence[str], now: datetime) -> Alert:
    """A person resolves an open alert with a reason; receivers are told."""
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise LookupError(f"no alert with id {alert_id}")
    if alert.status == AlertStatus.resolved:
        raise ValueError(f"alert {alert_id} is already resolved")
    if not reason.strip():
        raise ValueError("a reason is required to resolve an alert")
    alert.ends_at, alert.resolved_by, alert.resolve_reason = now, actor, reason
    _transition(session, alert, AlertStatus.resolved, now, actor, reason)
    enqueue(session, alert, "resolved", routes, now)
    session.add(alert)
    return alert


def open_alerts(session: Session) -> list[Alert]:
    return list(session.exec(select(Alert).where(col(Alert.status).in_(OPEN)).order_by(col(Alert.starts_at).desc())).all())


def pending_count(session: Session) -> int:
    return len(session.exec(select(Notification.id).where(Notification.status == NotificationStatus.pending)).all())
