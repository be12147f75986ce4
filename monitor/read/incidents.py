"""Incidents as people look at them: what went wrong, how bad, whose, since when, what to do, the
signals that are its evidence, the model change it followed or the incidents that followed it
(``medmon.alerts.correlation``), and its timeline: every signal's transitions, the children's too,
in time order."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session

from medmon.alerts import (
    Incident,
    Silence,
    active_silences,
    alert_history,
    incident_members,
    incident_runbook,
    incident_status,
    incident_title,
    list_incidents,
    open_incidents,
)
from medmon.alerts.correlation import incident_children
from medmon.alerts.status import silenced_by, status_of


@dataclass(frozen=True)
class IncidentSignal:
    """One member alert: which rule saw the problem, and what it said."""

    alert_id: int
    rule: str
    metric: str
    status: str
    severity: str
    summary: str
    since: datetime | None


@dataclass(frozen=True)
class TimelineEntry:
    """One moment of an incident's history: a signal fired, was acknowledged or resolved (by whom,
    why), or an incident that followed the change opened; ``incident`` says whose (parent or child)."""

    at: datetime
    incident: int
    task: str
    what: str  # firing | acknowledged | resolved | opened
    rule: str
    actor: str
    note: str


@dataclass(frozen=True)
class IncidentView:
    id: int
    title: str
    cause: str
    task: str
    severity: str
    status: str
    summary: str
    owner: str
    opened_at: datetime | None
    last_seen: datetime | None
    closed_at: datetime | None
    acknowledged_by: str | None
    ack_note: str | None
    resolved_by: str | None
    resolve_reason: str | None
    silenced_until: datetime | None
    runbook: str
    signals: tuple[IncidentSignal, ...]
    parent_id: int | None = None  # the model change this incident followed
    children: tuple[int, ...] = ()  # the incidents that followed this model change, oldest first
    timeline: tuple[TimelineEntry, ...] = ()

    @property
    def open(self) -> bool:
        return self.closed_at is None


def _view(session: Session, inc: Incident, now: datetime, silences: list[Silence]) -> IncidentView:
    members = incident_members(session, inc.id or 0)
    children = incident_children(session, inc.id or 0)
    live = [a for a in members if a.ends_at is None]
    muted = [silenced_by(a, silences, now) for a in live]
    until = min((s.ends_at for s in muted if s is not None), default=None) if muted and all(muted) else None
    signals = tuple(
        IncidentSignal(
            a.id or 0,
            a.rule,
            a.labels.get("metric", ""),
            status_of(a, silences, now).value,
            a.severity.value,
            a.summary,
            a.starts_at,
        )
        for a in members
    )
    return IncidentView(
        inc.id or 0,
        incident_title(inc, members),
        inc.cause,
        inc.task_id,
        inc.severity.value,
        incident_status(inc, members, silences, now).value,
        inc.summary,
        inc.owner,
        inc.opened_at,
        inc.last_seen_at,
        inc.closed_at,
        inc.acknowledged_by,
        inc.ack_note,
        inc.resolved_by,
        inc.resolve_reason,
        until,
        incident_runbook(inc),
        signals,
        inc.parent_id,
        tuple(c.id or 0 for c in children),
        timeline(session, inc, children),
    )


def timeline(session: Session, incident: Incident, children: list[Incident] | None = None) -> tuple[TimelineEntry, ...]:
    """The incident's history in time order: each member's transitions, and for a model change the
    opening of every incident that followed it with its members' transitions."""
    family = [incident, *(children if children is not None else incident_children(session, incident.id or 0))]
    out = [
        TimelineEntry(c.opened_at, c.id or 0, c.task_id, "opened", c.cause, "medmon", f"followed #{incident.id}")
        for c in family[1:]
    ]
    for inc in family:
        for a in incident_members(session, inc.id or 0):
            out += [
                TimelineEntry(e.at, inc.id or 0, a.task_id, e.to_status, a.rule, e.actor, e.note)
                for e in alert_history(session, a.id or 0)
            ]
    return tuple(sorted(out, key=lambda e: (e.at, e.what != "opened", e.incident)))


def open_incidents_view(session: Session, now: datetime, *, task_id: str | None = None) -> list[IncidentView]:
    """Open incidents, most serious first, then newest; of one task when ``task_id`` is given."""
    silences = active_silences(session, now)
    return [
        _view(session, i, now, silences) for i in open_incidents(session) if task_id is None or i.task_id == task_id
    ]


def past_incidents_view(
    session: Session, now: datetime, *, task_id: str | None = None, limit: int = 100
) -> list[IncidentView]:
    """Closed incidents, newest first."""
    silences = active_silences(session, now)
    rows = [i for i in list_incidents(session, task_id=task_id, limit=limit * 2) if i.closed_at is not None]
    return [_view(session, i, now, silences) for i in rows[:limit]]
