"""What a governance owner can do from the dashboard, each recorded with who did it and why.

Each action runs the ``alerts`` package's own function and records the decision in the
hash-chained audit log (``medmon.monitor.governance.audit``) in the same transaction: the alert change, its
outbox rows and the audit entry are stored together or not at all. ``alerts`` may not import
``monitor``, so the dashboard is the one that calls both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import (
    Incident,
    Matcher,
    Notification,
    Silence,
    acknowledge_incident,
    create_silence,
    incident_children,
    incident_members,
    requeue,
    resolve_incident,
    silence_incident,
)
from medmon.dashboards.auth import NotAllowed, Viewer, may_act, require_role, signed_in_owner, signed_in_reviewer
from medmon.db import session_scope
from medmon.monitor.governance.audit import AuditKind, record
from medmon.monitor.governance.review import record_review
from medmon.monitor.governance.safety import open_from_review
from medmon.monitor.governance.signoff import sign
from medmon.monitor.governance.thresholds import approve_thresholds
from medmon.monitor.plan.model import Plan
from medmon.monitor.read import live_policy

__all__ = ["NotAllowed"]  # raised by every action here; defined with the door (medmon.dashboards.auth)


def _check(viewer: Viewer, text: str, what: str, thing: str) -> str:
    if not may_act(viewer, what):
        raise NotAllowed(viewer.why_not or f"{viewer.actor} may not {what} alerts")
    if not text.strip():
        raise ValueError(f"a reason is required to {what} {thing}")
    return text.strip()


def _record_incident(
    session: Session, kind: AuditKind, viewer: Viewer, incident: Incident, details: dict[str, Any], now: datetime
) -> None:
    members = incident_members(session, incident.id or 0)
    record(
        session,
        kind,
        viewer.actor,
        f"incident:{incident.id}",
        details
        | {
            "task": incident.task_id,
            "cause": incident.cause,
            "key": incident.key,
            "alerts": [a.id for a in members],
            "authenticated": viewer.authenticated,
            "via": "dashboard",
        },
        now,
    )


def _incidents(ids: Sequence[int]) -> list[int]:
    chosen = list(dict.fromkeys(ids))
    if not chosen:
        raise ValueError("choose at least one incident")
    return chosen


def _scoped(session: Session, viewer: Viewer, what: str, incident_id: int) -> None:
    """The viewer's roles must allow ``what`` on this incident's task (a task owner: their own)."""
    incident = session.get(Incident, incident_id)
    if incident is not None:
        require_role(viewer, what, incident.task_id)


def _on_incidents(
    engine: Engine,
    viewer: Viewer,
    incident_ids: Sequence[int],
    kind: AuditKind,
    act: Callable[[Session, int], Incident],
    details: dict[str, Any],
    now: datetime,
    what: str,
) -> list[Incident]:
    """Apply ``act`` to each incident and audit it, in one transaction: all or nothing."""
    with session_scope(engine) as session:
        out = []
        for incident_id in _incidents(incident_ids):
            _scoped(session, viewer, what, incident_id)
            incident = act(session, incident_id)
            _record_incident(session, kind, viewer, incident, details, now)
            out.append(incident)
    return out


def _family_in_scope(session: Session, viewer: Viewer, what: str, incident_id: int) -> list[Incident]:
    """The open children an action on ``incident_id`` also takes; each must be within the viewer's roles."""
    followed = [c for c in incident_children(session, incident_id) if c.closed_at is None]
    for child in followed:
        _scoped(session, viewer, what, child.id or 0)
    return followed


