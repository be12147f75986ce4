"""Go-live as a recorded act: the plan, its risk tier, each task's thresholds and baseline, approved by a proven person.

Until a ``go_live_approved`` entry by a proven actor (``medmon.monitor.governance.identity``)
is in the audit log, every surface says "not yet approved": the first recorded plan's
thresholds still judge the tasks, but nobody approved them. The entry freezes what was
approved (the recorded plan's seq and SHA-256, the risk tier, each task's thresholds and the
baseline in force, with who pinned it); a plan recorded after it is "changed since go-live
approval" until an owner approves that change too (thresholds by ``medmon approvals
thresholds``, a whole new plan by approving go-live again).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, last_plan_text, record
from medmon.monitor.governance.effective import written_thresholds
from medmon.monitor.governance.identity import counts, proof_words
from medmon.monitor.models import AuditEvent
from medmon.monitor.plan.context import baseline_in_force
from medmon.monitor.plan.model import Plan

NOT_YET = "not yet approved"


def go_live_approvers(plan: Plan) -> list[str]:
    """Who may approve go-live: the clinical owner and the plan's named approver."""
    emails = [plan.owners.clinical.email]
    if plan.governance is not None and plan.governance.approval is not None:
        emails.append(plan.governance.approval.approved_by.email)
    return list(dict.fromkeys(e.lower() for e in emails))


def go_live_facts(session: Session, plan: Plan) -> dict[str, Any]:
    """What a go-live approval covers, read from the record: the recorded plan, risk tier, thresholds, baselines."""
    last = last_plan_text(session)
    if last is None:
        raise GovernanceError("no plan is recorded yet: run 'medmon check PLAN' first, then approve what it recorded")
    text = str(last.details.get("text", ""))
    tasks: dict[str, Any] = {}
    for task in plan.tasks:
        thresholds = written_thresholds(text, task.id)
        if thresholds is None:
            raise GovernanceError(f"task {task.id!r} is not in the recorded plan (seq {last.seq}): record it first")
        found = baseline_in_force(session, plan, task)
        b = found.baseline
        tasks[task.id] = {
            "thresholds": thresholds,
            "baseline_id": b.id if b is not None else None,
            "baseline_value": b.normalized if b is not None else None,
            "baseline_model": b.model if b is not None else None,
        }
    return {
        "plan_seq": last.seq,
        "plan_sha256": last.details.get("sha256"),
        "risk_tier": plan.use_case.risk_tier.value,
        "tasks": tasks,
    }


def approve_go_live(
    session: Session, plan: Plan, *, by: str, reason: str | None, details: dict[str, Any], now: datetime
) -> AuditEvent:
    """Record the go-live approval; ``details`` must show a proven identity (a sign-in or a registered key)."""
    if not counts(details):
        raise GovernanceError("go-live approval needs a proven identity: sign with --key, or approve after sign-in")
    allowed = go_live_approvers(plan)
    if by.strip().lower() not in allowed:
        raise GovernanceError(f"{by} may not approve go-live; the plan names: {', '.join(allowed)}")
    if not (reason and reason.strip()):
        raise GovernanceError("a go-live approval needs a rationale (--reason), e.g. the committee minute")
    facts = go_live_facts(session, plan)
    return record(
        session, AuditKind.go_live_approved, by, "deployment:go-live", facts | {"reason": reason} | details, now
    )


@dataclass(frozen=True)
class GoLiveStatus:
    """Whether go-live was approved by a proven act, by whom, and whether the plan changed since."""

    approved: bool
    seq: int | None = None
    by: str | None = None
    at: datetime | None = None
    proof: str | None = None
    plan_seq: int | None = None
    current_plan_seq: int | None = None
    unproven_claims: int = 0

    @property
    def plan_changed_since(self) -> bool:
        return self.approved and self.current_plan_seq is not None and self.current_plan_seq != self.plan_seq

    @property
    def words(self) -> str:
        """The status as every surface says it."""
        claims = (
            f"; {self.unproven_claims} claim(s) without proof of identity not counted" if self.unproven_claims else ""
        )
        if not self.approved:
            return f"go-live {NOT_YET}: no proven go-live approval is recorded{claims}"
        when = f" on {self.at:%Y-%m-%d}" if self.at else ""
        changed = (
            f"; the plan changed since (recorded plan seq {self.current_plan_seq}): that change is {NOT_YET}"
            if self.plan_changed_since
            else ""
        )
        where = f"audit seq {self.seq}, plan seq {self.plan_seq}"
        return f"go-live approved by {self.by}{when} ({self.proof}; {where}){changed}{claims}"


def go_live_status(session: Session, before: datetime | None = None) -> GoLiveStatus:
    """The go-live record at ``before`` (else now), read without writing."""
    query = select(AuditEvent).where(
        col(AuditEvent.kind).in_([AuditKind.go_live_approved.value, AuditKind.unproven_act.value])
    )
    if before is not None:
        query = query.where(col(AuditEvent.at) < before)
    approved: AuditEvent | None = None
    claims = 0
    for e in session.exec(query.order_by(col(AuditEvent.seq))):
        if e.kind == AuditKind.go_live_approved.value and counts(e.details):
            approved = e
        elif e.kind == AuditKind.unproven_act.value and e.details.get("act") == AuditKind.go_live_approved.value:
            claims += 1
    plans = select(AuditEvent.seq).where(AuditEvent.kind == AuditKind.plan_change.value)
    if before is not None:
        plans = plans.where(col(AuditEvent.at) < before)
    current = session.exec(plans.order_by(col(AuditEvent.seq).desc())).first()
    if approved is None:
        return GoLiveStatus(False, current_plan_seq=current, unproven_claims=claims)
    return GoLiveStatus(
        True,
        approved.seq,
        approved.actor,
        approved.at,
        proof_words(approved.details),
        approved.details.get("plan_seq"),
        current,
        claims,
    )
