"""Threshold approvals: a plan edit proposes thresholds; an owner's recorded decision puts them in force.

Editing a task's thresholds in the plan file (``min_score``, ``tolerated_drop``, budgets, SLOs,
subgroup thresholds) is recorded as a ``threshold_change`` but changes nothing that judges the
task: detection and reports keep the thresholds **in force**, which are the newest approved
ones (a ``threshold_approved`` audit entry) or, before any approval, the ones of the first plan
recorded with the task (the plan the deployment went live with). An owner of the task approves
a proposal with a rationale; lowering the approval minimum (``min_score``) or the subgroup
minimum below what is in force also needs the committee's recorded decision, the rule baseline
approvals follow. The audit log is the only store: what was in force at any moment is read back
from it (``medmon.monitor.governance.effective``), so a past period is judged by the thresholds in
force then.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.approvals import plan_task, require_approver, require_committee
from medmon.monitor.governance.audit import AuditKind, last_plan_text, record
from medmon.monitor.governance.effective import (
    ThresholdProposal,
    threshold_proposals,
    thresholds_in_force,
    with_thresholds_in_force,
    written_thresholds,
)
from medmon.monitor.governance.identity import require_proof
from medmon.monitor.models import AuditEvent
from medmon.monitor.plan.model import Plan, Task, Thresholds

# Loosening these lowers an approval minimum: the committee decides, as for baselines below it.
COMMITTEE_THRESHOLDS = ("min_score", "subgroup_min_score")
log = logging.getLogger("medmon.thresholds")


def in_force(engine: Engine, plan: Plan) -> Plan:
    """What the service and workers judge with: ``plan`` with each task's approved thresholds.

    Every task whose file thresholds still await approval is logged, so an operator who edited
    the plan sees why detection did not follow.
    """
    with Session(engine) as session:
        current = with_thresholds_in_force(session, plan)
    for task, used in zip(plan.tasks, current.tasks, strict=True):
        if used.thresholds != task.thresholds:
            log.warning(
                "task %s: the plan's thresholds await an owner's approval (medmon approvals list); "
                "detection uses the ones in force: %s",
                task.id,
                used.thresholds.model_dump(exclude_none=True),
            )
    return current


def _proposed(proposals: list[ThresholdProposal], name: str) -> float | None:
    return next((p.proposed for p in proposals if p.threshold == name), None)


def approve_thresholds(
    session: Session,
    plan: Plan,
    *,
    task_id: str,
    by: str,
    reason: str | None,
    now: datetime,
    committee_decision: str | None = None,
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Put the recorded plan's proposed thresholds for a task in force: an owner's recorded decision.

    ``details`` prove who approves (``medmon.monitor.governance.identity``): a sign-in or a key.
    Raises GovernanceError when nothing is proposed, the approver is not an owner of the task or
    proved nothing, there is no rationale, or an approval minimum is lowered without a committee decision.
    """
    task: Task = plan_task(plan, task_id)
    require_approver(plan, task, by, reason)
    require_proof(details, "approving thresholds")
    proposals = [p for p in threshold_proposals(session) if p.task == task_id]
    if not proposals:
        raise GovernanceError(
            f"no threshold change of task {task_id!r} awaits approval: the recorded plan's "
            "thresholds are the ones in force (record an edited plan with 'medmon check' first)"
        )
    in_force = thresholds_in_force(session, task_id)
    assert in_force is not None  # a proposal needs thresholds in force to differ from
    current = task.model_copy(update={"thresholds": Thresholds.model_validate(in_force.thresholds)})
    # The baseline rule: below the approval minimum in force, only with the committee's decision.
    require_committee(current, _proposed(proposals, "min_score"), committee_decision, "proposed min_score")
    lowered = [p for p in proposals if p.threshold in COMMITTEE_THRESHOLDS and p.looser]
    if lowered and not (committee_decision and committee_decision.strip()):
        what = ", ".join(f"{p.threshold} {p.in_force} -> {p.proposed}" for p in lowered)
        raise GovernanceError(
            f"task {task_id!r}: lowering an approval minimum ({what}) needs the committee's "
            "decision (--committee-decision, e.g. the minutes' reference)"
        )
    last = last_plan_text(session)
    proposed = written_thresholds(str(last.details.get("text", "")) if last else "", task_id) or {}
    return record(
        session,
        AuditKind.threshold_approved,
        by,
        f"task:{task_id}",
        (details or {})
        | {
            "task": task_id,
            "thresholds": proposed,
            "previous": in_force.thresholds,
            "previous_seq": in_force.seq,
            "plan_seq": proposals[0].plan_seq,
            "plan_sha256": last.details.get("sha256") if last else None,
            "changes": [
                {"threshold": p.threshold, "old": p.in_force, "new": p.proposed, "looser": p.looser} for p in proposals
            ],
            "reason": reason,
            "committee_decision": committee_decision,
        },
        now,
    )
