"""Alerts as the dashboard shows them: open and past, their history, silences, dead letters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from medmon.alerts import Alert, AlertEvent, active_silences, alert_history, dead_letters, list_silences, status_of
from medmon.alerts.lifecycle import OPEN
from medmon.alerts.status import silenced_by

_SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


def alerts_list(session: Session, *, open_only: bool = False, limit: int = 200) -> list[Alert]:
    """Alerts, newest first; ``open_only`` keeps the unresolved ones."""
    query = select(Alert)
    if open_only:
        query = query.where(col(Alert.status).in_(OPEN))
    return list(session.exec(query.order_by(col(Alert.starts_at).desc()).limit(limit)).all())


@dataclass(frozen=True)
class OpenAlert:
    """An unresolved alert with the status a person should see (silenced when a silence covers it)."""

    id: int
    severity: str
    status: str
    task: str
    rule: str
    summary: str
    owner: str
    since: datetime | None
    last_seen: datetime | None
    acknowledged_by: str | None
    note: str | None
    silenced_until: datetime | None
    silenced_by: str | None


def open_alerts_view(session: Session, now: datetime, *, limit: int = 200) -> list[OpenAlert]:
    """Unresolved alerts, most severe first then newest; status derived from acknowledgement and
    active silences."""
    silences = active_silences(session, now)
    out = []
    for a in alerts_list(session, open_only=True, limit=limit):
        silence = silenced_by(a, silences, now)
        out.append(OpenAlert(a.id or 0, a.severity.value, status_of(a, silences, now).value, a.task_id, a.rule,
                             a.summary, a.owner, a.starts_at, a.last_seen_at, a.acknowledged_by,
                             a.ack_note, silence.ends_at if silence else None,
                             silence.created_by if silence else None))
    out.sort(key=lambda a: _SEVERITY_RANK.get(a.severity, 3))  # stable: newest first within a severity
    return out


def past_alerts(session: Session, *, limit: int = 200) -> list[Alert]:
    """Resolved alerts, most recently ended first."""
    query = select(Alert).where(col(Alert.status).not_in(OPEN))
    return list(session.exec(query.order_by(col(Alert.ends_at).desc(), col(Alert.id).desc()).limit(limit)).all())


def alert_events(session: Session, alert_id: int) -> list[AlertEvent]:
    """Every transition of one alert, oldest first, with who made it and why."""
    return alert_history(session, alert_id)


@dataclass(frozen=True)
class SilenceRow:
    """A silence in force or pending: what it mutes, until when, who set it and why."""

    id: int
    matchers: str
    starts_at: datetime | None
    ends_at: datetime | None
    created_by: str
    reason: str


def silences(session: Session, now: datetime) -> list[SilenceRow]:
    """Active and pending silences, ending soonest last."""
    return [SilenceRow(s.id or 0, ", ".join(f"{m['name']}{m['op']}{m['value']}" for m in s.matchers),
                       s.starts_at, s.ends_at, s.created_by, s.reason)
            for s in list_silences(session, now)]


@dataclass(frozen=True)
class DeadLetter:
    """A notification that could not be delivered, with the last error the channel gave."""

    id: int
    alert_id: int | None  # None: a committee report notice
    route: str
    event: str
    attempts: int
    last_error: str
    created_at: datetime | None
    summary: str


def dead_letter_list(session: Session, *, limit: int = 200) -> list[DeadLetter]:
    """Undeliverable notifications, newest first."""
    return [DeadLetter(n.id or 0, n.alert_id, n.route, n.event, n.attempts, n.last_error or "",
                       n.created_at, str((n.payload or {}).get("summary", "")))
            for n in dead_letters(session, limit=limit)]
