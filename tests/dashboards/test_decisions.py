"""The committee reads the recommendation on the Overview and records its decision there, without
the CLI; the decision is an audit-log act that the next report's first page mirrors (issue 31)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.monitor.governance.audit import AuditKind, list_events, verify
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.governance.reports.render import render_committee
from medmon.monitor.plan.model import load_plan
from medmon.monitor.read import current_score, decision_overview, report_files
from tests.dashboards.seed import Seeded


def _decision_radio(at: AppTest, task: str):  # type: ignore[no-untyped-def]
    return at.radio(key=f"decision-{task}")


def test_the_overview_leads_with_the_recommendation_and_records_the_decision(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    plan = load_plan(seeded.plan_path)
    with Session(seeded_engine) as s:
        rows = decision_overview(s, plan, datetime.now(UTC))
    task = rows[0].task
    at = open_page("overview")
    assert at.subheader[0].value == "What the committee decides"
    first = (at.error or at.warning or at.info or at.success)[0].value
    assert first.startswith(f"**{task}: recommendation {rows[0].action.upper()}**")
    with Session(seeded_engine) as s:
        now = current_score(s, task)
    assert now.value is not None and f"Score now {now.value:.2f}" in first  # the one current figure
    radio = _decision_radio(at, task)
    assert radio.value is None  # no default decision
    radio.set_value("continue with conditions")
    at.text_input(key=f"terms-{task}").input("a clinician checks every answer")
    at.text_area(key=f"why-{task}").input("the swap failed re-evaluation; vendor asked to revert")
    next(b for b in at.button if b.label == "Record decision").click().run()
    assert not at.exception
    assert any(s.value.startswith("Recorded (audit seq") for s in at.success)
    with Session(seeded_engine) as s:
        (event,) = list_events(s, kind=AuditKind.committee_decision)
        assert verify(s).ok
    assert event.subject == f"task:{task}" and "(unauthenticated)" in event.actor
    assert event.details["decision"] == "continue with conditions"
    assert event.details["terms"] == "a clinician checks every answer"
    assert event.details["recommendation"] == rows[0].action

    end = datetime.now(UTC) + timedelta(days=1)
    with Session(seeded_engine) as s:
        report = build_committee_report(s, plan, Period("test", end - timedelta(days=60), end), now=end)
    row = next(r for r in report.page_one if r.task == task)
    assert row.decided is not None and row.decided.decision == "continue with conditions"
    html = render_committee(report)
    assert "Continue with conditions (a clinician checks every answer): decided by" in html
    assert html.index("What the committee decides") < html.index("Board digest")


def test_a_decision_needs_a_reason_and_conditions_say_which(
    seeded: Seeded, open_page: Callable[..., AppTest], seeded_engine: Engine
) -> None:
    plan = load_plan(seeded.plan_path)
    with Session(seeded_engine) as s:
        task = decision_overview(s, plan, datetime.now(UTC))[0].task  # the first form on the page
    at = open_page("overview")
    _decision_radio(at, task).set_value("restrict")
    at.text_area(key=f"why-{task}").input("too risky for paediatrics")
    next(b for b in at.button if b.label == "Record decision").click().run()
    assert any("must say which conditions or restriction apply" in e.value for e in at.error)
    with Session(seeded_engine) as s:
        assert list_events(s, kind=AuditKind.committee_decision) == []


def test_a_read_only_dashboard_offers_no_form(
    seeded: Seeded, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEDMON_DASHBOARD_LOCAL_ACTIONS")
    at = open_page("overview")
    assert not [b for b in at.button if b.label == "Record decision"]


def test_the_governance_page_offers_the_report_as_pdf(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    """The committee downloads the report from the dashboard; the PDF is the printed report itself."""
    plan = load_plan(seeded.plan_path)
    with Session(seeded_engine) as s:
        files = report_files(s, plan, f"{datetime.now(UTC):%Y}", datetime.now(UTC))
    assert files.pdf is not None and files.pdf.startswith(b"%PDF")  # Chromium is installed by make system-deps
    assert "What the committee decides" in files.html
    at = open_page("governance")
    next(t for t in at.text_input if t.label == "Period").input("2026-13")
    next(b for b in at.button if b.label == "Build the report").click().run()
    assert any("month must be 01-12" in e.value for e in at.error)
