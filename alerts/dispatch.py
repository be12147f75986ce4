"""Turn alert changes into grouped notifications in the outbox.

``flush`` looks at each group (one per task), marks critical alerts nobody acknowledged in
time as escalated, asks ``dedup.decide`` whether each route should hear about the group now
and, if so, writes one ``Notification`` listing the group's alerts, news first, in the caller's
transaction, together with the route's new ``NotifyLog`` entry. Running it again with nothing
new writes nothing, so it is safe to call after every alert change and on every scheduler tick.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.alerts.dedup import Decision, GroupState, NotifyReason, Timers, Told, decide
from medmon.alerts.history import record_event
from medmon.alerts.incidents import incident_notice
from medmon.alerts.models import Alert, AlertStatus, Notification, NotifyLog, Severity, Silence
from medmon.alerts.policy import NotifyPolicy, RouteSpec
from medmon.alerts.signal import GROUP_LABELS
from medmon.alerts.silences import active_silences
from medmon.alerts.status import lifecycle_status, silenced_by
from medmon.alerts.wakeup import announce
from medmon.moments import display_time

_RANK = {Severity.critical: 0, Severity.warning: 1, Severity.info: 2}


def active_groups(session: Session) -> set[str]:
    """Groups with an open alert, or with a route still to be told that an alert resolved."""
    keys = set(session.exec(select(Alert.group_key).where(col(Alert.ends_at).is_(None)).distinct()).all())
    keys |= set(session.exec(select(NotifyLog.group_key).where(col(NotifyLog.open_count) > 0).distinct()).all())
    return keys


def flush(
    session: Session, policy: NotifyPolicy, now: datetime, *, groups: Iterable[str] | None = None
) -> list[Notification]:
    """Write the notifications due now for ``groups`` (default: every active group)."""
    keys = sorted(set(groups) if groups is not None else active_groups(session))
    if not keys or not policy.routes:
        return []
    silences = active_silences(session, now)
    out: list[Notification] = []
    for key in keys:
        out.extend(_flush_group(session, policy, key, silences, now))
    return out


def _flush_group(
    session: Session, policy: NotifyPolicy, key: str, silences: Sequence[Silence], now: datetime
) -> list[Notification]:
    logs = {
        log.route: log
        for log in session.exec(select(NotifyLog).where(NotifyLog.group_key == key).with_for_update()).all()
    }
    if all(r.name in logs and now < logs[r.name].sent_at + policy.group_interval_for(r) for r in policy.routes):
        if policy.escalation is None:
            return []  # every route heard about this group too recently to hear again
    members = _members(session, key, logs)
    _escalate(session, policy, members, silences, now)
    out = []
    for route in policy.routes:
        log = logs.get(route.name)
        state = _state(policy, route, members, silences, now)
        timers = Timers(
            policy.group_wait,
            policy.group_interval_for(route),
            policy.repeat_interval_for(route),
            route.send_resolved,
            policy.is_escalation(route),
        )
        decision = decide(state, _told(log), timers, now)
        if decision.reason.sends:
            out.append(_enqueue(session, policy, route, key, members, state, decision, log, now))
        elif decision.reason in (NotifyReason.unchanged, NotifyReason.nothing) and log is not None:
            _forget(session, log, state)
    return out


def _members(session: Session, key: str, logs: dict[str, NotifyLog]) -> list[Alert]:
    """The group's open alerts, plus resolved ones some route may still have to hear about."""
    told: set[str] = set()
    for log in logs.values():
        told.update(log.firing, log.acknowledged)
    query = select(Alert).where(Alert.group_key == key)
    rows = session.exec(query.where(col(Alert.ends_at).is_(None))).all()
    if told:
        rows = [
            *rows,
            *session.exec(query.where(col(Alert.ends_at).is_not(None), col(Alert.fingerprint).in_(sorted(told)))).all(),
        ]
    return list(rows)


