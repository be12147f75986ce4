"""Each alert's history: every transition with its time, actor and note, oldest first."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session, col, select

from medmon.alerts.models import Alert, AlertEvent, AlertStatus


def record_event(
    session: Session,
    alert: Alert,
    to: AlertStatus,
    now: datetime,
    actor: str,
    note: str = "",
    *,
    from_status: AlertStatus | None = None,
) -> AlertEvent:
    """Append one transition; ``from_status`` defaults to the alert's stored status."""
    assert alert.id is not None, "flush the alert before recording its history"
    before = from_status if from_status is not None else alert.status
    event = AlertEvent(
        alert_id=alert.id,
        at=now,
        actor=actor,
        from_status=before.value if before else None,
        to_status=to.value,
        note=note,
    )
    session.add(event)
    return event


def alert_history(session: Session, alert_id: int) -> list[AlertEvent]:
    """Every recorded transition of one alert, oldest first."""
    return list(
        session.exec(select(AlertEvent).where(AlertEvent.alert_id == alert_id).order_by(col(AlertEvent.id))).all()
    )
