"""The Overview's first block: what the committee decides per task, as the report's page 1 says it.

The rows come from the committee report's own builder over the last ``WINDOW`` (ending now, or
at the newest probe on an accelerated clock), so the dashboard's recommendation, figures and
requested decisions are the report's, not a second reading of the rules.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlmodel import Session, func, select

from medmon.alerts import Incident
from medmon.db import as_utc
from medmon.monitor.governance.decisions import DECISIONS, CommitteeDecision, committee_decisions
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.decision_page import DecisionRow
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.plan.model import Plan
from medmon.probes.models import ProbeRun

WINDOW = timedelta(days=31)

__all__ = ["DECISIONS", "CommitteeDecision", "DecisionRow", "committee_decisions", "decision_overview"]


def decision_overview(session: Session, plan: Plan, now: datetime) -> list[DecisionRow]:
    """One row per task, the most serious recommendation first (``decision_page.decision_rows``)."""
    # On an accelerated clock (the demo) the record runs ahead of the wall clock: end after its newest entry.
    stamps = [
        session.exec(select(func.max(ProbeRun.finished_at))).one(),
        session.exec(select(func.max(Incident.last_seen_at))).one(),
    ]
    end = max([now, *(as_utc(t) for t in stamps if t is not None)]) + timedelta(seconds=1)
    period = Period("the last 31 days", end - WINDOW, end)
    return build_committee_report(session, plan, period, now=now).page_one
