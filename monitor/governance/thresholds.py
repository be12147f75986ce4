"""Threshold approvals: a plan edit proposes thresholds; an owner's recorded decision puts them in force.

Editing a task's thresholds in the plan file (``min_score``, ``tolerated_drop``, budgets, SLOs,
subgroup thresholds) is recorded as a ``threshold_change`` but changes nothing that judges the
task: detection and reports keep the thresholds **in force**, which are the newest approved
ones (a ``threshold_approved`` audit entry) or, before any approval, the ones of the first plan
recorded with the task (the plan the deployment went live with). An owner of the task approves
a proposal with a rationale; lowering the approval minimum (``min_score``) or the subgroup
minimum below what is in force also needs the committee's recorded decision, the rule baseline
approvals follow. The audit log is the only store: what was in force at any moment is read back
from it, so a past period is judged by the thresholds in force then.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.approvals import plan_task, require_approver, require_committee
from medmon.monitor.governance.audit import AuditKind, last_plan_text, plan_thresholds, record
from medmon.monitor.models import AuditEvent
from medmon.monitor.plan.model import Plan, Task, Thresholds

# Which direction makes each threshold easier to meet.
LOOSER_WHEN_LOWER = ("min_score", "min_jury_agreement", "subgroup_min_score")
LOOSER_WHEN_HIGHER = ("tolerated_drop", "cost_budget_per_call", "latency_slo_s", "max_subgroup_gap")
# Loosening these lowers an approval minimum: the committee decides, as for baselines below it.
COMMITTEE_THRESHOLDS = ("min_score", "subgroup_min_score")
log = logging.getLogger("medmon.thresholds")


@dataclass(frozen=True)
class InForce:
    """A task's thresholds in force, and the audit entry they come from."""

    thresholds: dict[str, Any]
    seq: int
    source: str  # "approved" (threshold_approved) or "go-live" (first recorded plan with the task)
    actor: str
    at: datetime


@dataclass(frozen=True)
class ThresholdProposal:
    """One threshold of one task whose recorded plan value is not the value in force."""

    task: str
    threshold: str
    in_force: Any
    proposed: Any
    looser: bool
    plan_seq: int | None  # None: an edit of the plan file not recorded yet (who and when unknown)
    proposed_by: str | None
    proposed_at: datetime | None


def _task_thresholds(text: str, task_id: str) -> dict[str, Any] | None:
    """A task's thresholds as written in a plan text (defaults filled in); None if the task is absent."""
    written = plan_thresholds(text).get(task_id)
    if written is None:
        return None
    try:
        return Thresholds.model_validate(written).model_dump()
    except ValueError:
        return None


def _plans(before: datetime | None, *, newest_first: bool = False) -> Any:
    """The recorded plans (before ``before``), oldest first unless ``newest_first``."""
    query = select(AuditEvent).where(AuditEvent.kind == AuditKind.plan_change.value)
    if before is not None:
        query = query.where(col(AuditEvent.at) < before)
    return query.order_by(col(AuditEvent.seq).desc() if newest_first else col(AuditEvent.seq))


def thresholds_in_force(session: Session, task_id: str, before: datetime | None = None) -> InForce | None:
    """The task's thresholds in force (at ``before``, else now); None when no plan with it is recorded."""
    query = select(AuditEvent).where(AuditEvent.kind == AuditKind.threshold_approved.value,
                                     AuditEvent.subject == f"task:{task_id}")
    if before is not None:
        query = query.where(col(AuditEvent.at) < before)
    approved = session.exec(query.order_by(col(AuditEvent.seq).desc())).first()
    if approved is not None:
        return InForce(dict(approved.details["thresholds"]), approved.seq, "approved", approved.actor, approved.at)
    for event in session.exec(_plans(before)):
        found = _task_thresholds(str(event.details.get("text", "")), task_id)
        if found is not None:
            return InForce(found, event.seq, "go-live", event.actor, event.at)
    return None


def with_thresholds_in_force(session: Session, plan: Plan, before: datetime | None = None) -> Plan:
    """``plan`` with each task's thresholds replaced by those in force (unrecorded tasks keep the file's)."""
    tasks = []
    for task in plan.tasks:
        in_force = thresholds_in_force(session, task.id, before)
        if in_force is not None and in_force.thresholds != task.thresholds.model_dump():
            task = task.model_copy(update={"thresholds": Thresholds.model_validate(in_force.thresholds)})
        tasks.append(task)
    return plan.model_copy(update={"tasks": tasks})


