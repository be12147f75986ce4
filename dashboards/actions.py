"""What a governance owner can do from the dashboard, each recorded with who did it and why.

Each action runs the ``alerts`` package's own function and, where the installation keeps the
hash-chained audit log (``monitor.audit``), records the decision there in the same
transaction: the alert change, its outbox rows and the audit entry are stored together or not
at all. ``alerts`` may not import ``monitor``, so the dashboard is the one that calls both.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

import alerts
from alerts import Alert
from dashboards.auth import Viewer
from monitor.plan import Plan
from monitor.storage import session_scope


class NotAllowed(PermissionError):
    """The signed-in user is not an owner in the plan, so the dashboard is view-only for them."""


def _audit() -> Any | None:
    try:
        return importlib.import_module("monitor.audit")
    except ImportError:
        return None


def audit_enabled() -> bool:
    """Whether decisions are also written to the audit log (else only to the alert's history)."""
    return _audit() is not None


def _record(session: Session, kind: str, viewer: Viewer, subject: str, details: dict[str, Any], now: datetime) -> None:
    audit = _audit()
    if audit is not None:
        audit.record(session, kind, viewer.actor, subject,
                     details | {"authenticated": viewer.authenticated, "via": "dashboard"}, now)


def _check(viewer: Viewer, text: str, what: str) -> str:
    if not viewer.can_act:
        raise NotAllowed(viewer.why_not or f"{viewer.actor} may not {what} alerts")
    if not text.strip():
        raise ValueError(f"a reason is required to {what} an alert")
    return text.strip()


def _subject(alert: Alert) -> str:
    return f"alert {alert.id} ({alert.task_id}: {alert.rule})"


def acknowledge_alert(engine: Engine, viewer: Viewer, alert_id: int, note: str, now: datetime) -> Alert:
    """Take ownership of a firing alert; repeats stop until it fires anew."""
    note = _check(viewer, note, "acknowledge")
    with session_scope(engine) as session:
        alert = alerts.acknowledge(session, alert_id, viewer.actor, note, now)
        _record(session, "alert.acknowledged", viewer, _subject(alert), {"alert_id": alert_id, "note": note}, now)
    return alert


def resolve_alert(engine: Engine, plan: Plan, viewer: Viewer, alert_id: int, reason: str, now: datetime) -> Alert:
    """Resolve an open alert with a reason; the plan's routes are told."""
    reason = _check(viewer, reason, "resolve")
    routes = [r.name for r in plan.alerts.routes]
    with session_scope(engine) as session:
        alert = alerts.resolve(session, alert_id, viewer.actor, reason, routes, now)
        _record(session, "alert.resolved", viewer, _subject(alert), {"alert_id": alert_id, "reason": reason}, now)
    return alert


def silence_available() -> bool:
    """Whether this installation's alerts package can silence alerts."""
    return callable(getattr(alerts, "silence_alert", None)) or callable(getattr(alerts, "silence", None))


def silence_alert(engine: Engine, viewer: Viewer, alert_id: int, reason: str, duration: timedelta,
                  now: datetime) -> Alert:
    """Silence one alert for ``duration``: it stays visible but sends nothing until the silence ends."""
    reason = _check(viewer, reason, "silence")
    if duration <= timedelta(0):
        raise ValueError("a silence needs a positive duration")
    fn: Callable[..., Any] | None = getattr(alerts, "silence_alert", None) or getattr(alerts, "silence", None)
    if fn is None:
        raise RuntimeError("silences are not available in this installation's alerts package")
    with session_scope(engine) as session:
        fn(session, alert_id, viewer.actor, reason, now + duration, now)
        alert = session.get(Alert, alert_id)
        assert alert is not None
        _record(session, "alert.silenced", viewer, _subject(alert),
                {"alert_id": alert_id, "reason": reason, "until": (now + duration).isoformat()}, now)
    return alert
