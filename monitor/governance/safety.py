"""Safety events: a possible harm, its evidence frozen, its reporting clock, decision and corrective actions.

A reviewer's safety flag, an incident or alert, or a person opens an event. Opening freezes the
evidence as it stood (the answers with their scores, the judges' and clinicians' ratings, the
model identity), so later runs cannot change what the committee looked at. The clock comes from
the plan's ``oversight.safety`` (jurisdiction, device status, a deadline per severity; the EU AI
Act Art. 73 deadlines by default) and starts when the organisation became aware. Re-grading the
severity recomputes it. A corrective action has an owner and a due date and is closed only by
its effectiveness check: a re-evaluation of the task, run after the action was agreed, that
passed. Near misses (no harm) are recorded against a task and counted.

Every step is written to the audit log in the same transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, select

from medmon.alerts import Alert
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, record
from medmon.monitor.models import (
    ClinicianReview,
    CorrectiveAction,
    NearMiss,
    Reevaluation,
    ReevaluationStatus,
    SafetyEvent,
)
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Endpoint, Plan
from medmon.monitor.plan.oversight import SEVERITIES, Safety
from medmon.probes.models import JuryVerdict, ProbeResult

SOURCES = ("review", "incident", "alert", "person")


def clock_for(safety: Safety, severity: str) -> tuple[str, timedelta | None]:
    """The deadline that applies to ``severity`` under the plan's safety section.

    ``('', None)`` means no reporting clock.
    """
    if severity not in SEVERITIES:
        raise ValueError(f"severity: expected one of {', '.join(SEVERITIES)}, got {severity!r}")
    text = safety.clocks.get(severity, "")
    return text, (parse_interval(text) if text else None)


@dataclass(frozen=True)
class ClockState:
    """Where an event stands against its deadline at ``now``."""

    due_at: datetime | None
    remaining: timedelta | None
    state: str  # none | running | due_soon | overdue | stopped

    @property
    def label(self) -> str:
        if self.state == "none":
            return "no reporting clock"
        if self.state == "stopped":
            return "reported"
        assert self.remaining is not None
        hours = self.remaining.total_seconds() / 3600
        span = f"{abs(hours) / 24:.1f} days" if abs(hours) >= 48 else f"{abs(hours):.0f} h"
        return f"overdue by {span}" if self.state == "overdue" else f"{span} left"


def clock_state(event: SafetyEvent, now: datetime, warn_before: timedelta) -> ClockState:
    """The event's clock: stopped once reported (or closed), due soon within ``warn_before`` of its deadline."""
    if event.due_at is None:
        return ClockState(None, None, "none")
    due = event.due_at
    if event.status in ("reported", "closed"):
        return ClockState(due, None, "stopped")
    remaining = due - now
    state = "overdue" if remaining <= timedelta(0) else "due_soon" if remaining <= warn_before else "running"
    return ClockState(due, remaining, state)


def _answer(session: Session, result_id: int) -> dict[str, Any]:
    r = session.get(ProbeResult, result_id)
    if r is None:
        raise GovernanceError(f"answer {result_id} does not exist")
    verdicts = session.exec(
        select(JuryVerdict).where(JuryVerdict.result_id == result_id).order_by(col(JuryVerdict.id))
    ).all()
    reviews = session.exec(
        select(ClinicianReview).where(ClinicianReview.result_id == result_id).order_by(col(ClinicianReview.id))
    ).all()
    return {
        "result_id": r.id,
        "task": r.task_id,
        "canary": r.canary_id,
        "created_at": r.created_at.isoformat(),
        "answer": r.answer,
        "score": r.score,
        "correct": r.correct,
        "jury_mean": r.jury_mean,
        "jury_agreement": r.jury_agreement,
        "served_model": r.served_model,
        "system_fingerprint": r.system_fingerprint,
        "requested_model": r.requested_model,
        "judges": [
            {"judge": v.judge, "criterion": v.criterion, "score": v.score, "explanation": v.explanation}
            for v in verdicts
        ],
        "clinicians": [
            {"reviewer": c.reviewer, "scores": c.scores, "note": c.note, "safety_concern": c.safety_concern}
            for c in reviews
        ],
    }


