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

Correlation across tasks (``medmon.alerts.correlation``): an incident that opens after a model
change on the deployment is the change's child; its alerts are notified in the parent's group (one
page, the children listed under ``children``), and a parent stays open while a child is open. An
action on the parent acts on its family: acknowledging or silencing it covers its open children
and those that open later (while the acknowledgement or the silence lasts); resolving it may
resolve them (``children=True``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from medmon.alerts.catalogue import cause_of
from medmon.alerts.causes import RUNBOOKS, TITLES
from medmon.alerts.correlation import CHANGE_WINDOW, incident_children, notify_key, parent_for
from medmon.alerts.history import record_event
from medmon.alerts.models import Alert, AlertStatus, Incident, Severity, Silence
from medmon.alerts.signal import MONITOR_GROUP
from medmon.alerts.silences import inherit_silence
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


def attach(
    session: Session, alerts: Iterable[Alert | None], now: datetime, window: timedelta = CHANGE_WINDOW
) -> set[int]:
    """Put each open alert that has no open incident into its task's open incident for its cause.

    Opens the incident when there is none (the child of a model change opened within ``window``,
    ``medmon.alerts.correlation``). Returns the ids of every incident the alerts belong
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
            inc = by_key.get(alert.group_key) or _open_for(session, alert, now, window)
            by_key[alert.group_key] = current[inc.id] = inc  # the same alert may come twice (two signals)
            alert.incident_id = inc.id
            session.add(alert)
        if alert.ends_at is None and inc is not None and inc.closed_at is None:
            key = notify_key(session, inc)
            if alert.group_key != key:
                alert.group_key = key  # notified with its incident (or the change it followed): one page
                session.add(alert)
        if alert.incident_id is not None:
            touched.add(alert.incident_id)
    return touched


def _open_for(session: Session, alert: Alert, now: datetime, window: timedelta) -> Incident:
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
    parent = parent_for(session, labels.get("deployment", ""), task or MONITOR_GROUP, cause, now, window)
    inc = Incident(
        key=alert.group_key,
        parent_id=parent.id if parent is not None else None,
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
    if parent is not None and parent.acknowledged_at is not None:  # the owner already holds the change
        inc.acknowledged_by, inc.acknowledged_at = parent.acknowledged_by, now
        inc.ack_note = f"covered by incident #{parent.id}: {parent.ack_note or ''}".rstrip(": ")
    session.add(inc)
    session.flush()
    if parent is not None:  # a silenced change silences what follows it, as long as its silence lasts
        inherit_silence(session, parent, inc, now)
    return inc


def refresh(session: Session, incident_ids: Iterable[int], now: datetime) -> list[Incident]:
    """Bring each incident up to date with its members: lead, severity, acknowledgement, closing.

    An acknowledged incident acknowledges members that joined it since (their history says
    so); an incident whose members have all resolved closes, with the reason of the last one,
    unless a child of it is still open and no person resolved it. The open children of a parent
    that closes go back to their own notification group.
    """
    out: list[Incident] = []
    parents: set[int] = set()
    for inc in session.exec(select(Incident).where(col(Incident.id).in_(sorted(set(incident_ids))))).all():
        if inc.closed_at is not None:
            continue
        members = incident_members(session, inc.id or 0)
        live = [a for a in members if a.ends_at is None]
        children = [c for c in incident_children(session, inc.id or 0) if c.closed_at is None]
        if not live and children and inc.resolve_reason is None:
            pass  # the page that holds what followed the change stays up while any of it is open
        elif not live:
            last = max(members, key=lambda a: (a.ends_at or now, a.id or 0)) if members else None
            inc.closed_at = now
            inc.resolved_by = inc.resolved_by or (last.resolved_by if last else "medmon")
            inc.resolve_reason = inc.resolve_reason or (last.resolve_reason if last else "no open member")
            for child in children:
                for a in incident_members(session, child.id or 0):
                    if a.ends_at is None and a.group_key != child.key:
                        a.group_key = child.key
                        session.add(a)
            if inc.parent_id is not None:
                parents.add(inc.parent_id)  # a parent kept up by its children may close now
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
    if parents:
        session.flush()
        out += [i for i in refresh(session, parents, now) if i not in out]
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


def _status_word(incident: Incident) -> str:
    if incident.closed_at is not None:
        return "resolved"
    return "acknowledged" if incident.acknowledged_at is not None else "firing"


def incident_body(
    incident: Incident, members: Sequence[Alert], children: Sequence[tuple[Incident, Sequence[Alert]]] = ()
) -> dict[str, Any]:
    """The incident as receivers get it beside its member alerts: what, whose, how bad, what to do.

    ``parent_id`` is the model change it followed (None at the top); ``children`` lists what
    followed it on the deployment's tasks (empty when nothing did), oldest first.
    """
    live = [a for a in members if a.ends_at is None]
    return {
        "id": incident.id,
        "key": incident.key,
        "parent_id": incident.parent_id,
        "title": incident_title(incident, members),
        "cause": incident.cause,
        "causes": incident_causes(incident, members),
        "task": incident.task_id,
        "severity": incident.severity.value,
        "status": _status_word(incident),
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
        "children": [
            {
                "id": child.id,
                "key": child.key,
                "title": incident_title(child, signals),
                "task": child.task_id,
                "cause": child.cause,
                "severity": child.severity.value,
                "status": _status_word(child),
                "summary": child.summary,
                "opened_at": child.opened_at.isoformat(),
                "closed_at": child.closed_at.isoformat() if child.closed_at else None,
                "open_members": sum(1 for a in signals if a.ends_at is None),
                "members": len(signals),
            }
            for child, signals in children
        ],
    }


def incident_notice(session: Session, alerts: Sequence[Alert], group: Sequence[Alert]) -> dict[str, Any] | None:
    """The incident a notification about ``alerts`` is about, as receivers get it (None: no incident).

    The newest incident among the alerts, or the open model change it followed: one page per change,
    whose body lists every child. ``group`` is the notification group's alerts (its members' counts).
    """
    ids = [a.incident_id for a in alerts if a.incident_id is not None]
    incident = session.get(Incident, max(ids)) if ids else None
    if incident is None:
        return None
    parent = session.get(Incident, incident.parent_id) if incident.parent_id is not None else None
    if parent is not None and (parent.closed_at is None or parent.id in ids):  # the family's page, to its end
        incident = parent
    own = [a for a in group if a.incident_id == incident.id]
    children = [(c, incident_members(session, c.id or 0)) for c in incident_children(session, incident.id or 0)]
    return incident_body(incident, own, children)