def acknowledge_incidents(
    engine: Engine, plan: Plan, viewer: Viewer, incident_ids: Sequence[int], note: str, now: datetime
) -> list[Incident]:
    """Take ownership of incidents with one note: every firing member of each is acknowledged, the
    routes hear it once per incident, and each is audited; all or nothing.

    A model change's open children are acknowledged with it (``acknowledge_incident``): each is
    checked against the viewer's roles and audited as the parent is, ``with`` the parent's id.
    """
    note = _check(viewer, note, "acknowledge", "an incident")
    policy = live_policy(plan)

    def act(session: Session, incident_id: int) -> Incident:
        followed = [
            c for c in _family_in_scope(session, viewer, "acknowledge", incident_id) if c.acknowledged_at is None
        ]
        incident = acknowledge_incident(session, incident_id, viewer.actor, note, now, routes=policy)
        for child in followed:
            _record_incident(
                session, AuditKind.alert_acknowledged, viewer, child, {"note": note, "with": incident_id}, now
            )
        return incident

    return _on_incidents(
        engine, viewer, incident_ids, AuditKind.alert_acknowledged, act, {"note": note}, now, "acknowledge"
    )


def resolve_incidents(
    engine: Engine,
    plan: Plan,
    viewer: Viewer,
    incident_ids: Sequence[int],
    reason: str,
    now: datetime,
    *,
    children: bool = False,
) -> list[Incident]:
    """Resolve incidents with one reason: every open member resolves; all or nothing.

    With ``children``, the open incidents that followed a model change resolve with it, in one
    notification; each is checked against the viewer's roles and audited as the parent is.
    """
    reason = _check(viewer, reason, "resolve", "an incident")
    policy = live_policy(plan)

    def act(session: Session, incident_id: int) -> Incident:
        followed = _family_in_scope(session, viewer, "resolve", incident_id) if children else []
        incident = resolve_incident(session, incident_id, viewer.actor, reason, now, routes=policy, children=children)
        for child in followed:
            _record_incident(
                session, AuditKind.alert_resolved, viewer, child, {"reason": reason, "with": incident_id}, now
            )
        return incident

    return _on_incidents(
        engine,
        viewer,
        incident_ids,
        AuditKind.alert_resolved,
        act,
        {"reason": reason, "children": children},
        now,
        "resolve",
    )


def silence_incidents(
    engine: Engine, viewer: Viewer, incident_ids: Sequence[int], reason: str, duration: timedelta, now: datetime
) -> list[Silence]:
    """Silence incidents for ``duration`` with one reason: they stay visible but notify nobody.

    A model change is silenced with its open children (``silence_incident``), each checked against
    the viewer's roles and audited as the parent is, ``with`` the parent's id. Returns every silence made.
    """
    reason = _check(viewer, reason, "silence", "an incident")
    if duration <= timedelta(0):
        raise ValueError("a silence needs a positive duration")
    until = now + duration
    with session_scope(engine) as session:
        out = []
        for incident_id in _incidents(incident_ids):
            _scoped(session, viewer, "silence", incident_id)
            _family_in_scope(session, viewer, "silence", incident_id)
            made = silence_incident(session, incident_id, viewer.actor, reason, until, now)
            for silenced_id, silence in made.items():
                incident = session.get(Incident, silenced_id)
                assert incident is not None
                details: dict[str, Any] = {"reason": reason, "silence_id": silence.id, "until": until.isoformat()}
                if silenced_id != incident_id:
                    details["with"] = incident_id
                _record_incident(session, AuditKind.alert_silenced, viewer, incident, details, now)
                out.append(silence)
    return out


def silence_matching(
    engine: Engine, viewer: Viewer, matchers: str, reason: str, duration: timedelta, now: datetime
) -> Silence:
    """Silence every alert whose labels match ``matchers`` (``task=dosing, cause=~cost|latency``)."""
    reason = _check(viewer, reason, "silence", "alerts")
    if duration <= timedelta(0):
        raise ValueError("a silence needs a positive duration")
    parsed = [Matcher.parse(m.strip()) for m in matchers.split(",") if m.strip()]
    tasks = [m.value for m in parsed if m.name == "task" and m.op.value == "="]
    require_role(viewer, "silence", tasks[0] if len(tasks) == 1 else None)  # one task's owner: that task only
    with session_scope(engine) as session:
        silence = create_silence(
            session, parsed, ends_at=now + duration, reason=reason, created_by=viewer.actor, now=now
        )
        record(
            session,
            AuditKind.alert_silenced,
            viewer.actor,
            f"silence:{silence.id}",
            {
                "reason": reason,
                "silence_id": silence.id,
                "matchers": [str(m) for m in parsed],
                "until": (now + duration).isoformat(),
                "authenticated": viewer.authenticated,
                "via": "dashboard",
            },
            now,
        )
    return silence


