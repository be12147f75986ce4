"""One way to write a moment, in the plan's display zone, on every surface: pages, the committee
report, CLI tables and notifications (``medmon.moments.display_time``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

import pandas as pd
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import NotifyReason
from medmon.alerts.channels.slack import SlackChannel, SlackConfig
from medmon.alerts.dispatch import group_body
from medmon.alerts.models import Alert, Severity
from medmon.dashboards.tables import set_display_zone, with_dashes
from medmon.db import session_scope
from medmon.monitor.errors import PlanError
from medmon.monitor.governance.audit import AuditKind, record
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.render import render_committee
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.routing import notify_policy

AT = datetime(2026, 11, 5, 14, 0, tzinfo=UTC)


def test_an_unknown_zone_is_refused_naming_the_field(make_plan: Callable[..., Plan]) -> None:
    with pytest.raises(PlanError) as caught:
        make_plan(display_timezone="Europe/Atlantis")
    assert "display_timezone" in str(caught.value) and "Europe/Atlantis" in str(caught.value)
    assert make_plan().display_timezone == "UTC"


def test_the_report_writes_every_moment_in_the_plans_zone(engine: Engine, make_plan: Callable[..., Plan]) -> None:
    plan = make_plan(display_timezone="Europe/Paris")
    with session_scope(engine) as session:
        record(session, AuditKind.alert_acknowledged, "owner@hospital.example", "alert:1", {"note": "ok"}, AT)
    with Session(engine) as session:
        report = build_committee_report(session, plan, parse_period("2026-11"), now=AT, plan_text="x")
    html = render_committee(report)
    assert "2026-11-05 15:00 CET" in html  # the acknowledgement, 14:00 UTC read in Paris
    assert "(UTC)" not in html and not re.search(r"\d\d:\d\d UTC", html)


def test_notifications_write_their_moments_in_the_plans_zone(make_plan: Callable[..., Plan]) -> None:
    policy = notify_policy(make_plan(display_timezone="America/New_York"))
    alert = Alert(
        id=1,
        fingerprint="f",
        group_key="g",
        labels={"task": "qa"},
        task_id="qa",
        rule="drift_drop",
        severity=Severity.critical,
        summary="qa: the score fell",
        starts_at=AT,
    )
    body = group_body("g", "hook", NotifyReason.new_firing, [alert], ["f"], AT, tz=policy.timezone)
    assert body["sent_at_text"] == "2026-11-05 09:00 EST"
    assert body["alerts"][0]["starts_at_text"] == body["sent_at_text"]
    slack = SlackChannel(SlackConfig(name="hook", url="https://hooks.example/x"))  # type: ignore[arg-type]
    text = str(slack.render(body))
    assert "since 2026-11-05 09:00 EST" in text and "sent 2026-11-05 09:00 EST" in text


def test_page_tables_write_moments_in_one_format_with_the_zone() -> None:
    set_display_zone("Europe/Paris")
    try:
        frame, config = with_dashes(
            pd.DataFrame({"opened": [datetime(2026, 7, 3, 14, 0), None], "n": [1, 2]}),
            {"opened": {"type_config": {"type": "datetime", "format": "D MMM HH:mm"}}},
        )
    finally:
        set_display_zone("UTC")
    assert list(frame["opened"]) == ["2026-07-03 16:00 CEST", "—"]
    assert config["opened"]["type_config"]["type"] == "text"
