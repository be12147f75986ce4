"""Governance decisions on the dashboard after sign-in: signing a report by its hash and approving
proposed thresholds are recorded under the identity the sign-in verified; viewing answers is audited
once per session and task."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.monitor.governance.audit import AuditKind, list_events, verify
from medmon.monitor.governance.change_control import record_plan_changes
from medmon.monitor.governance.effective import thresholds_in_force
from medmon.monitor.governance.reports.committee import CommitteeReport, build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.record import record_generated, signatures
from medmon.monitor.governance.reports.render import render_committee
from medmon.monitor.plan.model import load_plan
from tests.dashboards.conftest import AUTH_SECRETS
from tests.dashboards.seed import OUTSIDER, OWNER, Seeded
from tests.dashboards.test_pages import frame


def _as(open_page: Callable[..., AppTest], page: str, email: str, verified: bool = True) -> AppTest:
    return open_page(
        page, secrets=AUTH_SECRETS, user={"is_logged_in": True, "email": email, "email_verified": verified}
    )


def _generate(seeded: Seeded, engine: Engine) -> CommitteeReport:
    """A committee report over the seeded days, generated (and audited) as ``medmon report`` does."""
    now = datetime.now(UTC)
    period = parse_period(f"{seeded.start:%Y-%m-%d}..{now:%Y-%m-%d}")
    with Session(engine) as session:
        report = build_committee_report(session, load_plan(seeded.plan_path), period, now=now)
        record_generated(session, period, report.sha256, None, "tech@hospital.example", now)
        session.commit()
    return report


@pytest.mark.slow
def test_an_owner_signs_a_report_by_its_hash_as_the_signed_in_identity(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    report = _generate(seeded, seeded_engine)
    label, digest = report.period.label, report.sha256
    for viewer in (
        _as(open_page, "governance", OUTSIDER),
        _as(open_page, "governance", OWNER, verified=False),
        open_page("governance"),
    ):  # not an owner; e-mail not verified; no sign-in (local actions)
        assert not viewer.exception, [e.value for e in viewer.exception]
        assert digest in set(frame(viewer, "report hash")["report hash"])  # everyone sees the list
        assert not [b for b in viewer.button if b.key == "sign_do"]
    at = _as(open_page, "governance", OWNER)
    at.selectbox(key="sign_report").select(f"{label} · {digest}").run()
    at.button(key="sign_do").click().run()
    assert not at.exception and any(f"signed by {OWNER}" in s.value for s in at.success), [e.value for e in at.error]
    with Session(seeded_engine) as session:
        [signed] = list_events(session, kind=AuditKind.report_signed)
        assert signed.actor == OWNER and signed.subject == f"report:{label}"
        assert (signed.details["sha256"], signed.details["authenticated"], signed.details["via"]) == (
            digest,
            True,
            "dashboard",
        )
        assert verify(session).ok
        # The report's sign-off section lists the signature and says the identity came from the sign-in.
        report.signatures = signatures(session, report.period, digest)
    assert [(s["by"], s["authenticated"]) for s in report.signatures] == [(OWNER, True)]
    assert "verified by the dashboard&#39;s sign-in" in render_committee(report)


def test_an_owner_approves_proposed_thresholds_after_sign_in_and_a_lower_minimum_needs_the_committee(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    data = yaml.safe_load(seeded.plan_path.read_text())
    data["tasks"][0]["thresholds"]["min_score"] = 0.6  # knowledge-qa: 0.7 -> 0.6, a lower approval minimum
    edited = yaml.safe_dump(data, sort_keys=False)
    seeded.plan_path.write_text(edited)
    with Session(seeded_engine) as session:
        record_plan_changes(session, edited, str(seeded.plan_path), "tech@hospital.example", datetime.now(UTC))
        session.commit()

    local = open_page("governance")  # no sign-in: the proposal is shown, nobody may approve it
    assert "proposed" in frame(local, "proposed").columns
    assert not [b for b in local.button if b.key == "thr_approve"]
    table = frame(local, "approval threshold")
    assert dict(zip(table["task"], table["approval threshold"], strict=True))["knowledge-qa"] == 0.7  # in force

    at = _as(open_page, "governance", OWNER)
    at.selectbox(key="thr_task").select("knowledge-qa").run()
    at.text_input(key="thr_reason").input("fewer false alarms").run()
    at.button(key="thr_approve").click().run()
    assert any("below the approval minimum 0.700" in e.value for e in at.error), [e.value for e in at.error]
    at.text_input(key="thr_committee").input("AI committee 2026-11-12, minute 7").run()
    at.button(key="thr_approve").click().run()
    assert any(f"approved by {OWNER}" in s.value for s in at.success), [e.value for e in at.error]
    with Session(seeded_engine) as session:
        [approval] = list_events(session, kind=AuditKind.threshold_approved)
        assert (approval.actor, approval.details["authenticated"], approval.details["committee_decision"]) == (
            OWNER,
            True,
            "AI committee 2026-11-12, minute 7",
        )
        assert thresholds_in_force(session, "knowledge-qa").thresholds["min_score"] == 0.6


def _views(engine: Engine) -> list[Any]:
    with Session(engine) as session:
        return list_events(session, kind=AuditKind.answers_viewed)


def test_viewing_answers_is_audited_once_per_session_and_task(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = _as(open_page, "task", OWNER)
    assert len(frame(at, "judges")) == 20
    at.run()
    at.run()  # reruns (a refresh, a widget) are the same view
    [first] = _views(seeded_engine)
    assert (first.actor, first.subject, first.details["authenticated"], first.details["page"]) == (
        OWNER,
        "task:knowledge-qa",
        True,
        "task",
    )
    assert len(first.details["answers"]) == 20
    at.selectbox(key="task").set_value("dose-calc").run()
    assert [e.subject for e in _views(seeded_engine)] == ["task:knowledge-qa", "task:dose-calc"]
    _as(open_page, "task", OUTSIDER)  # another session, another person: a view of its own
    views = _views(seeded_engine)
    assert [(e.actor, e.subject) for e in views][-1] == (OUTSIDER, "task:knowledge-qa") and len(views) == 3
    now = datetime.now(UTC)
    with Session(seeded_engine) as session:
        report = build_committee_report(
            session, load_plan(seeded.plan_path), parse_period(f"{seeded.start:%Y-%m-%d}..{now:%Y-%m-%d}"), now=now
        )
    seen = report.audit["answers_viewed"]
    assert (seen["views"], seen["viewers"], seen["by_task"]) == (
        3,
        sorted([OWNER, OUTSIDER]),
        {"dose-calc": 1, "knowledge-qa": 2},
    )
    assert "3 view(s) by 2 person(s)" in render_committee(report)
