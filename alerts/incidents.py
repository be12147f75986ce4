"""Incidents: the alerts about one task and one cause, grouped so people act on a problem once.

An alert (one rule on one stream) joins the open incident of its task and cause, or opens one;
when its last open member resolves the incident closes. People acknowledge, resolve or silence
the incident, which acts on every member (``medmon.alerts.acknowledge_incident``,
``resolve_incident``, ``silence_incident``); receivers get one notification per incident
listing its members (the notification group is the incident's key).

The API other parts of medmon build on (safety events, reports, the dashboard):

- ``Incident``: the table; ``id`` is stable for the life of one incident, ``key`` is
  ``deployment/task/cause`` and repeats when the same problem comes back later;
- ``get_incident(session, id)`` and ``open_incidents(session)`` / ``list_incidents(session, ...)``;
- ``incident_members(session, id)``: its alerts, most serious first;
- ``incident_status(incident, members, silences, now)``: firing, acknowledged, silenced or resolved;
- ``incident_body(incident, members)``: the channel-neutral description receivers get.

Acknowledging an incident covers the members that join it later, until it closes: the owner
already holds the problem, and a new member is more evidence, not a new page.

Correlation: signals about one task that fire at the same moment (within ``MOMENT``: one probe
run's evaluation) are one problem seen by several rules, such as a longer answer that also costs
more. An alert whose cause has no open incident joins the task's incident opened in that moment
instead of opening its own, and takes the incident's key as its notification group, so on-call
gets one page and one timeline for it. Causes that follow one another (``RELATED``: longer answers
cost more and take longer) join the task's open incident of another while it is open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from medmon.alerts.catalogue import cause_of
from medmon.alerts.causes import RUNBOOKS, TITLES
from medmon.alerts.history import record_event
from medmon.alerts.models import Alert, AlertStatus, Incident, Severity, Silence
from medmon.alerts.signal import MONITOR_GROUP
from medmon.alerts.status import lifecycle_status, silenced_by, sync_status
from medmon.db import as_utc

_RANK = {Severity.critical: 0, Severity.warning: 1, Severity.info: 2}
MOMENT = timedelta(seconds=2)  # signals of one task this close together come from one evaluation
# One problem seen as several causes: answers that grow longer cost more and take longer, so a rise of
# any of the three joins the task's open incident of another (one page, one timeline).
RELATED: dict[str, tuple[str, ...]] = {
    "output": ("cost", "latency"),
    "cost": ("output", "latency"),
    "latency": ("output", "cost"),
}


def _lead_order(a: Alert) -> tuple[int, int, datetime, int]:
    return (_RANK[a.severity], lifecycle_status(a) is AlertStatus.resolved, a.starts_at, a.id or 0)


def attach(session: Session, alerts: Iterable[Alert | None], now: datetime) -> set[int]:
    """Put each open alert that has no open incident into its task's open incident for its cause.

    Opens the incident when there is none. Returns the ids of every incident the alerts belong
    to (so the caller refreshes them all, including those a resolved alert left).
    """
    touched: set[int] = set()
    pending = [a for a in alerts if a is not None]
    if not pending:
        return touched
    current = {
        i.id: i
        for i in session.exec(
            select(Incident).where(col(Incident.id).in_({a.incident_id for a in pending if a.incident_id is not None}))
        ).all()
    }
    by_key: dict[str, Incident] = {}
    for alert in pending:
        inc = current.get(alert.incident_id) if alert.incident_id is not None else None
        if alert.ends_at is None and (inc is None or inc.closed_at is not None):
            inc = by_key.get(alert.group_key) or _open_for(session, alert, now)
            by_key[alert.group_key] = inc
            alert.incident_id = inc.id
            session.add(alert)
        if alert.ends_at is None and inc is not None and inc.closed_at is None and alert.group_key != inc.key:
            alert.group_key = inc.key  # notified with its incident: one page per problem
            session.add(alert)
        if alert.incident_id is not None:
            touched.add(alert.incident_id)
    return touched


def _open_for(session: Session, alert: Alert, now: datetime) -> Incident:
    found = session.exec(
        select(Incident)
        .where(Incident.key == alert.group_key, col(Incident.closed_at).is_(None))
        .order_by(col(Incident.id).desc())
    ).first()
    if found is not None:
        return found
    labels = alert.labels
    task = labels.get("task") or ""
    cause = cause_of(labels).value
    if task:
        same_task = session.exec(
            select(Incident)
            .where(
                Incident.task_id == task,
                Incident.deployment == labels.get("deployment", ""),
                col(Incident.closed_at).is_(None),
            )
            .order_by(col(Incident.id))
        ).all()
        joined = next((i for i in same_task if as_utc(i.opened_at) >= as_utc(now) - MOMENT), None) or next(
            (i for i in same_task if i.cause in RELATED.get(cause, ())), None
        )
        if joined is not None:
            return joined
    inc = Incident(
        key=alert.group_key,
        deployment=labels.get("deployment", ""),
        task_id=task or MONITOR_GROUP,
        cause=cause,
        severity=alert.severity,
        summary=alert.summary,
        owner=alert.owner,
        category=alert.category,
        dashboard_url=alert.dashboard_url,
        opened_at=now,
        last_seen_at=now,
    )
    session.add(inc)
    session.flush()
    return inc


def refresh(session: Session, incident_ids: Iterable[int], now: datetime) -> list[Incident]:
    """Bring each incident up to date with its members: lead, severity, acknowledgement, closing.

    An acknowledged incident acknowledges members that joined it since (their history says
    so); an incident whose members have all resolved closes, with the reason of the last one.
    """
    out = []
    for inc in session.exec(select(Incident).where(col(Incident.id).in_(sorted(set(incident_ids))))).all():
        if inc.closed_at is not None:
            continue
        members = incident_members(session, inc.id or 0)
        live = [a for a in members if a.ends_at is None]
        if not live:
            last = max(members, key=lambda a: (a.ends_at or now, a.id or 0)) if members else None
            inc.closed_at = now
            inc.resolved_by = inc.resolved_by or (last.resolved_by if last else "medmon")
            inc.resolve_reason = inc.resolve_reason or (last.resolve_reason if last else "no open member")
        else:
            if inc.acknowledged_at is not None:
                for a in live:
                    if a.acknowledged_at is None:
                        a.acknowledged_by, a.acknowledged_at = inc.acknowledged_by, now
                        a.ack_note = f"covered by incident #{inc.id}: {inc.ack_note or ''}".rstrip(": ")
                        record_event(session, a, AlertStatus.acknowledged, now, "medmon", a.ack_note)
                        sync_status(a)
                        session.add(a)
            elif all(a.acknowledged_at is not None for a in live):
                first = min(live, key=lambda a: a.acknowledged_at or now)
                inc.acknowledged_by, inc.acknowledged_at, inc.ack_note = (
                    first.acknowledged_by,
                    first.acknowledged_at,
                    first.ack_note,
                )
            lead = live[0]
            inc.severity, inc.summary = lead.severity, lead.summary
            inc.owner, inc.category, inc.dashboard_url = lead.owner, lead.category, lead.dashboard_url
            inc.last_seen_at = max(a.last_seen_at for a in live)
        session.add(inc)
        out.append(inc)
    return out


def get_incident(session: Session, incident_id: int) -> Incident:
    """The incident with ``incident_id``; LookupError if there is none."""
    inc = session.get(Incident, incident_id)
    if inc is None:
        raise LookupError(f"no incident with id {incident_id}")
    return inc


def incident_members(session: Session, incident_id: int) -> list[Alert]:
    """The incident's alerts, most serious first (open before resolved, then oldest first)."""
    rows = session.exec(select(Alert).where(Alert.incident_id == incident_id)).all()
    return sorted(rows, key=_lead_order)


