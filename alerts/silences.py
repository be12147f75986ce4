"""Silences: a person mutes alerts that match some labels, for a while, with a reason.

A silenced alert keeps its lifecycle (it can still resolve) but produces no notification while
the silence is active; when the silence ends, an alert that still fires is notified again at
the next pass. Creating or expiring a silence writes an ``AlertEvent`` on each open alert it
covers, so every alert's history shows who muted it, when and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session, col, select

from medmon.alerts.correlation import incident_children
from medmon.alerts.history import record_event
from medmon.alerts.matchers import Matcher
from medmon.alerts.models import Alert, AlertStatus, Incident, Silence
from medmon.alerts.signal import IDENTIFYING_LABELS, MONITOR_GROUP
from medmon.alerts.status import lifecycle_status, silence_matches
from medmon.db import as_utc


def create_silence(
    session: Session,
    matchers: Sequence[Matcher | str],
    *,
    ends_at: datetime,
    reason: str,
    created_by: str,
    now: datetime,
    starts_at: datetime | None = None,
) -> Silence:
    """Store a silence; raise ValueError for no matchers, a bad matcher, no reason or a bad window."""
    parsed = [m if isinstance(m, Matcher) else Matcher.parse(m) for m in matchers]
    if not parsed:
        raise ValueError("a silence needs at least one matcher (an empty one would mute everything)")
    if not reason.strip():
        raise ValueError("a reason is required to silence alerts")
    if not created_by.strip():
        raise ValueError("a silence must name who created it")
    start = starts_at or now
    if as_utc(ends_at) <= as_utc(start):
        raise ValueError(f"a silence must end after it starts (starts {start.isoformat()}, ends {ends_at.isoformat()})")
    row = Silence(
        matchers=[m.to_dict() for m in parsed],
        starts_at=start,
        ends_at=ends_at,
        reason=reason.strip(),
        created_by=created_by,
        created_at=now,
    )
    session.add(row)
    session.flush()
    matched = ", ".join(str(m) for m in parsed)
    for alert in _open(session):
        if silence_matches(row, alert):
            record_event(
                session,
                alert,
                AlertStatus.silenced,
                now,
                created_by,
                f"silence {row.id} until {ends_at.isoformat()} ({matched}): {row.reason}",
            )
    return row


def silence_alert(session: Session, alert_id: int, actor: str, reason: str, until: datetime, now: datetime) -> Silence:
    """Silence one alert (its identifying labels, by equality) until ``until``."""
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise LookupError(f"no alert with id {alert_id}")
    if alert.ends_at is not None:
        raise ValueError(f"alert {alert_id} is resolved; there is nothing to silence")
    matchers = [Matcher.parse(f"{k}={alert.labels.get(k, '')}") for k in IDENTIFYING_LABELS]
    return create_silence(session, matchers, ends_at=until, reason=reason, created_by=actor, now=now)


def _incident_matchers(incident: Incident) -> list[Matcher]:
    task = "" if incident.task_id == MONITOR_GROUP else incident.task_id
    return [
        Matcher.parse(f"{k}={v}")
        for k, v in (("deployment", incident.deployment), ("task", task), ("cause", incident.cause))
    ]


def silence_incident(
    session: Session, incident_id: int, actor: str, reason: str, until: datetime, now: datetime
) -> dict[int, Silence]:
    """Silence one incident (its deployment, task and cause, by equality) and its family until ``until``.

    The silence covers every member, and members that join the incident while it lasts. A model
    change's open children (``medmon.alerts.correlation``) are silenced with it, each by a silence
    of its own with the same end and the reason ``with incident #N: ...``; a child that opens while
    the parent's silence lasts inherits it (``inherit_silence``). Returns each silenced incident's
    id and its silence, the incident's first.
    """
    incident = session.get(Incident, incident_id)
    if incident is None:
        raise LookupError(f"no incident with id {incident_id}")
    if incident.closed_at is not None:
        raise ValueError(f"incident {incident_id} is resolved; there is nothing to silence")
    out = {
        incident_id: create_silence(
            session, _incident_matchers(incident), ends_at=until, reason=reason, created_by=actor, now=now
        )
    }
    why = f"with incident #{incident_id}: {reason.strip()}"
    for child in incident_children(session, incident_id):
        if child.closed_at is None and child.id is not None:
            out[child.id] = create_silence(
                session, _incident_matchers(child), ends_at=until, reason=why, created_by=actor, now=now
            )
    return out


def inherit_silence(session: Session, parent: Incident, child: Incident, now: datetime) -> Silence | None:
    """Silence a new child of ``parent`` as long as the parent's own silence lasts (None: it has none).

    Silencing a model change silences what follows it: on-call muted the family, not one task.
    """
    own = [m.to_dict() for m in _incident_matchers(parent)]
    found = next((s for s in active_silences(session, now) if s.matchers == own), None)
    if found is None:
        return None
    reason = f"with incident #{parent.id}: {found.reason}"
    return create_silence(
        session, _incident_matchers(child), ends_at=found.ends_at, reason=reason, created_by=found.created_by, now=now
    )


def expire_silence(session: Session, silence_id: int, actor: str, now: datetime) -> Silence:
    """End a silence now; alerts it muted that still fire are notified at the next pass."""
    row = session.get(Silence, silence_id)
    if row is None:
        raise LookupError(f"no silence with id {silence_id}")
    if row.ends_at <= now:
        raise ValueError(f"silence {silence_id} already ended at {row.ends_at.isoformat()}")
    row.ends_at, row.expired_by = now, actor
    session.add(row)
    for alert in _open(session):
        if silence_matches(row, alert):
            record_event(
                session,
                alert,
                lifecycle_status(alert),
                now,
                actor,
                f"silence {silence_id} expired early",
                from_status=AlertStatus.silenced,
            )
    return row


def _open(session: Session) -> list[Alert]:
    return list(session.exec(select(Alert).where(col(Alert.ends_at).is_(None))).all())


def active_silences(session: Session, now: datetime) -> list[Silence]:
    """Silences in force at ``now``, ending soonest first."""
    return list(
        session.exec(
            select(Silence)
            .where(col(Silence.starts_at) <= now, col(Silence.ends_at) > now)
            .order_by(col(Silence.ends_at))
        ).all()
    )


def list_silences(session: Session, now: datetime, *, include_ended: bool = False, limit: int = 200) -> list[Silence]:
    """Silences for the dashboard: active and pending ones, or every one with ``include_ended``."""
    query = select(Silence)
    if not include_ended:
        query = query.where(col(Silence.ends_at) > now)
    return list(session.exec(query.order_by(col(Silence.ends_at).desc()).limit(limit)).all())
