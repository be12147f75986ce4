"""The dashboard pages that show stored narratives and reviewers' notes record who saw them, once per session."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.db import session_scope
from medmon.monitor.governance import safety
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.plan.model import load_plan
from tests.dashboards.conftest import AUTH_SECRETS
from tests.dashboards.seed import OWNER, Seeded

NARRATIVE = "Advised a doubled dose on the renal ward"


def _as(open_page: Callable[..., AppTest], page: str) -> AppTest:
    return open_page(page, secrets=AUTH_SECRETS, user={"is_logged_in": True, "email": OWNER, "email_verified": True})


def _views(engine: Engine, page: str) -> list[object]:
    with Session(engine) as session:
        return [e for e in list_events(session, kind=AuditKind.answers_viewed) if e.details.get("page") == page]


def test_the_safety_and_governance_pages_record_one_view_per_session(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    plan = load_plan(seeded.plan_path)
    now = datetime.now(UTC)
    with session_scope(seeded_engine) as s:
        safety.open_event(
            s,
            plan,
            task_id="knowledge-qa",
            severity="serious",
            source="person",
            what_happened=NARRATIVE,
            actor=OWNER,
            now=now,
        )
        safety.record_near_miss(s, plan, "knowledge-qa", "A pharmacist caught it", OWNER, now)
    at = _as(open_page, "safety")
    assert NARRATIVE in next(d.value for d in at.dataframe if "clock" in d.value.columns)["what happened"].tolist()
    at.run()  # a rerun is the same view
    [view] = _views(seeded_engine, "safety")
    assert (view.actor, view.subject, view.details["authenticated"], view.details["rows"]) == (  # type: ignore[attr-defined]
        OWNER,
        "deployment",
        True,
        2,
    )
    _as(open_page, "governance")  # the audit log quotes the near miss
    [log] = _views(seeded_engine, "governance")
    assert log.details["via"] == "dashboard" and log.details["rows"] >= 1  # type: ignore[attr-defined]
