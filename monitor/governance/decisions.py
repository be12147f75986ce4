"""The committee's decision about a task: continue, continue with conditions, restrict, or suspend.

A decision is an act in the hash-chained audit log (``committee_decision``, subject
``task:<id>``), recorded with who took it, when and why, and the figure it was taken on (the
current score and the report's recommendation at that moment), so the next committee report
mirrors it beside the evidence. Recording one is a governance record, not an operational
switch: suspending the use itself is the Safety page's suspension (``medmon.monitor.governance.safety``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session

from medmon.moments import display_time
from medmon.monitor.governance.audit import AuditKind, list_events, record
from medmon.monitor.governance.current import current_score
from medmon.monitor.plan.model import Plan

DECISIONS = ("continue", "continue with conditions", "restrict", "suspend")
NEEDS_TERMS = ("continue with conditions", "restrict")  # these say which conditions or restriction


@dataclass(frozen=True)
class CommitteeDecision:
    """One recorded decision: what, about which task, who, when, why, and on which figure."""

    seq: int
    task: str
    decision: str
    terms: str
    why: str
    by: str
    at: datetime
    authenticated: bool
    score: float | None
    recommendation: str | None

    @property
    def sentence(self) -> str:
        """The decision as the report and the overview state it."""
        terms = f" ({self.terms})" if self.terms else ""
        who = self.by if self.authenticated or "unauthenticated" in self.by else f"{self.by} (unauthenticated)"
        return f"{self.decision.capitalize()}{terms}: decided by {who} on {display_time(self.at)}. Why: {self.why}"


def record_decision(
    session: Session,
    plan: Plan,
    *,
    task: str,
    decision: str,
    why: str,
    by: str,
    now: datetime,
    terms: str = "",
    recommendation: str | None = None,
    details: dict[str, Any] | None = None,
) -> CommitteeDecision:
    """Record the committee's decision about ``task`` in the caller's transaction.

    Raises
    ------
    ValueError
        The task is not in the plan, the decision is not one of ``DECISIONS``, no reason is
        given, or a conditional decision names no conditions.
    """
    if task not in {t.id for t in plan.tasks}:
        raise ValueError(f"task {task!r} is not in the plan")
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}; got {decision!r}")
    if not why.strip():
        raise ValueError("a reason is required to record a decision")
    if decision in NEEDS_TERMS and not terms.strip():
        raise ValueError(f"'{decision}' must say which conditions or restriction apply")
    score = current_score(session, task, until=None)
    event = record(
        session,
        AuditKind.committee_decision,
        by,
        f"task:{task}",
        {
            "task": task,
            "decision": decision,
            "terms": terms.strip(),
            "reason": why.strip(),
            "current_score": score.value,
            "current_score_n": score.n,
            "recommendation": recommendation,
            **(details or {}),
        },
        now,
    )
    return _decision(event)


def _decision(event: Any) -> CommitteeDecision:
    d = event.details or {}
    return CommitteeDecision(
        event.seq,
        str(d.get("task", "")),
        str(d.get("decision", "")),
        str(d.get("terms", "")),
        str(d.get("reason", "")),
        event.actor,
        event.at,
        bool(d.get("authenticated", False)),
        d.get("current_score"),
        d.get("recommendation"),
    )


def committee_decisions(
    session: Session, *, since: datetime | None = None, until: datetime | None = None
) -> list[CommitteeDecision]:
    """Recorded decisions in chain order (``until`` exclusive)."""
    return [_decision(e) for e in list_events(session, kind=AuditKind.committee_decision, since=since, until=until)]


def latest_decisions(session: Session, until: datetime | None = None) -> dict[str, CommitteeDecision]:
    """Each task's decision in force: the newest recorded before ``until``."""
    return {d.task: d for d in committee_decisions(session, until=until)}