def _escalate(
    session: Session, policy: NotifyPolicy, members: Sequence[Alert], silences: Sequence[Silence], now: datetime
) -> None:
    esc = policy.escalation
    if esc is None:
        return
    for a in members:
        if (
            a.severity is Severity.critical
            and a.escalated_at is None
            and lifecycle_status(a) is AlertStatus.firing
            and a.starts_at + esc.after <= now
            and silenced_by(a, silences, now) is None
        ):
            a.escalated_at, a.escalated_to = now, esc.route
            record_event(
                session,
                a,
                AlertStatus.firing,
                now,
                "medmon",
                f"not acknowledged within {esc.after}; escalated to route {esc.route}",
            )
            session.add(a)


def _state(
    policy: NotifyPolicy, route: RouteSpec, members: Sequence[Alert], silences: Sequence[Silence], now: datetime
) -> GroupState:
    firing, acked, resolved = set(), set(), set()
    born: datetime | None = None
    for a in members:
        if not policy.accepts(route, a):
            continue
        status = lifecycle_status(a)
        if status is AlertStatus.resolved:
            resolved.add(a.fingerprint)
        elif silenced_by(a, silences, now) is not None:
            continue
        elif status is AlertStatus.firing or route.repeat_acknowledged:
            firing.add(a.fingerprint)
            start = a.starts_at
            born = start if born is None or start < born else born
        else:
            acked.add(a.fingerprint)
    return GroupState(frozenset(firing), frozenset(acked), frozenset(resolved), born)


def _told(log: NotifyLog | None) -> Told | None:
    if log is None:
        return None
    return Told(frozenset(log.firing), frozenset(log.acknowledged), frozenset(log.resolved), log.sent_at)


def _forget(session: Session, log: NotifyLog, state: GroupState) -> None:
    """Drop silenced or quietly resolved alerts from what the route is assumed to know.

    An alert silenced after it was notified, and still firing when the silence ends, is then
    notified again, as Alertmanager does.
    """
    firing = sorted(set(log.firing) & state.firing)
    acked = sorted(set(log.acknowledged) & state.acknowledged)
    if firing != sorted(log.firing) or acked != sorted(log.acknowledged):
        log.firing, log.acknowledged, log.open_count = firing, acked, len(firing) + len(acked)
        session.add(log)


def _enqueue(
    session: Session,
    policy: NotifyPolicy,
    route: RouteSpec,
    key: str,
    members: Sequence[Alert],
    state: GroupState,
    decision: Decision,
    log: NotifyLog | None,
    now: datetime,
) -> Notification:
    shown = [a for a in members if a.fingerprint in state.firing | state.acknowledged | decision.newly_resolved]
    shown.sort(key=lambda a: (a.fingerprint not in decision.news, _RANK[a.severity], a.starts_at, a.id or 0))
    cap = policy.max_alerts_for(route)
    figures = _figures(session, policy, shown)
    body = group_body(
        key, route.name, decision.reason, shown, decision.news, now, max_alerts=cap, figures=figures, tz=policy.timezone
    )
    notice = incident_notice(session, shown, members)  # a child's news is an update of its model change's page
    if notice is not None:
        body["incident"] = notice
        figure = figures.get(notice["task"] or "")
        if figure:
            notice["now"], notice["summary"] = figure, with_figure(notice["summary"], figure)
    listed = shown[:cap]
    if log is None:
        log = NotifyLog(group_key=key, route=route.name, sent_at=now)
    log.sequence += 1
    log.firing, log.acknowledged = sorted(state.firing), sorted(state.acknowledged)
    log.resolved, log.sent_at = sorted(decision.newly_resolved), now
    log.open_count = len(log.firing) + len(log.acknowledged)
    session.add(log)
    lead = listed[0]
    assert lead.id is not None
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    row = Notification(
        alert_id=lead.id,
        group_key=key,
        route=route.name,
        event=decision.reason.event,
        idempotency_key=f"medmon-{digest}-{route.name}-{log.sequence}-{int(now.timestamp() * 1e6)}",
        alert_count=len(shown),
        payload=body,
        next_attempt_at=now,
        created_at=now,
    )
    session.add(row)
    announce(session)  # the delivery worker wakes when this commits, not at its next tick
    for a in listed:
        a.last_notified_at = now
        session.add(a)
    return row