def open_incidents(session: Session) -> list[Incident]:
    """Incidents not yet closed, most serious first, then newest first."""
    rows = session.exec(select(Incident).where(col(Incident.closed_at).is_(None))).all()
    return sorted(rows, key=lambda i: (_RANK[i.severity], -i.opened_at.timestamp(), -(i.id or 0)))


def list_incidents(session: Session, *, task_id: str | None = None, limit: int = 200) -> list[Incident]:
    """Incidents (of one task, when given), newest first."""
    query = select(Incident)
    if task_id is not None:
        query = query.where(Incident.task_id == task_id)
    return list(
        session.exec(query.order_by(col(Incident.opened_at).desc(), col(Incident.id).desc()).limit(limit)).all()
    )


def incident_status(
    incident: Incident, members: Sequence[Alert], silences: Sequence[Silence], now: datetime
) -> AlertStatus:
    """resolved once closed; silenced when every open member is; acknowledged; firing otherwise."""
    if incident.closed_at is not None:
        return AlertStatus.resolved
    live = [a for a in members if a.ends_at is None]
    if live and all(silenced_by(a, silences, now) is not None for a in live):
        return AlertStatus.silenced
    if incident.acknowledged_at is not None or (live and all(a.acknowledged_at is not None for a in live)):
        return AlertStatus.acknowledged
    return AlertStatus.firing


def incident_causes(incident: Incident, members: Sequence[Alert] = ()) -> list[str]:
    """The incident's cause first, then the causes of members that joined it at the same moment."""
    out = [incident.cause]
    for a in sorted(members, key=_lead_order):
        cause = cause_of(a.labels).value
        if cause not in out:
            out.append(cause)
    return out


def incident_title(incident: Incident, members: Sequence[Alert] = ()) -> str:
    """``knowledge-qa: accuracy``: the task and what went wrong, as people say it (every cause, with ``members``)."""
    what = ", ".join(TITLES.get(c, c) for c in incident_causes(incident, members))
    task = "the monitor" if incident.task_id == MONITOR_GROUP else incident.task_id
    return f"{task}: {what}"


def incident_runbook(incident: Incident, members: Sequence[Alert] = ()) -> str:
    """What to do first about an incident of this kind (and of each cause that joined it)."""
    return "\n\n".join(RUNBOOKS[c] for c in incident_causes(incident, members) if c in RUNBOOKS)


def incident_body(incident: Incident, members: Sequence[Alert]) -> dict[str, Any]:
    """The incident as receivers get it beside its member alerts: what, whose, how bad, what to do."""
    live = [a for a in members if a.ends_at is None]
    return {
        "id": incident.id,
        "key": incident.key,
        "title": incident_title(incident, members),
        "cause": incident.cause,
        "causes": incident_causes(incident, members),
        "task": incident.task_id,
        "severity": incident.severity.value,
        "status": (
            "resolved"
            if incident.closed_at is not None
            else "acknowledged"
            if incident.acknowledged_at is not None
            else "firing"
        ),
        "summary": incident.summary,
        "owner": incident.owner,
        "dashboard_url": incident.dashboard_url,
        "opened_at": incident.opened_at.isoformat(),
        "closed_at": incident.closed_at.isoformat() if incident.closed_at else None,
        "acknowledged_by": incident.acknowledged_by,
        "ack_note": incident.ack_note,
        "resolved_by": incident.resolved_by,
        "resolve_reason": incident.resolve_reason,
        "open_members": len(live),
        "members": len(members),
        "runbook": incident_runbook(incident, members),
    }