def in_force(engine: Engine, plan: Plan) -> Plan:
    """What the service and workers judge with: ``plan`` with each task's approved thresholds.

    Every task whose file thresholds still await approval is logged, so an operator who edited
    the plan sees why detection did not follow.
    """
    with Session(engine) as session:
        current = with_thresholds_in_force(session, plan)
    for task, used in zip(plan.tasks, current.tasks, strict=True):
        if used.thresholds != task.thresholds:
            log.warning("task %s: the plan's thresholds await an owner's approval (medmon approvals list); "
                        "detection uses the approved ones: %s", task.id, used.thresholds.model_dump(exclude_none=True))
    return current


def loosens(name: str, old: Any, new: Any) -> bool:
    if old is None:
        return False  # a limit where there was none tightens
    if new is None:
        return True  # dropping a limit loosens
    return bool(new < old) if name in LOOSER_WHEN_LOWER else bool(new > old) if name in LOOSER_WHEN_HIGHER else False


def threshold_proposals(session: Session, before: datetime | None = None) -> list[ThresholdProposal]:
    """Every threshold the newest recorded plan sets differently from what is in force, task by task."""
    newest = session.exec(_plans(before, newest_first=True)).first()
    if newest is None:
        return []
    text = str(newest.details.get("text", ""))
    out = []
    for task_id in plan_thresholds(text):
        proposed, in_force = _task_thresholds(text, task_id), thresholds_in_force(session, task_id, before)
        if proposed is None or in_force is None:
            continue
        for name in sorted(set(proposed) | set(in_force.thresholds)):
            old, new = in_force.thresholds.get(name), proposed.get(name)
            if old != new:
                out.append(ThresholdProposal(task_id, name, old, new, loosens(name, old, new), newest.seq,
                                             newest.actor, newest.at))
    return out


def _proposed(proposals: list[ThresholdProposal], name: str) -> float | None:
    return next((p.proposed for p in proposals if p.threshold == name), None)


def approve_thresholds(session: Session, plan: Plan, *, task_id: str, by: str, reason: str | None, now: datetime,
                       committee_decision: str | None = None, details: dict[str, Any] | None = None) -> AuditEvent:
    """Put the recorded plan's proposed thresholds for a task in force: an owner's recorded decision.

    Raises GovernanceError when nothing is proposed, the approver is not an owner of the task,
    there is no rationale, or an approval minimum is lowered without a committee decision.
    """
    task: Task = plan_task(plan, task_id)
    require_approver(plan, task, by, reason)
    proposals = [p for p in threshold_proposals(session) if p.task == task_id]
    if not proposals:
        raise GovernanceError(f"no threshold change of task {task_id!r} awaits approval: the recorded plan's "
                              "thresholds are the ones in force (record an edited plan with 'medmon check' first)")
    in_force = thresholds_in_force(session, task_id)
    assert in_force is not None  # a proposal needs thresholds in force to differ from
    current = task.model_copy(update={"thresholds": Thresholds.model_validate(in_force.thresholds)})
    # The baseline rule: below the approval minimum in force, only with the committee's decision.
    require_committee(current, _proposed(proposals, "min_score"), committee_decision, "proposed min_score")
    lowered = [p for p in proposals if p.threshold in COMMITTEE_THRESHOLDS and p.looser]
    if lowered and not (committee_decision and committee_decision.strip()):
        what = ", ".join(f"{p.threshold} {p.in_force} -> {p.proposed}" for p in lowered)
        raise GovernanceError(f"task {task_id!r}: lowering an approval minimum ({what}) needs the committee's "
                              "decision (--committee-decision, e.g. the minutes' reference)")
    last = last_plan_text(session)
    proposed = _task_thresholds(str(last.details.get("text", "")) if last else "", task_id) or {}
    return record(session, AuditKind.threshold_approved, by, f"task:{task_id}",
                  (details or {}) | {"task": task_id, "thresholds": proposed, "previous": in_force.thresholds,
                   "previous_seq": in_force.seq, "plan_seq": proposals[0].plan_seq,
                   "plan_sha256": last.details.get("sha256") if last else None,
                   "changes": [{"threshold": p.threshold, "old": p.in_force, "new": p.proposed, "looser": p.looser}
                               for p in proposals],
                   "reason": reason, "committee_decision": committee_decision}, now)
