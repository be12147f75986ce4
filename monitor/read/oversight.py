"""What the review queue, the safety page, the Jury page and the committee report read about human oversight."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlmodel import Session, col, func, select

from medmon.monitor.governance.clinician_agreement import latest_agreements
from medmon.monitor.governance.review import iso_week, open_items, reviewed_tasks, reviewer_tasks
from medmon.monitor.governance.safety import ClockState, actions_of, clock_state
from medmon.monitor.governance.suspension import active
from medmon.monitor.models import ClinicianReview, CorrectiveAction, NearMiss, ReviewItem, SafetyEvent, Suspension
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan
from medmon.probes.models import ProbeResult


@dataclass(frozen=True)
class ReviewCard:
    """One queued answer as a reviewer sees it: the prompt, the reference if any, the answer as stored."""

    item_id: int
    task_id: str
    result_id: int
    stratum: str
    prompt: str
    references: tuple[str, ...]
    answer: str
    answered_at: datetime
    open_items: int


_PROMPTS: dict[tuple[str | None, str, str], dict[str, tuple[str, tuple[str, ...]]]] = {}


def _canaries(plan: Plan, task_id: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Prompt and references of each canary of the task, read once per canary source."""
    task = plan.task(task_id)
    key = (task.canaries.pack, str(task.canaries.path), task.benchmark)
    if key not in _PROMPTS:
        _PROMPTS[key] = {c.id: (c.prompt, tuple(c.references)) for c in load_context(plan, task).canaries}
    return _PROMPTS[key]


def next_review(session: Session, plan: Plan, reviewer: str) -> ReviewCard | None:
    """The reviewer's oldest open item on the tasks they are assigned, or None when the queue is empty."""
    items = open_items(session, reviewer, reviewer_tasks(plan.oversight, reviewer))
    for item in items:
        result = session.get(ProbeResult, item.result_id)
        if result is None:
            continue
        prompt, refs = _canaries(plan, item.task_id).get(result.canary_id, ("(canary no longer in the pack)", ()))
        return ReviewCard(
            item.id or 0,
            item.task_id,
            item.result_id,
            item.stratum,
            prompt,
            refs,
            result.answer or "",
            result.created_at,
            len(items),
        )
    return None


@dataclass(frozen=True)
class AgreementRow:
    """The latest point of one validation stream."""

    task_id: str
    criterion: str
    statistic: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    at: datetime


def agreement_table(session: Session, task_ids: list[str] | None = None) -> list[AgreementRow]:
    """The newest point of every (task, criterion, statistic) stream."""
    return [
        AgreementRow(r.task_id, r.criterion, r.statistic, r.value, r.ci_low, r.ci_high, r.n, r.created_at)
        for r in latest_agreements(session, task_ids=task_ids)
    ]


@dataclass(frozen=True)
class ReviewProgress:
    """Answers queued and fully rated this week against the quota (answers, not ratings), for one task."""

    task_id: str
    queued: int
    done: int
    quota: int
    flagged: int


def review_progress(session: Session, plan: Plan, at: datetime) -> list[ReviewProgress]:
    """Per reviewed task: answers queued and rated in the ISO week of ``at``, the quota, safety flags."""
    week = iso_week(at)
    out = []
    for task in reviewed_tasks(plan):
        quota = plan.oversight.review.quota(task.id)
        # Answers, not items: a double-reviewed answer counts once against the quota.
        queued = session.exec(
            select(func.count(func.distinct(ReviewItem.result_id))).where(
                ReviewItem.task_id == task.id, ReviewItem.week == week
            )
        ).one()
        open_answers = session.exec(
            select(func.count(func.distinct(ReviewItem.result_id))).where(
                ReviewItem.task_id == task.id, ReviewItem.week == week, ReviewItem.status == "open"
            )
        ).one()
        flagged = session.exec(
            select(func.count())
            .select_from(ClinicianReview)
            .join(ReviewItem, col(ReviewItem.id) == col(ClinicianReview.item_id))
            .where(ReviewItem.task_id == task.id, ReviewItem.week == week, col(ClinicianReview.safety_concern))
        ).one()
        out.append(ReviewProgress(task.id, int(queued), int(queued) - int(open_answers), quota, int(flagged)))
    return out


@dataclass(frozen=True)
class EventRow:
    event: SafetyEvent
    clock: ClockState
    actions: list[CorrectiveAction] = field(default_factory=list)


def safety_events(session: Session, plan: Plan, now: datetime) -> list[EventRow]:
    """Safety events, newest first, with their clock at ``now`` and their corrective actions."""
    warn = parse_interval(plan.oversight.safety.warn_before)
    return [
        EventRow(e, clock_state(e, now, warn), actions_of(session, e.id or 0))
        for e in session.exec(select(SafetyEvent).order_by(col(SafetyEvent.id).desc())).all()
    ]


def near_misses(session: Session) -> list[NearMiss]:
    """Near misses recorded against any task, newest first."""
    return list(session.exec(select(NearMiss).order_by(col(NearMiss.id).desc())).all())


def suspensions(session: Session, limit: int = 50) -> list[Suspension]:
    """Every suspension (pending, in force, failed, resumed), newest first."""
    return list(session.exec(select(Suspension).order_by(col(Suspension.id).desc()).limit(limit)).all())


def suspended_tasks(session: Session) -> dict[str, Suspension]:
    """Tasks suspended or awaiting a second owner's confirmation: what every page warns about."""
    return {s.task_id: s for s in active(session)}
