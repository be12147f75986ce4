"""Suspend a task's use of the model, and resume it only on evidence.

The plan's ``oversight.suspend`` route is how the hospital switches the deployment off: a webhook
to its gateway or feature-flag service, signed as every medmon webhook is (the shared secret from
the variable ``secret_env`` names), or a command given the same JSON on stdin. An owner suspends
with a reason; for a high-risk task (risk tier ``high`` or task severity ``critical``) a second,
different owner confirms before the route is called. A route that fails is retried, and a
suspension it never reached is recorded as ``failed`` with the error, never shown as in force.
Resuming needs a re-evaluation of the task, run after the suspension, that passed, or a recorded
committee decision (its text and reference); the route is told to resume. For a high-risk task
the two-owner rule holds for resume as for suspend: the first owner's resume is recorded as a
request (the task stays suspended), and a second, different owner's resume calls the route.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pydantic import SecretStr
from sqlmodel import Session, col, select

from medmon.alerts import PermanentDeliveryError, RetryableDeliveryError, WebhookChannel
from medmon.alerts.channels.webhook import WebhookConfig
from medmon.alerts.signing import secret_key
from medmon.moments import display_time
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, list_events, record
from medmon.monitor.governance.safety import passing_reevaluation
from medmon.monitor.models import AuditEvent, Suspension
from medmon.monitor.plan.model import Endpoint, Plan, Task
from medmon.monitor.plan.oversight import SuspendRoute

Send = Callable[[dict[str, Any]], None]
ATTEMPTS = 3


class RouteFailed(GovernanceError):
    """The suspend route did not accept the call (after retries)."""


def high_risk(plan: Plan, task: Task) -> bool:
    return plan.use_case.risk_tier.value == "high" or task.severity == "critical"


def needs_confirmation(plan: Plan, task: Task) -> bool:
    route = plan.oversight.suspend
    return route is not None and route.confirm_high_risk and high_risk(plan, task)


def route_sender(route: SuspendRoute) -> Send:
    """A function that delivers one suspend/resume body through ``route``, retrying transient failures."""

    def variable(name: str | None, field: str) -> str | None:
        if name is None:
            return None
        value = os.environ.get(name)
        if not value:
            raise RouteFailed(f"suspend route: environment variable {name} ({field}) is not set")
        return value

    if route.type == "command":

        def run(body: dict[str, Any]) -> None:
            try:
                done = subprocess.run(
                    route.command,
                    input=json.dumps(body, sort_keys=True).encode(),
                    capture_output=True,
                    timeout=route.timeout_s,
                    check=False,
                    env={**os.environ, "MEDMON_SUSPEND_ACTION": str(body["action"])},
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RouteFailed(f"suspend command {route.command[0]!r} could not run: {exc}") from None
            if done.returncode != 0:
                tail = done.stderr.decode(errors="replace").strip()[-200:]
                raise RouteFailed(f"suspend command {route.command[0]!r} exited with {done.returncode}: {tail}")

        return run

    def post(body: dict[str, Any]) -> None:
        url = route.url or variable(route.url_env, "url_env")
        secret = variable(route.secret_env, "secret_env")
        if secret is not None:
            try:
                secret_key(secret)
            except ValueError as exc:
                raise RouteFailed(f"suspend route: {route.secret_env}: {exc}") from None
        channel = WebhookChannel(
            WebhookConfig(
                name="suspend",
                url=SecretStr(url or ""),
                timeout_s=route.timeout_s,
                secret=SecretStr(secret) if secret else None,
            )
        )
        # The same on every retry of this call, never the same for two deployments or two calls
        # (a gateway dropping repeated ids must not drop another deployment's suspension).
        key = f"medmon-{body['deployment']}-suspension-{body['suspension']}-{body['action']}-{uuid.uuid4().hex}"
        try:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    channel.send(body, idempotency_key=key)
                    return
                except RetryableDeliveryError as exc:
                    if attempt == ATTEMPTS:
                        raise RouteFailed(f"{exc} (after {ATTEMPTS} attempts)") from None
                    time.sleep(exc.retry_after if exc.retry_after is not None else 0.5 * attempt)
                except PermanentDeliveryError as exc:
                    raise RouteFailed(str(exc)) from None
        finally:
            channel.close()

    return post


def _body(deployment: Endpoint, s: Suspension, action: str, actor: str, now: datetime) -> dict[str, Any]:
    return {
        "action": action,
        "suspension": s.id,
        "deployment": deployment.name,
        "model": deployment.model,
        "task": s.task_id,
        "reason": s.reason if action == "suspend" else s.resume_basis,
        "by": actor,
        "requested_by": s.requested_by,
        "confirmed_by": s.confirmed_by or None,
        "at": now.isoformat(),
    }


def active(session: Session, task_id: str | None = None) -> list[Suspension]:
    """Suspensions in force or awaiting confirmation (all tasks, or one)."""
    query = select(Suspension).where(col(Suspension.status).in_(["pending", "suspended"]))
    if task_id is not None:
        query = query.where(Suspension.task_id == task_id)
    return list(session.exec(query.order_by(col(Suspension.id))).all())


def _send(session: Session, deployment: Endpoint, s: Suspension, actor: str, now: datetime, send: Send) -> Suspension:
    try:
        send(_body(deployment, s, "suspend", actor, now))
    except RouteFailed as exc:
        s.status, s.route_error = "failed", str(exc)
    else:
        s.status, s.suspended_at, s.route_error = "suspended", now, ""
    session.add(s)
    record(
        session,
        AuditKind.suspension,
        actor,
        f"suspension:{s.id}",
        {
            "action": "sent" if s.status == "suspended" else "route_failed",
            "task": s.task_id,
            "error": s.route_error or None,
            "confirmed_by": s.confirmed_by or None,
        },
        now,
    )
    return s


def request(session: Session, plan: Plan, task_id: str, reason: str, actor: str, now: datetime) -> Suspension:
    """An owner asks to suspend ``task_id``; sent at once unless a second owner must confirm."""
    if plan.oversight.suspend is None:
        raise GovernanceError("the plan has no oversight.suspend route: nothing to call")
    task = plan.task(task_id)
    if not reason.strip():
        raise ValueError("a reason is required to suspend")
    if active(session, task_id):
        raise GovernanceError(f"task {task_id} is already suspended or awaiting confirmation")
    s = Suspension(task_id=task_id, reason=reason.strip(), requested_by=actor, requested_at=now)
    session.add(s)
    session.flush()
    confirm = needs_confirmation(plan, task)
    record(
        session,
        AuditKind.suspension,
        actor,
        f"suspension:{s.id}",
        {"action": "requested", "task": task_id, "reason": s.reason, "needs_confirmation": confirm},
        now,
    )
    if confirm:
        return s
    return _send(session, plan.deployment, s, actor, now, route_sender(plan.oversight.suspend))


def confirm(session: Session, plan: Plan, suspension_id: int, actor: str, now: datetime) -> Suspension:
    """A second owner confirms a high-risk suspension (never the one who asked); the route is called."""
    s = session.get(Suspension, suspension_id)
    if s is None or s.status not in ("pending", "failed"):
        raise GovernanceError(f"suspension {suspension_id} is not awaiting confirmation or a retry")
    if s.status == "pending" and actor.strip().lower() == s.requested_by.strip().lower():
        raise GovernanceError("a second owner must confirm: the one who asked cannot confirm their own request")
    assert plan.oversight.suspend is not None
    if s.status == "pending":
        s.confirmed_by = actor
    return _send(session, plan.deployment, s, actor, now, route_sender(plan.oversight.suspend))


def resume(
    session: Session, plan: Plan, task_id: str, actor: str, now: datetime, *, decision: str = "", reference: str = ""
) -> Suspension:
    """Resume a suspended task on a passing re-evaluation since the suspension, or a committee decision."""
    current = [s for s in active(session, task_id) if s.status == "suspended"]
    if not current:
        raise GovernanceError(f"task {task_id} is not suspended")
    s = current[-1]
    check = passing_reevaluation(session, task_id, (s.suspended_at or s.requested_at))
    if check is not None:
        basis = f"reevaluation:{check.id}"
    elif decision.strip() and reference.strip():
        basis = f"decision:{decision.strip()} ({reference.strip()})"
    else:
        raise GovernanceError(
            f"resume refused: task {task_id} has no passing re-evaluation since it was suspended "
            f"({display_time(s.suspended_at or s.requested_at)}) and no recorded "
            "committee decision (its text and reference)"
        )
    assert plan.oversight.suspend is not None
    details: dict[str, Any] = {"action": "resumed", "task": task_id, "basis": basis}
    if needs_confirmation(plan, plan.task(task_id)):
        asked = _resume_request(session, s)
        if asked is None:
            record(
                session,
                AuditKind.suspension,
                actor,
                f"suspension:{s.id}",
                {"action": "resume_requested", "task": task_id, "basis": basis},
                now,
            )
            return s  # still suspended until a second owner resumes too
        if asked.actor.strip().lower() == actor.strip().lower():
            raise GovernanceError(
                "a second owner must confirm the resume: the one who asked cannot confirm their own request"
            )
        details |= {"requested_by": asked.actor, "confirmed_by": actor}
    s.resume_basis = basis
    route_sender(plan.oversight.suspend)(_body(plan.deployment, s, "resume", actor, now))
    s.status, s.resumed_by, s.resumed_at = "resumed", actor, now
    session.add(s)
    record(session, AuditKind.suspension, actor, f"suspension:{s.id}", details, now)
    return s


def _resume_request(session: Session, s: Suspension) -> AuditEvent | None:
    """The first owner's request to resume this suspension, if one is recorded."""
    asked = [
        e
        for e in list_events(session, kind=AuditKind.suspension, subject=f"suspension:{s.id}")
        if e.subject == f"suspension:{s.id}" and e.details.get("action") == "resume_requested"
    ]
    return asked[-1] if asked else None
