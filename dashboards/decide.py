"""Recording the committee's decision about a task from the dashboard, through the sign-in gate.

The gate is the one every dashboard action goes through (``medmon.dashboards.actions``): with
sign-in, only an owner the plan names whose e-mail the provider verified may record, under that
e-mail; without sign-in, only when the dashboard was started with ``--allow-local-actions`` on a
loopback address, recorded under the local user and marked unauthenticated.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine

from medmon.dashboards.actions import SIGNED_IN, NotAllowed, _signed_in
from medmon.dashboards.auth import Viewer
from medmon.db import session_scope
from medmon.monitor.governance.decisions import CommitteeDecision, record_decision
from medmon.monitor.plan.model import Plan


def record_committee_decision(
    engine: Engine,
    plan: Plan,
    viewer: Viewer,
    *,
    task: str,
    decision: str,
    why: str,
    terms: str,
    recommendation: str | None,
    now: datetime,
) -> CommitteeDecision:
    """Record ``decision`` about ``task`` as the viewer, in the audit log; NotAllowed for a viewer who may not."""
    if viewer.authenticated:
        by, details = _signed_in(viewer, "record a committee decision"), dict(SIGNED_IN)
    elif viewer.can_act:
        by, details = viewer.actor, {"authenticated": False, "via": "dashboard"}
    else:
        raise NotAllowed(viewer.why_not or "recording a decision needs a sign-in or --allow-local-actions")
    with session_scope(engine) as session:
        return record_decision(
            session,
            plan,
            task=task,
            decision=decision,
            why=why,
            terms=terms,
            by=by,
            now=now,
            recommendation=recommendation,
            details=details,
        )
