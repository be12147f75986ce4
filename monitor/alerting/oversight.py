"""Human-oversight signals: the review queue filled, the jury's validation against clinicians, safety clocks.

Runs inside every alert pass. It queues this week's review sample, recomputes a task's agreement
streams only when new clinician reviews arrived since their last point, and turns them into
signals against the plan's floors: ``jury_not_validated`` when the jury no longer stands in for
clinicians (ICC's whole interval under its floor, or alpha under its floor), ``judge_bias`` when
one judge's bias against clinicians lies wholly beyond the tolerance. Safety events raise
``safety_clock`` from ``warn_before`` ahead of their deadline, then ``safety_deadline_passed``
(always critical) once it has passed, until they are reported; a corrective action open past its
due date raises ``corrective_action_overdue``. Under active selection each reviewed task's
clinician-scale stream (``medmon.monitor.alerting.clinician_scale``) takes the settled answers and
raises ``clinician_scale_drop``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from sqlmodel import Session, col, func, select

from medmon.alerts import Rule, Severity, Signal, Subject, record_signals
from medmon.moments import display_time
from medmon.monitor.alerting.clinician_scale import clinician_scale_signals
from medmon.monitor.alerting.signals import task_subject, transitions
from medmon.monitor.governance.clinician_agreement import Agreement, record_agreement, task_agreement
from medmon.monitor.governance.review import queue_reviews, reviewed_tasks, rubric
from medmon.monitor.governance.safety import clock_state
from medmon.monitor.models import AgreementRecord, ClinicianReview, CorrectiveAction, SafetyEvent
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan

FLOORED = {"jury_icc": "min_icc", "jury_alpha": "min_alpha", "reviewer_icc": "min_reviewer_icc"}
_NAMES = {
    "jury_icc": "jury-clinician ICC",
    "jury_alpha": "jury-clinician alpha",
    "reviewer_icc": "reviewer-reviewer ICC",
}


def _stale(session: Session, task_id: str) -> bool:
    """Whether reviews arrived since the task's latest agreement point (or it has none yet)."""
    newest = session.exec(select(func.max(ClinicianReview.created_at)).where(ClinicianReview.task_id == task_id)).one()
    if newest is None:
        return False
    last = session.exec(select(func.max(AgreementRecord.created_at)).where(AgreementRecord.task_id == task_id)).one()
    return last is None or newest >= last


def floor_signal(subject: Subject, stat: Agreement, floor: float) -> Signal | None:
    """ICC fires when its whole interval is under the floor and clears at the floor; alpha on its value."""
    if stat.value is None:
        return None
    metric = f"{stat.statistic}:{stat.criterion}"
    name = _NAMES.get(stat.statistic, stat.statistic)
    evidence = {"estimate": stat.value, "ci_low": stat.ci_low, "ci_high": stat.ci_high, "n": stat.n, "floor": floor}
    upper = stat.ci_high if stat.ci_high is not None else stat.value
    if upper < floor:
        span = f" (95% CI {stat.ci_low:.2f} to {stat.ci_high:.2f})" if stat.ci_high is not None else ""
        return subject.signal(
            Rule.jury_not_validated,
            metric,
            firing=True,
            evidence=evidence,
            summary=f"{subject.name}: {name} on {stat.criterion} is {stat.value:.2f}{span}, n={stat.n}, "
            f"below the floor {floor:.2f}: the jury no longer stands in for clinicians",
        )
    if stat.value >= floor:
        return subject.signal(
            Rule.jury_not_validated,
            metric,
            firing=False,
            evidence=evidence,
            summary=f"{subject.name}: {name} on {stat.criterion} is back at {stat.value:.2f}",
        )
    return None


def bias_signal(subject: Subject, stat: Agreement, tolerance: float) -> Signal | None:
    if stat.value is None or stat.ci_low is None or stat.ci_high is None:
        return None
    judge = stat.statistic.removeprefix("bias[").removesuffix("]")
    metric = f"{stat.statistic}:{stat.criterion}"
    evidence = {
        "estimate": stat.value,
        "ci_low": stat.ci_low,
        "ci_high": stat.ci_high,
        "n": stat.n,
        "tolerance": tolerance,
    }
    if stat.ci_low > tolerance or stat.ci_high < -tolerance:
        way = "more lenient" if stat.value > 0 else "more severe"
        return subject.signal(
            Rule.judge_bias,
            metric,
            firing=True,
            evidence=evidence,
            summary=f"{subject.name}: judge {judge} scores {stat.criterion} {abs(stat.value):.2f} "
            f"points {way} than clinicians (95% CI {stat.ci_low:+.2f} to {stat.ci_high:+.2f}, "
            f"n={stat.n}; tolerated {tolerance:.2f})",
        )
    if abs(stat.value) <= tolerance:
        return subject.signal(
            Rule.judge_bias,
            metric,
            firing=False,
            evidence=evidence,
            summary=f"{subject.name}: judge {judge} is back within {tolerance:.2f} of clinicians",
        )
    return None


