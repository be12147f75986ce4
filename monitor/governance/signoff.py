"""Sign-off of committee reports: an owner the plan names attests to exactly one report's figures.

A report is identified by its period label and the SHA-256 of its figures; generating it is a
``report_generated`` audit entry, and a signature is a ``report_signed`` entry refused unless
that period was generated with that hash. A signature counts only when its signer proved who
they are: the dashboard's verified sign-in, or a command-line signature by a key registered to
the signer in the plan (``medmon.monitor.governance.identity``). A sign-off claimed without
proof is an ``unproven_act`` entry, listed apart and never counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlmodel import Session

from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.approvals import owners_of
from medmon.monitor.governance.audit import AuditKind, list_events, record
from medmon.monitor.governance.identity import counts, proof_words
from medmon.monitor.models import AuditEvent
from medmon.monitor.plan.model import Plan


def signers_of(plan: Plan) -> list[str]:
    """Who may sign a committee report: the owners the plan names and its approver."""
    emails = [plan.owners.clinical.email, plan.owners.technical.email]
    for task in plan.tasks:
        emails.extend(owners_of(plan, task))
    if plan.governance is not None and plan.governance.approval is not None:
        emails.append(plan.governance.approval.approved_by.email)
    return list(dict.fromkeys(e.lower() for e in emails))


def sign(
    session: Session,
    plan: Plan,
    period: str,
    digest: str,
    *,
    by: str,
    statement: str,
    now: datetime,
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    """Record an owner's sign-off of ``period``'s report with this hash; refuse a hash never generated for it."""
    allowed = signers_of(plan)
    if by.strip().lower() not in allowed:
        raise GovernanceError(f"{by} may not sign this report; the plan names: {', '.join(allowed)}")
    digest = digest.strip().lower()
    generated = [
        e
        for e in list_events(session, kind=AuditKind.report_generated, subject=f"report:{period}")
        if e.details.get("sha256") == digest
    ]
    if not generated:
        raise GovernanceError(
            f"no report for {period} was generated with hash {digest[:12]}...: sign the "
            "report you read (its hash is printed on its first page)"
        )
    if not statement.strip():
        raise GovernanceError("a sign-off needs a statement of what the signer attests")
    return record(
        session,
        AuditKind.report_signed,
        by,
        f"report:{period}",
        (details or {})
        | {"period": period, "sha256": digest, "statement": statement, "generated_seq": generated[-1].seq},
        now,
    )


def signatures(session: Session, period: str, digest: str) -> list[dict[str, Any]]:
    """The proven sign-offs recorded for ``period``'s report with exactly these figures."""
    return [
        {
            "by": e.actor,
            "at": e.at,
            "statement": e.details.get("statement", ""),
            "seq": e.seq,
            "authenticated": e.details.get("authenticated"),
            "identity": proof_words(e.details),
        }
        for e in list_events(session, kind=AuditKind.report_signed, subject=f"report:{period}")
        if e.details.get("sha256") == digest and counts(e.details)
    ]


def unproven_signatures(session: Session, period: str, digest: str) -> list[dict[str, Any]]:
    """Sign-offs of these figures claimed without proof of identity: shown apart, never counted."""
    claimed = [
        e
        for kind in (AuditKind.report_signed, AuditKind.unproven_act)
        for e in list_events(session, kind=kind, subject=f"report:{period}")
        if e.details.get("sha256") == digest and not counts(e.details)
    ]
    return [
        {
            "claimed_by": e.details.get("claimed_by") or e.actor,
            "actor": e.actor,
            "at": e.at,
            "seq": e.seq,
            "identity": proof_words(e.details),
        }
        for e in sorted(claimed, key=lambda e: e.seq)
    ]


@dataclass
class GeneratedReport:
    """One distinct report (period and hash) that was generated, with who signed it."""

    period: str
    sha256: str
    first_generated: datetime
    generated_by: str
    signed_by: list[str] = field(default_factory=list)


def generated_reports(session: Session) -> list[GeneratedReport]:
    """Every report generated (newest period first), once per (period, hash), with its signers."""
    found: dict[tuple[str, str], GeneratedReport] = {}
    for e in list_events(session, kind=AuditKind.report_generated):
        key = (str(e.details.get("period")), str(e.details.get("sha256")))
        if key not in found:
            found[key] = GeneratedReport(key[0], key[1], e.at, e.actor)
    for e in list_events(session, kind=AuditKind.report_signed):
        key = (str(e.details.get("period")), str(e.details.get("sha256")))
        if key in found and counts(e.details) and e.actor not in found[key].signed_by:
            found[key].signed_by.append(e.actor)
    return sorted(found.values(), key=lambda r: (r.period, r.first_generated), reverse=True)
