"""Alert lifecycle: fire, refresh, resolve, acknowledge; every transition stored with its actor.

Alerts are deduplicated by fingerprint: a finding for a known, open alert refreshes its
evidence and sends nothing new. Changes are written in the caller's transaction; when a
notification policy is given, the notifications they owe (``medmon.alerts.dispatch.flush``) are
written in that same transaction, so an alert change and its outbox rows are stored together or
not at all. Without one, the next periodic flush picks the change up.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlmodel import Session, col, func, select

from medmon.alerts.correlation import CHANGE_WINDOW, incident_children
from medmon.alerts.dispatch import flush
from medmon.alerts.history import record_event
from medmon.alerts.incidents import attach, get_incident, incident_members, refresh
from medmon.alerts.models import Alert, AlertEvent, AlertStatus, Incident, Notification, NotificationStatus
from medmon.alerts.policy import NotifyPolicy
from medmon.alerts.signal import Signal
from medmon.alerts.status import lifecycle_status, sync_status

OPEN = (AlertStatus.firing, AlertStatus.acknowledged, AlertStatus.silenced)


def _notify_now(session: Session, routes: NotifyPolicy | None, now: datetime, groups: set[str]) -> None:
    """Write the notifications due for ``groups`` now; without a policy the next periodic pass
    (``medmon.monitor.alerting.signals.alert_pass``), which has it, notifies."""
    if routes is not None and groups:
        session.flush()
        flush(session, routes, now, groups=groups)


def record_signals(
    session: Session, signals: Sequence[Signal], now: datetime, *, window: timedelta = CHANGE_WINDOW
) -> list[Alert | None]:
    """Apply each signal to its alert (create, refresh, resolve), writing no notification.

    ``window`` is the plan's correlation window (``NotifyPolicy.correlation_window``): what opens
    that long after a model change on the deployment is its child.

    Returns, per signal, the alert it created, refreshed or resolved (None when a clearing
    signal names no open alert). ``medmon.alerts.dispatch.flush`` then writes what is due.
    """
    fingerprints = sorted({s.fingerprint for s in signals})
    known = {a.fingerprint: a for a in session.exec(select(Alert).where(col(Alert.fingerprint).in_(fingerprints)))}
    created: list[tuple[Alert, Signal]] = []
    alerts = [_apply(session, known, created, s, now) for s in signals]
    if created:
        session.flush()  # ids for the new alerts' first history entry
        for alert, signal in created:
            assert alert.id is not None
            session.add(
                AlertEvent(
                    alert_id=alert.id,
                    at=now,
                    actor="medmon",
                    from_status=None,
                    to_status=AlertStatus.firing.value,
                    note=signal.summary,
                )
            )
    refresh(session, attach(session, alerts, now, window), now)
    session.flush()
    return alerts


def apply_signals(
    session: Session, signals: Sequence[Signal], routes: NotifyPolicy, now: datetime
) -> list[Alert | None]:
    """Apply each signal, then write the notifications now due for the groups they touched.

    Findings from one probe thus reach each route as one notification per task, not one per
    finding. ``routes`` is the plan's ``NotifyPolicy``. Returns what ``record_signals`` returns.
    """
    alerts = record_signals(session, signals, now, window=routes.correlation_window)
    _notify_now(session, routes, now, {a.group_key for a in alerts if a is not None})
    return alerts


def _apply(
    session: Session, known: dict[str, Alert], created: list[tuple[Alert, Signal]], signal: Signal, now: datetime
) -> Alert | None:
    alert = known.get(signal.fingerprint)
    if signal.firing:
        if alert is None:
            alert = Alert(
                fingerprint=signal.fingerprint,
                group_key=signal.group_key,
                labels=signal.labels,
                task_id=signal.labels.get("task", ""),
                rule=signal.labels.get("rule", ""),
                starts_at=now,
            )
            _update(alert, signal, now)
            sync_status(alert)
            session.add(alert)
            known[signal.fingerprint] = alert
            created.append((alert, signal))
            return alert
        if alert.ends_at is not None:  # fires again after it resolved: a new episode
            alert.starts_at, alert.ends_at = now, None
            alert.acknowledged_by = alert.acknowledged_at = alert.ack_note = None
            alert.resolved_by = alert.resolve_reason = None
            alert.escalated_at = alert.escalated_to = None
            _history(session, alert, AlertStatus.firing, now, signal.summary)
            sync_status(alert)
        _update(alert, signal, now)
        session.add(alert)
        return alert
    if alert is None or alert.ends_at is not None:
        return None
    alert.ends_at, alert.resolved_by = now, "medmon"
    alert.resolve_reason = signal.summary or "stream recovered"
    _history(session, alert, AlertStatus.resolved, now, alert.resolve_reason)
    sync_status(alert)
    session.add(alert)
    return alert


def _history(session: Session, alert: Alert, to: AlertStatus, now: datetime, note: str) -> None:
    if alert.id is None:  # created earlier in this same batch
        session.flush()
    record_event(session, alert, to, now, "medmon", note)


def _update(alert: Alert, signal: Signal, now: datetime) -> None:
    alert.labels = dict(signal.labels)
    alert.group_key = signal.group_key
    alert.severity = signal.severity
    alert.summary = signal.summary
    alert.owner = signal.owner
    alert.category = signal.category
    alert.dashboard_url = signal.dashboard_url
    alert.evidence = dict(signal.evidence)
    alert.last_seen_at = now


def _get(session: Session, alert_id: int) -> Alert:
    alert = session.get(Alert, alert_id)
    if alert is None:
        raise LookupError(f"no alert with id {alert_id}")
    return alert


def acknowledge(
    session: Session, alert_id: int, actor: str, note: str, now: datetime, *, routes: NotifyPolicy | None = None
) -> Alert:
    """A person takes ownership of a firing alert: repeats and escalation stop until it fires anew.

    Routes that were told it fired hear that it was acknowledged (PagerDuty acknowledges the
    incident): at once when ``routes`` is the ``NotifyPolicy``, else at the next periodic pass.

    Raises
    ------
    LookupError
        No alert has ``alert_id``.
    ValueError
        The alert is not firing (already acknowledged or resolved), or ``actor`` is empty.
    """
    alert = _get(session, alert_id)
    if not actor.strip():
        raise ValueError("an acknowledgement must name who made it")
    status = lifecycle_status(alert)
    if status is not AlertStatus.firing:
        raise ValueError(f"alert {alert_id} is {status.value}, only a firing alert can be acknowledged")
    alert.acknowledged_by, alert.acknowledged_at, alert.ack_note = actor, now, note
    record_event(session, alert, AlertStatus.acknowledged, now, actor, note)
    sync_status(alert)
    session.add(alert)
    _refresh_incident(session, alert, now)
    _notify_now(session, routes, now, {alert.group_key})
    return alert


def resolve(
    session: Session, alert_id: int, actor: str, reason: str, routes: NotifyPolicy | None, now: datetime
) -> Alert:
    """A person resolves an open alert with a reason; routes that were told it fired hear it ended.

    The resolved notification is written at once when ``routes`` is the ``NotifyPolicy``, else
    at the next periodic pass. A later finding for the same labels opens a new episode.

    Raises
    ------
    LookupError
        No alert has ``alert_id``.
    ValueError
        The alert is already resolved, or ``reason`` is empty.
    """
    alert = _get(session, alert_id)
    if alert.ends_at is not None:
        raise ValueError(f"alert {alert_id} is already resolved")
    if not reason.strip():
        raise ValueError("a reason is required to resolve an alert")
    alert.ends_at, alert.resolved_by, alert.resolve_reason = now, actor, reason
    record_event(session, alert, AlertStatus.resolved, now, actor, reason)
    sync_status(alert)
    session.add(alert)
    _refresh_incident(session, alert, now)
    _notify_now(session, routes, now, {alert.group_key})
    return alert


def _refresh_incident(session: Session, alert: Alert, now: datetime) -> None:
    if alert.incident_id is not None:
        session.flush()
        refresh(session, [alert.incident_id], now)


def _open_incident(session: Session, incident_id: int, actor: str, text: str, what: str) -> Incident:
    incident = get_incident(session, incident_id)
    if incident.closed_at is not None:
        raise ValueError(f"incident {incident_id} is resolved; there is nothing to {what}")
    if not actor.strip():
        raise ValueError(f"a person must be named to {what} an incident")
    if not text.strip():
        raise ValueError(f"a reason is required to {what} an incident")
    return incident


def _take(session: Session, incident: Incident, actor: str, note: str, now: datetime, resolving: bool) -> set[str]:
    """Acknowledge (or resolve) every open member of ``incident`` in its name; the groups they notify in."""
    groups = {incident.key}
    for alert in incident_members(session, incident.id or 0):
        if alert.ends_at is not None or (not resolving and lifecycle_status(alert) is not AlertStatus.firing):
            continue
        if resolving:
            alert.ends_at, alert.resolved_by, alert.resolve_reason = now, actor, note
        else:
            alert.acknowledged_by, alert.acknowledged_at, alert.ack_note = actor, now, note
        to = AlertStatus.resolved if resolving else AlertStatus.acknowledged
        record_event(session, alert, to, now, actor, f"incident #{incident.id}: {note}")
        sync_status(alert)
        session.add(alert)
        groups.add(alert.group_key)
    return groups


def acknowledge_incident(
    session: Session, incident_id: int, actor: str, note: str, now: datetime, *, routes: NotifyPolicy | None = None
) -> Incident:
    """A person takes ownership of an incident: every firing member is acknowledged with one note.

    Members that join the incident later are acknowledged with it, and so are the incidents that
    followed it (a model change's children, now and later: the owner holds the change). Routes
    that were told it fired hear it was acknowledged, in one notification.

    Raises
    ------
    LookupError
        No incident has ``incident_id``.
    ValueError
        The incident is resolved or already acknowledged, or ``actor`` or ``note`` is empty.
    """
    incident = _open_incident(session, incident_id, actor, note, "acknowledge")
    if incident.acknowledged_at is not None:
        raise ValueError(f"incident {incident_id} is already acknowledged by {incident.acknowledged_by}")
    groups = _take(session, incident, actor, note, now, resolving=False)
    incident.acknowledged_by, incident.acknowledged_at, incident.ack_note = actor, now, note
    session.add(incident)
    for child in incident_children(session, incident_id):
        if child.closed_at is None and child.acknowledged_at is None:
            groups |= _take(session, child, actor, f"with incident #{incident_id}: {note}", now, resolving=False)
            child.acknowledged_by, child.acknowledged_at = actor, now
            child.ack_note = f"covered by incident #{incident_id}: {note}"
            session.add(child)
    _notify_now(session, routes, now, groups)
    return incident


def resolve_incident(
    session: Session,
    incident_id: int,
    actor: str,
    reason: str,
    now: datetime,
    *,
    routes: NotifyPolicy | None = None,
    children: bool = False,
) -> Incident:
    """A person resolves an incident with a reason: every open member resolves, the incident closes.

    With ``children``, the incidents that followed it (a model change's) resolve with it, with the
    same reason, in one notification; without, they stay open and notify on their own from then
    on. A child resolved alone leaves its parent open. A later finding about the same task and
    cause opens a new incident.

    Raises
    ------
    LookupError
        No incident has ``incident_id``.
    ValueError
        The incident is already resolved, or ``actor`` or ``reason`` is empty.
    """
    incident = _open_incident(session, incident_id, actor, reason, "resolve")
    followed = [c for c in incident_children(session, incident_id) if c.closed_at is None] if children else []
    groups: set[str] = set()
    for inc in [*followed, incident]:  # children first: their end is news in the parent's group
        why = reason if inc is incident else f"with incident #{incident_id}: {reason}"
        groups |= _take(session, inc, actor, why, now, resolving=True)
        inc.resolved_by, inc.resolve_reason = actor, why
        session.add(inc)
    session.flush()
    refresh(session, [c.id for c in followed if c.id is not None] + [incident_id], now)
    groups |= {c.key for c in incident_children(session, incident_id) if c.closed_at is None}  # on their own now
    _notify_now(session, routes, now, groups)
    return incident


def open_alerts(session: Session) -> list[Alert]:
    """Alerts not yet resolved (firing or acknowledged; silenced ones included), newest first."""
    query = select(Alert).where(col(Alert.status).in_(OPEN)).order_by(col(Alert.starts_at).desc())
    return list(session.exec(query).all())


def open_fingerprints(session: Session, fingerprints: Sequence[str]) -> set[str]:
    """Which of ``fingerprints`` belong to an alert that is not resolved."""
    if not fingerprints:
        return set()
    return set(
        session.exec(
            select(Alert.fingerprint).where(
                col(Alert.fingerprint).in_(list(fingerprints)), col(Alert.ends_at).is_(None)
            )
        ).all()
    )


def pending_count(session: Session) -> int:
    """Notifications still waiting in the outbox."""
    return int(
        session.exec(
            select(func.count()).select_from(Notification).where(Notification.status == NotificationStatus.pending)
        ).one()
    )