def agreement_signals(session: Session, plan: Plan, now: datetime) -> list[Signal]:
    """Recompute the validation streams of tasks with new reviews; their signals against the floors."""
    floors = plan.oversight.agreement
    _, low, high = rubric(plan.jury)
    out: list[Signal] = []
    for task in plan.tasks:
        if not _stale(session, task.id):
            continue
        stats = task_agreement(session, task.id, window=floors.window, scale=(low, high), min_items=floors.min_items)
        record_agreement(session, stats, now)
        subject = task_subject(plan, task)
        for stat in stats:
            floor = getattr(floors, FLOORED[stat.statistic]) if stat.statistic in FLOORED else None
            if floor is not None:
                signal = floor_signal(subject, stat, floor)
            elif stat.statistic.startswith("bias[") and floors.max_judge_bias is not None:
                signal = bias_signal(subject, stat, floors.max_judge_bias)
            else:
                signal = None
            if signal is not None:
                out.append(signal)
    return out


def safety_clock_signals(session: Session, plan: Plan, now: datetime) -> list[Signal]:
    """Per event with a clock: ``safety_clock`` within ``warn_before`` of the deadline,
    ``safety_deadline_passed`` after it."""
    warn = parse_interval(plan.oversight.safety.warn_before)
    events = session.exec(select(SafetyEvent).where(col(SafetyEvent.due_at).is_not(None))).all()
    known = {t.id: t for t in plan.tasks}
    out = []
    for event in events:
        task = known.get(event.task_id)
        if task is None:
            continue
        state = clock_state(event, now, warn)
        subject = task_subject(plan, task)
        subject = replace(subject, dashboard_url=f"{plan.alerts.dashboard_url}/safety?event={event.id}")
        metric = f"safety_event:{event.id}"
        evidence = {
            "event": event.id,
            "severity": event.severity,
            "deadline": event.clock,
            "due_at": state.due_at.isoformat() if state.due_at else None,
            "clock": state.state,
        }
        soon, late = state.state == "due_soon", state.state == "overdue"
        words = (
            f"{subject.name}: safety event #{event.id} ({event.severity}) must be reported by "
            f"{display_time(state.due_at)} ({state.label}; {event.jurisdiction}, {event.device_status})"
            if state.due_at is not None
            else ""
        )
        done = f"{subject.name}: safety event #{event.id} " + (
            "reported" if state.state == "stopped" else "not due yet"
        )
        out.append(
            subject.signal(Rule.safety_clock, metric, firing=soon, evidence=evidence, summary=words if soon else done)
        )
        out.append(
            replace(subject, severity=Severity.critical).signal(
                Rule.safety_deadline_passed, metric, firing=late, evidence=evidence, summary=words if late else done
            )
        )
    return out


def action_signals(session: Session, plan: Plan, now: datetime) -> list[Signal]:
    """``corrective_action_overdue`` while an action is open past its due date; cleared once its check passes."""
    known = {t.id: t for t in plan.tasks}
    out = []
    for action in session.exec(select(CorrectiveAction)).all():
        task = known.get(action.task_id)
        if task is None:
            continue
        late = action.status != "closed" and action.due_at < now
        subject = replace(task_subject(plan, task), dashboard_url=f"{plan.alerts.dashboard_url}/safety")
        summary = (
            f"{subject.name}: corrective action #{action.id} of safety event #{action.event_id} "
            f"({action.description}; owner {action.owner}) was due {action.due_at:%Y-%m-%d} and has "
            "no passing effectiveness check"
            if late
            else f"{subject.name}: corrective action #{action.id} {action.status}"
        )
        out.append(
            subject.signal(
                Rule.corrective_action_overdue,
                f"corrective_action:{action.id}",
                firing=late,
                summary=summary,
                evidence={"event": action.event_id, "owner": action.owner, "due_at": action.due_at.isoformat()},
            )
        )
    return out


def oversight_pass(session: Session, plan: Plan, now: datetime) -> list[Signal]:
    """Queue reviews, then record the signals that change an alert; the alert pass notifies."""
    if reviewed_tasks(plan):
        queue_reviews(session, plan, now)
    signals = transitions(
        session,
        agreement_signals(session, plan, now)
        + clinician_scale_signals(session, plan, now)
        + safety_clock_signals(session, plan, now)
        + action_signals(session, plan, now),
    )
    record_signals(session, signals, now, window=parse_interval(plan.alerts.correlation_window))
    return signals