def freeze_evidence(
    session: Session, deployment: Endpoint, task_id: str, result_ids: list[int], context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What the event rests on, as it stands now: answers (as stored, redacted), scores, model identity."""
    latest = session.exec(
        select(ProbeResult.served_model, ProbeResult.system_fingerprint)
        .where(ProbeResult.task_id == task_id, col(ProbeResult.served_model).is_not(None))
        .order_by(col(ProbeResult.id).desc())
        .limit(1)
    ).first()
    return {
        "task": task_id,
        "deployment": deployment.name,
        "model": {
            "requested": deployment.model,
            "served": latest[0] if latest else None,
            "system_fingerprint": latest[1] if latest else None,
        },
        "answers": [_answer(session, rid) for rid in result_ids],
        "context": context or {},
    }


def open_event(
    session: Session,
    plan: Plan,
    *,
    task_id: str,
    severity: str,
    what_happened: str,
    source: str,
    actor: str,
    now: datetime,
    source_ref: str = "",
    result_ids: list[int] | None = None,
    aware_at: datetime | None = None,
) -> SafetyEvent:
    """Open a safety event with its evidence frozen and its clock started at ``aware_at`` (default now)."""
    if source not in SOURCES:
        raise ValueError(f"source: expected one of {', '.join(SOURCES)}, got {source!r}")
    try:
        plan.task(task_id)
    except KeyError:
        raise GovernanceError(f"task {task_id!r} is not in the plan") from None
    if not what_happened.strip():
        raise ValueError("say what happened: a safety event needs a description")
    clock, span = clock_for(plan.oversight.safety, severity)
    aware = aware_at or now
    context = _alert_context(session, source_ref)
    event = SafetyEvent(
        task_id=task_id,
        severity=severity,
        what_happened=what_happened.strip(),
        source=source,
        source_ref=source_ref,
        opened_by=actor,
        opened_at=now,
        aware_at=aware,
        jurisdiction=plan.oversight.safety.jurisdiction,
        device_status=plan.oversight.safety.device_status,
        clock=clock,
        due_at=aware + span if span is not None else None,
        evidence=freeze_evidence(session, plan.deployment, task_id, list(result_ids or []), context),
    )
    session.add(event)
    session.flush()
    record(
        session,
        AuditKind.safety_event,
        actor,
        f"safety_event:{event.id}",
        {
            "action": "opened",
            "task": task_id,
            "severity": severity,
            "source": source,
            "source_ref": source_ref,
            "clock": clock,
            "due_at": event.due_at,
            "answers": list(result_ids or []),
        },
        now,
    )
    return event


def _alert_context(session: Session, source_ref: str) -> dict[str, Any]:
    """An alert named as the source (``alert:<id>``) is frozen with the event: labels, summary, evidence.

    Incidents are referred to by their reference (``incident:<id>``) as given.
    """
    kind, _, number = source_ref.partition(":")
    if kind != "alert" or not number.strip().isdigit():
        return {}
    alert = session.get(Alert, int(number))
    if alert is None:
        raise GovernanceError(f"{source_ref} does not exist")
    return {
        "alert": {
            "id": alert.id,
            "rule": alert.rule,
            "severity": alert.severity.value,
            "status": alert.status.value,
            "summary": alert.summary,
            "labels": dict(alert.labels),
            "evidence": dict(alert.evidence),
            "starts_at": alert.starts_at.isoformat(),
        }
    }


def open_from_review(session: Session, plan: Plan, review: ClinicianReview, actor: str, now: datetime) -> SafetyEvent:
    """A reviewer's safety flag opens an event, graded 'serious' until an owner re-grades it: the
    clock runs from the flag, the moment the organisation became aware."""
    what = review.note or "A clinician reviewer flagged a safety concern in this answer."
    return open_event(
        session,
        plan,
        task_id=review.task_id,
        severity="serious",
        what_happened=what,
        source="review",
        source_ref=f"review:{review.id}",
        actor=actor,
        now=now,
        result_ids=[review.result_id],
    )


def _event(session: Session, event_id: int) -> SafetyEvent:
    event = session.get(SafetyEvent, event_id)
    if event is None:
        raise GovernanceError(f"safety event {event_id} does not exist")
    return event


def regrade(
    session: Session, plan: Plan, event_id: int, severity: str, reason: str, actor: str, now: datetime
) -> SafetyEvent:
    """Change an event's severity; its deadline is recomputed from the same moment of awareness."""
    event = _event(session, event_id)
    if not reason.strip():
        raise ValueError("a reason is required to re-grade a safety event")
    clock, span = clock_for(plan.oversight.safety, severity)
    previous = event.severity
    event.severity, event.clock = severity, clock
    event.due_at = event.aware_at + span if span is not None else None
    session.add(event)
    record(
        session,
        AuditKind.safety_event,
        actor,
        f"safety_event:{event.id}",
        {"action": "regraded", "from": previous, "to": severity, "reason": reason.strip(), "due_at": event.due_at},
        now,
    )
    return event


def mark_reported(session: Session, event_id: int, reference: str, actor: str, now: datetime) -> SafetyEvent:
    """The event was reported to the authority (its reference recorded): the clock stops."""
    event = _event(session, event_id)
    if not reference.strip():
        raise ValueError("the authority's or incident system's reference is required")
    event.status, event.reported_at, event.report_reference = "reported", now, reference.strip()
    session.add(event)
    record(
        session,
        AuditKind.safety_event,
        actor,
        f"safety_event:{event.id}",
        {"action": "reported", "reference": event.report_reference},
        now,
    )
    return event


def decide(
    session: Session, event_id: int, decision: str, actor: str, now: datetime, *, close: bool = False
) -> SafetyEvent:
    """Record the committee's decision; closing needs every corrective action closed by its check."""
    event = _event(session, event_id)
    if not decision.strip():
        raise ValueError("a decision needs its text")
    if close:
        still_open = [a.id for a in actions_of(session, event_id) if a.status != "closed"]
        if still_open:
            raise GovernanceError(
                f"safety event {event_id} cannot close: corrective action(s) "
                f"{', '.join(f'#{i}' for i in still_open)} have not passed their effectiveness check"
            )
        event.status = "closed"
    event.decision, event.decided_by, event.decided_at = decision.strip(), actor, now
    session.add(event)
    record(
        session,
        AuditKind.safety_event,
        actor,
        f"safety_event:{event.id}",
        {"action": "closed" if close else "decided", "decision": event.decision},
        now,
    )
    return event


def add_action(
    session: Session, event_id: int, description: str, owner: str, due_at: datetime, actor: str, now: datetime
) -> CorrectiveAction:
    """A corrective action with an owner and a due date."""
    event = _event(session, event_id)
    if not description.strip() or not owner.strip():
        raise ValueError("a corrective action needs a description and an owner")
    action = CorrectiveAction(
        event_id=event_id,
        task_id=event.task_id,
        description=description.strip(),
        owner=owner.strip(),
        due_at=due_at,
        created_by=actor,
        created_at=now,
    )
    session.add(action)
    session.flush()
    record(
        session,
        AuditKind.corrective_action,
        actor,
        f"corrective_action:{action.id}",
        {
            "action": "added",
            "event": event_id,
            "description": action.description,
            "owner": action.owner,
            "due_at": due_at,
        },
        now,
    )
    return action


def passing_reevaluation(session: Session, task_id: str, since: datetime) -> Reevaluation | None:
    """The newest re-evaluation of ``task_id`` started at or after ``since`` that passed, if any."""
    rows = session.exec(
        select(Reevaluation)
        .where(
            Reevaluation.task_id == task_id,
            col(Reevaluation.passed).is_(True),
            col(Reevaluation.status).in_([ReevaluationStatus.complete, ReevaluationStatus.approved]),
        )
        .order_by(col(Reevaluation.id).desc())
    ).all()
    return next((r for r in rows if r.started_at >= since), None)


def close_action(session: Session, action_id: int, reevaluation_id: int, actor: str, now: datetime) -> CorrectiveAction:
    """Close an action by its effectiveness check: a passing re-evaluation of its task, run after it was agreed."""
    action = session.get(CorrectiveAction, action_id)
    if action is None:
        raise GovernanceError(f"corrective action {action_id} does not exist")
    check = session.get(Reevaluation, reevaluation_id)
    problem = None
    if check is None:
        problem = f"re-evaluation {reevaluation_id} does not exist"
    elif check.task_id != action.task_id:
        problem = f"re-evaluation {reevaluation_id} is of task {check.task_id}, not {action.task_id}"
    elif check.started_at < action.created_at:
        problem = f"re-evaluation {reevaluation_id} ran before the action was agreed"
    elif check.passed is not True or check.status not in (ReevaluationStatus.complete, ReevaluationStatus.approved):
        problem = f"re-evaluation {reevaluation_id} did not pass ({'; '.join(check.reasons) or check.status.value})"
    if problem is not None:
        raise GovernanceError(f"corrective action {action_id} stays open: {problem}")
    action.status, action.check_reevaluation_id, action.closed_by, action.closed_at = (
        "closed",
        reevaluation_id,
        actor,
        now,
    )
    session.add(action)
    assert check is not None
    record(
        session,
        AuditKind.corrective_action,
        actor,
        f"corrective_action:{action.id}",
        {
            "action": "closed",
            "event": action.event_id,
            "reevaluation": reevaluation_id,
            "estimate": check.estimate,
            "ci_low": check.ci_low,
            "ci_high": check.ci_high,
        },
        now,
    )
    return action


def actions_of(session: Session, event_id: int) -> list[CorrectiveAction]:
    return list(
        session.exec(
            select(CorrectiveAction).where(CorrectiveAction.event_id == event_id).order_by(col(CorrectiveAction.id))
        ).all()
    )


def record_near_miss(session: Session, plan: Plan, task_id: str, what: str, actor: str, now: datetime) -> NearMiss:
    """Something that could have harmed and did not."""
    try:
        plan.task(task_id)
    except KeyError:
        raise GovernanceError(f"task {task_id!r} is not in the plan") from None
    if not what.strip():
        raise ValueError("say what nearly happened")
    miss = NearMiss(task_id=task_id, what=what.strip(), recorded_by=actor, created_at=now)
    session.add(miss)
    session.flush()
    record(
        session,
        AuditKind.near_miss,
        actor,
        f"near_miss:{miss.id}",
        {"task": task_id, "what": miss.what, "result": None},
        now,
    )
    return miss


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def event_document(session: Session, plan: Plan, event_id: int, now: datetime) -> dict[str, Any]:
    """The event as JSON for the hospital's incident system: facts, clock, evidence, decision, actions."""
    event = _event(session, event_id)
    state = clock_state(event, now, parse_interval(plan.oversight.safety.warn_before))
    return {
        "schema": "medmon.safety_event/1",
        "id": event.id,
        "use_case": plan.use_case.name,
        "deployment": plan.deployment.name,
        "task": event.task_id,
        "severity": event.severity,
        "what_happened": event.what_happened,
        "source": event.source,
        "source_ref": event.source_ref,
        "opened_by": event.opened_by,
        "opened_at": _iso(event.opened_at),
        "aware_at": _iso(event.aware_at),
        "regulatory": {
            "jurisdiction": event.jurisdiction,
            "device_status": event.device_status,
            "deadline": event.clock or None,
            "due_at": _iso(event.due_at),
            "clock": state.state,
            "clock_label": state.label,
        },
        "status": event.status,
        "reported_at": _iso(event.reported_at),
        "report_reference": event.report_reference,
        "decision": event.decision,
        "decided_by": event.decided_by,
        "decided_at": _iso(event.decided_at),
        "corrective_actions": [
            {
                "id": a.id,
                "description": a.description,
                "owner": a.owner,
                "due_at": _iso(a.due_at),
                "status": a.status,
                "effectiveness_check": a.check_reevaluation_id,
                "closed_by": a.closed_by,
                "closed_at": _iso(a.closed_at),
            }
            for a in actions_of(session, event_id)
        ],
        "evidence": event.evidence,
    }
