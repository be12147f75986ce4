"""Approvals: evidence becomes a task's baseline only by an owner's recorded decision.

An imported baseline is a *proposal* until an owner approves it for a task; the task keeps the
baseline in force meanwhile (``medmon.monitor.governance.effective``). Every
approval names the approver (an owner of the task, as the plan says) and the rationale, and
approving evidence below the task's approved minimum (``min_score`` in force) also needs the committee
decision that allows it. The pin and its audit entry are written in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.baselines import Baseline
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, record
from medmon.monitor.governance.effective import effective_task
from medmon.monitor.governance.identity import require_proof
from medmon.monitor.plan.context import current_pin, pin_baseline
from medmon.monitor.plan.model import Plan, Task

APPROVED = "approved"
PROPOSAL_SOURCES = ("helm", "manual")


def owners_of(plan: Plan, task: Task) -> list[str]:
    """Who may approve evidence for a task: its owner and the use case's clinical owner."""
    emails = [task.owner.email] if task.owner is not None else []
    emails.append(plan.owners.clinical.email)
    return list(dict.fromkeys(e.lower() for e in emails))


def plan_task(plan: Plan, task_id: str) -> Task:
    try:
        return plan.task(task_id)
    except KeyError:
        raise GovernanceError(f"task {task_id!r} is not in the plan") from None


def require_approver(plan: Plan, task: Task, by: str, rationale: str | None) -> None:
    """Refuse anyone but an owner of the task, and an approval without a rationale."""
    allowed = owners_of(plan, task)
    if by.strip().lower() not in allowed:
        raise GovernanceError(f"{by} is not an owner of task {task.id!r}; approval needs one of: {', '.join(allowed)}")
    if not (rationale and rationale.strip()):
        raise GovernanceError("an approval needs a rationale (--reason): it is kept in the audit log")


def require_committee(task: Task, value: float | None, committee_decision: str | None, what: str) -> None:
    """Evidence below the approval minimum needs the committee's recorded decision."""
    if (
        value is not None
        and value < task.thresholds.min_score
        and not (committee_decision and committee_decision.strip())
    ):
        raise GovernanceError(
            f"{what} {value:.3f} is below the approval minimum {task.thresholds.min_score:.3f} "
            f"of task {task.id!r}: approving it needs the committee's decision "
            "(--committee-decision, e.g. the minutes' reference)"
        )


def approve_baseline(
    session: Session,
    plan: Plan,
    *,
    task_id: str,
    baseline_id: int,
    by: str,
    reason: str | None,
    now: datetime,
    committee_decision: str | None = None,
    details: dict[str, Any] | None = None,
) -> Baseline:
    """Pin a task to a stored (imported) baseline: an owner's proven, recorded decision (``details``)."""
    task = plan_task(plan, task_id)
    baseline = session.get(Baseline, baseline_id)
    if baseline is None:
        raise GovernanceError(f"no baseline with id {baseline_id} (see 'medmon baseline list')")
    if baseline.benchmark != task.benchmark:
        raise GovernanceError(
            f"baseline {baseline_id} is for benchmark {baseline.benchmark!r}; task {task_id!r} "
            f"measures {task.benchmark!r}"
        )
    require_approver(plan, task, by, reason)
    require_proof(details, "approving a baseline")
    current = effective_task(session, plan, task)  # the approved minimum, not a plan edit awaiting approval
    require_committee(current.task, baseline.normalized, committee_decision, f"baseline {baseline_id}'s value")
    previous = current.baseline.baseline
    if previous is not None and previous.id == baseline.id:
        raise GovernanceError(f"task {task_id!r} is already compared with baseline {baseline_id}")
    pin_baseline(session, task.id, baseline, source=APPROVED, actor=by, rationale=str(reason), now=now)
    record(
        session,
        AuditKind.baseline_approved,
        by,
        f"task:{task_id}",
        {
            "baseline_id": baseline.id,
            "previous_baseline_id": previous.id if previous else None,
            "benchmark": baseline.benchmark,
            "model": baseline.model,
            "metric": baseline.metric,
            "version": baseline.version,
            "value": baseline.value,
            "normalized": baseline.normalized,
            "n": baseline.n,
            "source_kind": baseline.source_kind,
            "reason": reason,
            "committee_decision": committee_decision,
        }
        | dict(details or {}),
        now,
    )
    baseline.approved_by = by
    session.add(baseline)
    session.flush()
    return baseline


@dataclass(frozen=True)
class Proposal:
    """Imported evidence for a task's benchmark that no owner has approved for the task."""

    task: str
    baseline_id: int
    benchmark: str
    model: str
    metric: str
    version: int
    normalized: float
    n: int
    imported_at: datetime
    current_baseline_id: int | None


def baseline_proposals(session: Session, plan: Plan, *, before: datetime | None = None) -> list[Proposal]:
    """Imports newer than each task's pin that differ from it: decisions the committee is asked for.

    Tasks with inline plan figures take none (the plan is their approved record).
    """
    out = []
    for task in plan.tasks:
        if task.baseline.value is not None:
            continue
        pin = current_pin(session, task.id, before)
        query = select(Baseline).where(
            Baseline.benchmark == task.benchmark, col(Baseline.source_kind).in_(PROPOSAL_SOURCES)
        )
        if task.baseline.metric:
            query = query.where(Baseline.metric == task.baseline.metric)
        if pin is not None:
            query = query.where(col(Baseline.imported_at) > pin.pinned_at, Baseline.id != pin.baseline_id)
        if before is not None:
            query = query.where(col(Baseline.imported_at) < before)
        for b in session.exec(query.order_by(col(Baseline.imported_at), col(Baseline.id))).all():
            assert b.id is not None
            out.append(
                Proposal(
                    task.id,
                    b.id,
                    b.benchmark,
                    b.model,
                    b.metric,
                    b.version,
                    b.normalized,
                    b.n,
                    b.imported_at,
                    pin.baseline_id if pin is not None else None,
                )
            )
    return out
