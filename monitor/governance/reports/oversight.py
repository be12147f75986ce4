"""The committee report's human-oversight section: reviews against quota, the jury's validation
against clinicians (beside MedHELM's published ICC), safety events with their clocks, corrective
actions with their effectiveness checks, near misses and suspensions, over one period."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, func, select

from medmon.monitor.governance.clinician_agreement import latest_agreements
from medmon.monitor.governance.reports.clinician_scale import clinician_scale_rows
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.governance.review import reviewed_tasks
from medmon.monitor.governance.safety import actions_of, clock_state
from medmon.monitor.models import ClinicianReview, NearMiss, SafetyEvent, Suspension
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.oversight import MEDHELM_CLINICIAN_ICC, MEDHELM_JURY_ICC


@dataclass
class OversightSection:
    reviews: list[dict[str, Any]] = field(default_factory=list)  # per task: done, quota, flagged
    agreement: list[dict[str, Any]] = field(default_factory=list)  # latest point per stream before the end
    events: list[dict[str, Any]] = field(default_factory=list)
    near_misses: dict[str, int] = field(default_factory=dict)
    suspensions: list[dict[str, Any]] = field(default_factory=list)
    medhelm_jury_icc: float = MEDHELM_JURY_ICC
    medhelm_clinician_icc: float = MEDHELM_CLINICIAN_ICC
    clinician_scale: dict[str, Any] = field(default_factory=dict)  # medmon.monitor.governance.reports.clinician_scale

    def summary(self) -> dict[str, Any]:
        return asdict(self)


def _in(column: Any, period: Period) -> Any:
    return (col(column) >= period.start) & (col(column) < period.end)


def _reviews(session: Session, plan: Plan, period: Period) -> list[dict[str, Any]]:
    weeks = max(1, math.ceil((period.end - period.start).days / 7))
    out = []
    for task in reviewed_tasks(plan):
        quota = plan.oversight.review.quota(task.id)
        where = (ClinicianReview.task_id == task.id) & _in(ClinicianReview.created_at, period)
        answers, ratings = session.exec(
            select(func.count(func.distinct(ClinicianReview.result_id)), func.count()).where(where)
        ).one()
        flagged = session.exec(
            select(func.count()).select_from(ClinicianReview).where(where, col(ClinicianReview.safety_concern))
        ).one()
        out.append(
            {
                "task": task.id,
                "done": int(answers),
                "ratings": int(ratings),
                "quota": quota * weeks,
                "flagged": int(flagged),
            }
        )
    return out


def _floor(plan: Plan, statistic: str) -> float | None:
    floors = plan.oversight.agreement
    if statistic.startswith("bias["):
        return floors.max_judge_bias
    return {"jury_icc": floors.min_icc, "jury_alpha": floors.min_alpha, "reviewer_icc": floors.min_reviewer_icc}.get(
        statistic
    )


def _below(statistic: str, value: float | None, low: float | None, high: float | None, floor: float | None) -> bool:
    """Whether the stream stands where its alert fires (see ``medmon.monitor.alerting.oversight``)."""
    if value is None or floor is None:
        return False
    if statistic.startswith("bias["):
        return low is not None and high is not None and (low > floor or high < -floor)
    return (high if high is not None else value) < floor


def _agreement(session: Session, plan: Plan, period: Period) -> list[dict[str, Any]]:
    rows = latest_agreements(session, before=period.end)
    return [
        {
            "task": r.task_id,
            "criterion": r.criterion,
            "statistic": r.statistic,
            "value": r.value,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "n": r.n,
            "at": r.created_at,
            "floor": _floor(plan, r.statistic),
            "below": _below(r.statistic, r.value, r.ci_low, r.ci_high, _floor(plan, r.statistic)),
        }
        for r in rows
    ]


def _events(session: Session, plan: Plan, period: Period, now: datetime) -> list[dict[str, Any]]:
    warn = parse_interval(plan.oversight.safety.warn_before)
    rows = session.exec(
        select(SafetyEvent)
        .where(
            (col(SafetyEvent.opened_at) < period.end)
            & ((col(SafetyEvent.opened_at) >= period.start) | (col(SafetyEvent.status) != "closed"))
        )
        .order_by(col(SafetyEvent.id))
    ).all()
    out = []
    for e in rows:
        state = clock_state(e, now, warn)
        out.append(
            {
                "id": e.id,
                "task": e.task_id,
                "severity": e.severity,
                "status": e.status,
                "what": e.what_happened,
                "source": e.source_ref or e.source,
                "opened_at": e.opened_at,
                "deadline": e.clock,
                "due_at": state.due_at,
                "clock": state.label,
                "clock_state": state.state,
                "reported_at": e.reported_at,
                "decision": e.decision,
                "actions": [
                    {
                        "id": a.id,
                        "description": a.description,
                        "owner": a.owner,
                        "due_at": a.due_at,
                        "status": a.status,
                        "check": a.check_reevaluation_id,
                    }
                    for a in actions_of(session, e.id or 0)
                ],
            }
        )
    return out


def build_oversight_section(session: Session, plan: Plan, period: Period, now: datetime) -> OversightSection:
    """Every human-oversight figure of the period (safety clocks as they stand at ``now``)."""
    misses = dict(
        session.exec(
            select(NearMiss.task_id, func.count()).where(_in(NearMiss.created_at, period)).group_by(NearMiss.task_id)
        ).all()
    )
    held = session.exec(
        select(Suspension).where(_in(Suspension.requested_at, period)).order_by(col(Suspension.id))
    ).all()
    return OversightSection(
        reviews=_reviews(session, plan, period),
        agreement=_agreement(session, plan, period),
        events=_events(session, plan, period, now),
        near_misses={k: int(v) for k, v in misses.items()},
        clinician_scale=clinician_scale_rows(session, plan, now),
        suspensions=[
            {
                "id": s.id,
                "task": s.task_id,
                "status": s.status,
                "reason": s.reason,
                "requested_by": s.requested_by,
                "confirmed_by": s.confirmed_by,
                "suspended_at": s.suspended_at,
                "resumed_at": s.resumed_at,
                "basis": s.resume_basis,
                "error": s.route_error,
            }
            for s in held
        ],
    )
