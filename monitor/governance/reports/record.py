"""What a report stands on, taken from the record rather than from today's files.

A committee report for a past period must say what was true then: the plan in force (the
newest plan recorded in the audit log before the period ended, by audit sequence), each task's
baseline in force (the newest pin before the end, by baseline id), and nothing edited since.
A plan file that differs from the recorded plan is flagged, never silently used. The report's
figures are hashed (canonical JSON), the hash is printed in the report, and generating and
signing a report are audit entries carrying that hash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.baselines import Baseline
from medmon.db import as_utc
from medmon.monitor.errors import GovernanceError, MedmonError
from medmon.monitor.governance.approvals import owners_of
from medmon.monitor.governance.audit import AuditKind, canonical, list_events, record
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.models import AuditEvent
from medmon.monitor.plan.context import current_pin, load_context, pin_fits, task_baseline
from medmon.monitor.plan.model import Plan, Task, parse_plan_at


@dataclass
class PlanInForce:
    """The plan a period is judged against, where it came from, and whether the file still matches."""

    plan: Plan
    record: dict[str, Any]
    recorded: bool
    file_matches: bool | None
    notes: list[str]


def plan_in_force(session: Session, period: Period, plan: Plan, plan_text: str | None) -> PlanInForce:
    """The plan recorded before the period ended; the given file only when none was recorded."""
    event = session.exec(select(AuditEvent).where(AuditEvent.kind == AuditKind.plan_change.value,
                                                  col(AuditEvent.at) < period.end)
                         .order_by(col(AuditEvent.seq).desc())).first()
    if event is None:
        note = "No plan is recorded in the audit log for this period; the plan shown is the current file."
        return PlanInForce(plan, {"seq": None, "hash": None, "at": None, "actor": None, "sha256": None,
                                  "text": plan_text or "", "source": "current file"}, False, None, [note])
    text, source = str(event.details.get("text", "")), str(event.details.get("source", ""))
    info = {"seq": event.seq, "hash": event.hash, "at": as_utc(event.at), "actor": event.actor,
            "sha256": event.details.get("sha256"), "text": text, "source": source}
    notes = []
    matches = None
    if plan_text is not None:
        matches = hashlib.sha256(plan_text.encode("utf-8")).hexdigest() == info["sha256"]
        if not matches:
            notes.append(f"The plan file given differs from the plan in force during this period (audit seq "
                         f"{event.seq}, sha256 {str(info['sha256'])[:12]}...): thresholds, tasks and owners below are "
                         "the recorded plan's, not the file's.")
    try:
        recorded = parse_plan_at(text, source or "plan.yaml")
    except MedmonError as exc:
        notes.append(f"The recorded plan (audit seq {event.seq}) no longer validates ({exc}); the current file "
                     "stands in for it.")
        return PlanInForce(plan, info, False, matches, notes)
    return PlanInForce(recorded, info, True, matches, notes)


@dataclass(frozen=True)
class BaselineInForce:
    baseline: Baseline | None
    pinned_at: datetime | None
    pinned_by: str | None
    rationale: str


def baseline_in_force(session: Session, plan: Plan, task: Task, period: Period, now: datetime) -> BaselineInForce:
    """The task's baseline pinned before the period ended; else the one the plan resolves to now."""
    pin = current_pin(session, task.id, before=period.end)
    if pin is not None:
        pinned = session.get(Baseline, pin.baseline_id)
        if pinned is not None and pin_fits(pin, pinned, task):
            return BaselineInForce(pinned, as_utc(pin.pinned_at), pin.actor, pin.rationale)
    try:
        found = task_baseline(session, plan, load_context(plan, task), now=now)
    except MedmonError:
        return BaselineInForce(None, None, None, "")
    return BaselineInForce(found, None, None, "")


def content_hash(figures: dict[str, Any]) -> str:
    """SHA-256 of the report's figures as canonical JSON: equal figures, equal hash."""
    return hashlib.sha256(canonical(figures).encode("utf-8")).hexdigest()


def signers_of(plan: Plan) -> list[str]:
    """Who may sign a committee report: the owners the plan names and its approver."""
    emails = [plan.owners.clinical.email, plan.owners.technical.email]
    for task in plan.tasks:
        emails.extend(owners_of(plan, task))
    if plan.governance is not None and plan.governance.approval is not None:
        emails.append(plan.governance.approval.approved_by.email)
    return list(dict.fromkeys(e.lower() for e in emails))


def record_generated(session: Session, period: Period, digest: str, plan_seq: int | None, actor: str,
                     now: datetime) -> AuditEvent:
    return record(session, AuditKind.report_generated, actor, f"report:{period.label}",
                  {"period": period.label, "start": period.start, "end": period.end, "sha256": digest,
                   "plan_seq": plan_seq}, now)


def sign(session: Session, plan: Plan, period: Period, digest: str, *, by: str, statement: str,
         now: datetime) -> AuditEvent:
    """Record an owner's sign-off of the report with this hash; refuse a hash never generated for the period."""
    allowed = signers_of(plan)
    if by.strip().lower() not in allowed:
        raise GovernanceError(f"{by} may not sign this report; the plan names: {', '.join(allowed)}")
    generated = [e for e in list_events(session, kind=AuditKind.report_generated, subject=f"report:{period.label}")
                 if e.details.get("sha256") == digest]
    if not generated:
        raise GovernanceError(f"no report for {period.label} was generated with hash {digest[:12]}...: sign the "
                              "report you read (its hash is printed on its first page)")
    return record(session, AuditKind.report_signed, by, f"report:{period.label}",
                  {"period": period.label, "sha256": digest, "statement": statement,
                   "generated_seq": generated[-1].seq}, now)


def signatures(session: Session, period: Period, digest: str) -> list[dict[str, Any]]:
    """The sign-offs recorded for this period's report with exactly these figures."""
    return [{"by": e.actor, "at": as_utc(e.at), "statement": e.details.get("statement", ""), "seq": e.seq}
            for e in list_events(session, kind=AuditKind.report_signed, subject=f"report:{period.label}")
            if e.details.get("sha256") == digest]
