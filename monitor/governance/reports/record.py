"""What a report stands on, taken from the record rather than from today's files.

A committee report for a past period must say what was true then: the plan in force (the
newest plan recorded in the audit log before the period ended, by audit sequence), each task's
thresholds and baseline in force then (``medmon.monitor.governance.effective``, read-only: a report
never pins a baseline), and nothing edited since.
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

from medmon.monitor.errors import MedmonError
from medmon.monitor.governance import signoff
from medmon.monitor.governance.audit import AuditKind, canonical, record
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.models import AuditEvent
from medmon.monitor.plan.model import Plan, parse_plan_at


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
    event = session.exec(
        select(AuditEvent)
        .where(AuditEvent.kind == AuditKind.plan_change.value, col(AuditEvent.at) < period.end)
        .order_by(col(AuditEvent.seq).desc())
    ).first()
    if event is None:
        note = "No plan is recorded in the audit log for this period; the plan shown is the current file."
        return PlanInForce(
            plan,
            {
                "seq": None,
                "hash": None,
                "at": None,
                "actor": None,
                "sha256": None,
                "text": plan_text or "",
                "source": "current file",
            },
            False,
            None,
            [note],
        )
    text, source = str(event.details.get("text", "")), str(event.details.get("source", ""))
    info = {
        "seq": event.seq,
        "hash": event.hash,
        "at": event.at,
        "actor": event.actor,
        "sha256": event.details.get("sha256"),
        "text": text,
        "source": source,
    }
    notes = []
    matches = None
    if plan_text is not None:
        matches = hashlib.sha256(plan_text.encode("utf-8")).hexdigest() == info["sha256"]
        if not matches:
            notes.append(
                f"The plan file given differs from the plan in force during this period (audit seq "
                f"{event.seq}, sha256 {str(info['sha256'])[:12]}...): thresholds, tasks and owners below are "
                "the recorded plan's, not the file's."
            )
    try:
        recorded = parse_plan_at(text, source or "plan.yaml")
    except MedmonError as exc:
        notes.append(
            f"The recorded plan (audit seq {event.seq}) no longer validates ({exc}); the current file stands in for it."
        )
        return PlanInForce(plan, info, False, matches, notes)
    return PlanInForce(recorded, info, True, matches, notes)


def content_hash(figures: dict[str, Any]) -> str:
    """SHA-256 of the report's figures as canonical JSON: equal figures, equal hash."""
    return hashlib.sha256(canonical(figures).encode("utf-8")).hexdigest()


def record_generated(
    session: Session, period: Period, digest: str, plan_seq: int | None, actor: str, now: datetime
) -> AuditEvent:
    return record(
        session,
        AuditKind.report_generated,
        actor,
        f"report:{period.label}",
        {"period": period.label, "start": period.start, "end": period.end, "sha256": digest, "plan_seq": plan_seq},
        now,
    )


def sign(
    session: Session,
    plan: Plan,
    period: Period,
    digest: str,
    *,
    by: str,
    statement: str,
    now: datetime,
    details: dict[str, Any],
) -> AuditEvent:
    """Record an owner's sign-off of the report with this hash (``medmon.monitor.governance.signoff.sign``);
    ``details`` say how the signer was proven (``medmon.monitor.governance.identity``)."""
    return signoff.sign(session, plan, period.label, digest, by=by, statement=statement, now=now, details=details)


def signatures(session: Session, period: Period, digest: str) -> list[dict[str, Any]]:
    """The proven sign-offs recorded for this period's report with exactly these figures."""
    return signoff.signatures(session, period.label, digest)


def unproven_signatures(session: Session, period: Period, digest: str) -> list[dict[str, Any]]:
    """Sign-offs of these figures claimed without proof: listed apart, never counted."""
    return signoff.unproven_signatures(session, period.label, digest)