def requeue_dead_letter(engine: Engine, viewer: Viewer, notification_id: int, note: str, now: datetime) -> Notification:
    """Send an undeliverable notification again (after its receiver was fixed): attempts start over.

    Needs a verified owner's sign-in: ``--allow-local-actions`` covers acknowledge, resolve and silence only."""
    by = signed_in_owner(viewer, "requeue notifications")
    require_role(viewer, "requeue notifications", None)
    with session_scope(engine) as session:
        return requeue(session, notification_id, by, note.strip(), now)


# --- governance decisions that need a verified sign-in -------------------------------------------

SIGNED_IN = {"authenticated": True, "via": "dashboard"}


_signed_in = signed_in_owner


def approve_task_thresholds(
    engine: Engine, plan: Plan, viewer: Viewer, task_id: str, reason: str, committee_decision: str, now: datetime
) -> int:
    """Put a task's proposed thresholds in force as the signed-in owner (the plan's rules apply); the audit seq."""
    by = _signed_in(viewer, "approve thresholds")
    require_role(viewer, "approve thresholds", task_id)
    with session_scope(engine) as session:
        return approve_thresholds(
            session,
            plan,
            task_id=task_id,
            by=by,
            reason=reason.strip(),
            now=now,
            committee_decision=committee_decision.strip() or None,
            details=SIGNED_IN,
        ).seq


def sign_report(
    engine: Engine, plan: Plan, viewer: Viewer, period: str, digest: str, statement: str, now: datetime
) -> int:
    """Sign a period's committee report by its hash, as the signed-in owner; the audit seq."""
    by = _signed_in(viewer, "sign reports")
    require_role(viewer, "sign reports", None)
    with session_scope(engine) as session:
        return sign(session, plan, period, digest, by=by, statement=statement.strip(), now=now, details=SIGNED_IN).seq


def note_answers_viewed(
    engine: Engine,
    viewer: Viewer,
    task_id: str | None,
    page: str,
    result_ids: Sequence[int],
    now: datetime,
    *,
    what: str = "answers",
    rows: int | None = None,
) -> None:
    """Record that this viewer was shown stored text (these answers of a task, or ``rows`` records of
    ``what`` across tasks when ``task_id`` is None); the caller records once per session and view."""
    with session_scope(engine) as session:
        record(
            session,
            AuditKind.answers_viewed,
            viewer.actor,
            f"task:{task_id}" if task_id else "deployment",
            {
                "task": task_id,
                "page": page,
                "what": what,
                "answers": list(result_ids),
                "rows": len(result_ids) if rows is None else rows,
                "authenticated": viewer.authenticated,
                "via": "dashboard",
            },
            now,
        )


def rate_answer(
    engine: Engine,
    plan: Plan,
    viewer: Viewer,
    item_id: int,
    scores: Mapping[str, int | None],
    note: str,
    concern: bool,
    now: datetime,
) -> int | None:
    """Record the signed-in reviewer's rating of a queued answer (never on anyone else's behalf);
    a safety concern opens its safety event in the same transaction. The event's id, if one opened."""
    reviewer = signed_in_reviewer(plan, viewer)
    with session_scope(engine) as session:
        review = record_review(
            session,
            plan,
            item_id=item_id,
            reviewer=reviewer,
            scores=dict(scores),
            note=note,
            safety_concern=concern,
            actor=reviewer,
            now=now,
        )
        if not concern:
            return None
        event = open_from_review(session, plan, review, reviewer, now)
        session.flush()
        return event.id