def _figures(session: Session, policy: NotifyPolicy, shown: Sequence[Alert]) -> dict[str, str]:
    """Each task's figure as it stands now, from the policy's ``figure`` (none without one)."""
    if policy.figure is None:
        return {}
    out = {}
    for task in sorted({a.task_id for a in shown if a.task_id}):
        text = policy.figure(session, task)
        if text:
            out[task] = text
    return out


def with_figure(summary: str, figure: str) -> str:
    """The summary written when the alert fired, then the figure at sending time.

    >>> with_figure("qa: the score fell", "score now 0.54")
    'qa: the score fell. Now: score now 0.54'
    """
    return f"{summary.rstrip('.')}. Now: {figure}"


def alert_body(alert: Alert) -> dict[str, Any]:
    """One alert as every channel receives it: what, where, who owns it, the evidence, a link."""
    status = lifecycle_status(alert)
    return {
        "fingerprint": alert.fingerprint,
        "incident_id": alert.incident_id,
        "status": status.value,
        "labels": dict(alert.labels),
        "severity": alert.severity.value,
        "summary": alert.summary,
        "task": alert.task_id,
        "rule": alert.rule,
        "category": alert.category,
        "owner": alert.owner,
        "evidence": dict(alert.evidence),
        "dashboard_url": alert.dashboard_url,
        "starts_at": alert.starts_at.isoformat(),
        "ends_at": alert.ends_at.isoformat() if alert.ends_at else None,
        "acknowledged_by": alert.acknowledged_by,
        "ack_note": alert.ack_note,
        "resolved_by": alert.resolved_by,
        "resolve_reason": alert.resolve_reason,
        "escalated": alert.escalated_at is not None,
    }


def group_body(
    key: str,
    route: str,
    reason: NotifyReason,
    alerts: Sequence[Alert],
    news: Iterable[str],
    now: datetime,
    *,
    max_alerts: int = 50,
    figures: Mapping[str, str] | None = None,
    tz: str = "UTC",
) -> dict[str, Any]:
    """The channel-neutral notification: the group's alerts in order (news first) and what changed.

    At most ``max_alerts`` are listed; ``truncated_alerts`` counts the rest, which the
    dashboard shows in full. ``counts`` covers every alert, listed or not. ``figures`` (task to
    its figure now) is added to each of that task's alerts as ``now`` and in its summary.
    """
    statuses = [lifecycle_status(a).value for a in alerts]
    counts = {s: statuses.count(s) for s in ("firing", "acknowledged", "resolved")}
    new = set(news)
    bodies = [alert_body(a) | {"new": a.fingerprint in new} for a in alerts[:max_alerts]]
    for b in bodies:
        figure = (figures or {}).get(b["task"] or "")
        if figure:
            b["now"], b["summary"] = figure, with_figure(b["summary"], figure)
        b["starts_at_text"] = display_time(datetime.fromisoformat(b["starts_at"]), tz)
    lead = bodies[0]
    status = "firing" if counts["firing"] or counts["acknowledged"] else "resolved"
    total = len(alerts)
    more = f" (+{total - 1} more)" if total > 1 else ""
    labels = {k: lead["labels"].get(k, "") for k in GROUP_LABELS}
    return {
        "version": "1",
        "group_key": key,
        "group_labels": labels,
        "route": route,
        "event": reason.event,
        "reason": reason.value,
        "status": status,
        "summary": f"[{reason.event.upper()}] {lead['summary']}{more}",
        "counts": counts,
        "alerts": bodies,
        "truncated_alerts": total - len(bodies),
        "dashboard_url": lead["dashboard_url"],
        "sent_at": now.isoformat(),
        "sent_at_text": display_time(now, tz),  # what people read; ``sent_at`` is for machines
    }
