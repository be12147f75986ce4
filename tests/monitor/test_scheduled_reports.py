"""Scheduled committee reports: written by the service's leader once per period, stored, and
announced through the signed webhook outbox to a real receiver on 127.0.0.1."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlmodel import Session, select

from medmon.alerts.models import Notification, NotificationStatus
from medmon.alerts.receiver import create_receiver
from medmon.monitor.errors import PlanError
from medmon.monitor.governance.audit import AuditKind, list_events, verify
from medmon.monitor.models import ScheduledReport
from medmon.monitor.plan.model import parse_plan
from medmon.monitor.service.reports import ACTOR, due_period, generate_due_report
from medmon.monitor.service.serve import ServiceOptions, ServiceResult, run_service
from medmon.monitor.storage import make_engine
from tests.conftest import plan_dict
from tests.monitor.service_helpers import reader, wait_for

SECRET = "whsec_" + "c2NoZWR1bGVkLXJlcG9ydHMtc2VjcmV0"
SECRET_ENV = "MEDMON_REPORT_HOOK_SECRET"


class Clock:
    """The service's injected clock: tests move it to a moment past a schedule."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def _plan(tmp_path: Path, db_url: str, hook: str, *, pdf: bool = False, **reports: Any) -> dict[str, Any]:
    return plan_dict(
        storage={"url": db_url},
        alerts={
            "routes": [
                {
                    "name": "committee",
                    "type": "webhook",
                    "url": f"{hook}/alerts",
                    "secret_env": SECRET_ENV,
                    "matchers": ["severity=critical"],
                },
                {"name": "on-call", "type": "webhook", "url": f"{hook}/alerts", "secret_env": SECRET_ENV},
            ],
            "repeat_interval": "4h",
        },
        reports={
            "schedule": {"every": "monthly", "day": 1, "time": "06:00", "timezone": "Europe/Amsterdam"},
            "route": "committee",
            "directory": "reports",
            "pdf": pdf,
            **reports,
        },
    )


def _start(plan_path: Path, clock: Clock, key: str) -> tuple[threading.Thread, threading.Event, dict[str, Any]]:
    stop, out = threading.Event(), {}
    thread = threading.Thread(
        target=lambda: out.setdefault(
            "result",
            run_service(
                plan_path,
                stop,
                options=ServiceOptions(install_signals=False, stop_timeout_s=5, runtime_key=key, now=clock),
            ),
        )
    )
    thread.start()
    return thread, stop, out


def _stop(*services: tuple[threading.Thread, threading.Event, dict[str, Any]]) -> list[ServiceResult]:
    for _thread, stop, _out in services:
        stop.set()
    for thread, _stop_event, _out in services:
        thread.join(30)
        assert not thread.is_alive()
    return [out["result"] for _t, _s, out in services]


def test_the_schedule_names_its_period_in_the_plans_timezone() -> None:
    plan = parse_plan(yaml.safe_dump(_plan(Path("."), "sqlite://", "http://127.0.0.1:9")))
    assert plan.reports is not None
    # 06:00 in Amsterdam on 1 December is 05:00 UTC: one minute before, November is not yet due.
    period, due = due_period(plan.reports, datetime(2026, 12, 1, 4, 59, tzinfo=UTC))
    assert (period.label, due) == ("2026-10", datetime(2026, 11, 1, 5, 0, tzinfo=UTC))
    period, due = due_period(plan.reports, datetime(2026, 12, 1, 5, 0, tzinfo=UTC))
    assert (period.label, due) == ("2026-11", datetime(2026, 12, 1, 5, 0, tzinfo=UTC))
    assert period.start == datetime(2026, 11, 1, tzinfo=UTC)
    assert due_period(plan.reports, datetime(2027, 1, 20, tzinfo=UTC))[0].label == "2026-12"


@pytest.mark.parametrize(
    ("reports", "expected"),
    [
        ({"schedule": {"timezone": "Europe/Amsterdm"}}, "reports.schedule.timezone: expected an IANA timezone"),
        ({"schedule": {"time": "6am"}}, "reports.schedule.time: expected a 24-hour time like '06:00', got '6am'"),
        ({"schedule": {"day": 31}}, "reports.schedule.day: Input should be less than or equal to 28"),
        ({"schedule": {"every": "weekly"}}, "reports.schedule.every: Input should be 'monthly'"),
        ({"route": "board"}, "reports.route 'board' is not one of alerts.routes: pager"),
        ({"route": "pager"}, "reports.route 'pager' is a slack route; report notices go to a webhook route"),
    ],
)
def test_a_bad_reports_section_is_refused_naming_the_field(reports: dict[str, Any], expected: str) -> None:
    data = plan_dict(
        alerts={"routes": [{"name": "pager", "type": "slack", "url": "https://hooks.example/x"}]},
        reports={"schedule": {"day": 1, **reports.pop("schedule", {})}, "route": "pager", **reports},
    )
    with pytest.raises(PlanError) as caught:
        parse_plan(yaml.safe_dump(data), "plan.yaml")
    assert expected in str(caught.value), str(caught.value)


def test_a_missed_schedule_is_written_on_start_once_across_replicas_and_restarts(
    tmp_path: Path,
    db_url: str,
    serve: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", "k")
    monkeypatch.setenv(SECRET_ENV, SECRET)
    monkeypatch.delenv("MEDMON_DATABASE_URL", raising=False)
    receiver = create_receiver(SECRET)
    hook = serve(receiver).url
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(_plan(tmp_path, db_url, hook, pdf=True)))
    # The schedule passed on 1 December 06:00 (Amsterdam) while no service was running.
    clock = Clock(datetime(2026, 12, 3, 10, 0, tzinfo=UTC))
    got = receiver.state.receiver

    def reports() -> list[dict[str, Any]]:  # the on-call route may also hear of alerts (stale probes)
        return [r.body for r in got.received if r.body.get("event") == "report"]

    first, second = _start(plan_path, clock, "replica-a"), _start(plan_path, clock, "replica-b")
    try:
        wait_for(reports, 90, what="the report notice at the receiver")
    finally:
        results = _stop(first, second)
    assert sorted(r.led for r in results) == [False, True], "one leader, one standby"

    db = reader(db_url)
    with Session(db) as session:
        rows = session.exec(select(ScheduledReport)).all()
        assert [r.period for r in rows] == ["2026-11"]
        row = rows[0]
        generated = list_events(session, kind=AuditKind.report_generated, subject="report:2026-11")
        assert [(e.actor, e.details["sha256"]) for e in generated] == [(ACTOR, row.sha256)]
        notices = session.exec(select(Notification).where(Notification.event == "report")).all()
        assert [(n.route, n.status, n.alert_id) for n in notices] == [("committee", NotificationStatus.delivered, None)]
        assert verify(session).ok
    body = next(r for r in got.received if r.body.get("event") == "report")
    assert body.signature_valid and got.rejected == 0 and got.duplicates == 0 and len(reports()) == 1
    assert body.body["period"]["label"] == "2026-11" and body.body["sha256"] == row.sha256
    assert body.body["status"] == row.status and body.body["status"] in (
        "on track",
        "attention needed",
        "building the reference",
    )
    assert "task(s) meet thresholds" in body.body["summary"] and body.body["due_at"] == "2026-12-01T05:00:00+00:00"
    html = Path(body.body["files"]["html"])
    assert html.parent == tmp_path / "reports" and html.name.endswith("-2026-11.html")
    assert html.exists() and row.sha256 in html.read_text("utf-8")
    assert not [p for p in (tmp_path / "reports").iterdir() if p.name.startswith(".")], "no scratch files left"
    if row.pdf_path is not None:  # Chromium or WeasyPrint installed
        assert Path(row.pdf_path).read_bytes().startswith(b"%PDF")

    # A restart in the same month finds November done: nothing is written or sent again.
    caplog.set_level(logging.DEBUG, logger="medmon.reports")
    clock.at = datetime(2026, 12, 20, tzinfo=UTC)
    again = _start(plan_path, clock, "replica-c")
    try:
        wait_for(
            lambda: any("2026-11 was written" in r.getMessage() for r in caplog.records),
            60,
            what="the restarted service's report pass",
        )
    finally:
        _stop(again)
    with Session(db) as session:
        assert len(session.exec(select(ScheduledReport)).all()) == 1
        assert len(list_events(session, kind=AuditKind.report_generated)) == 1
    assert len(reports()) == 1 and got.duplicates == 0

    # January: December falls due and is written; November is still not repeated.
    clock.at = datetime(2027, 1, 1, 5, 30, tzinfo=UTC)
    january = _start(plan_path, clock, "replica-d")
    try:
        wait_for(lambda: len(reports()) >= 2, 90, what="December's report notice")
    finally:
        _stop(january)
    assert [r["period"]["label"] for r in reports()] == ["2026-11", "2026-12"]
    with Session(db) as session:
        assert sorted(r.period for r in session.exec(select(ScheduledReport)).all()) == ["2026-11", "2026-12"]
    db.dispose()


def test_a_second_writer_of_the_same_period_keeps_nothing(
    tmp_path: Path, db_url: str, serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below the leader lock: two writers racing for one period leave one report, one entry, one notice."""
    monkeypatch.setenv(SECRET_ENV, SECRET)
    plan = parse_plan(yaml.safe_dump(_plan(tmp_path, db_url, "http://127.0.0.1:9")))
    engine = make_engine(db_url)
    now = datetime(2026, 12, 2, tzinfo=UTC)
    done: list[object] = []
    barrier = threading.Barrier(2)

    def write() -> None:
        barrier.wait()
        done.append(generate_due_report(engine, plan, now, plan_path=tmp_path / "plan.yaml"))

    writers = [threading.Thread(target=write) for _ in range(2)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(120)
    assert len(done) == 2 and sum(d is not None for d in done) == 1, done
    assert generate_due_report(engine, plan, now, plan_path=tmp_path / "plan.yaml") is None
    with Session(engine) as session:
        assert len(session.exec(select(ScheduledReport)).all()) == 1
        assert len(list_events(session, kind=AuditKind.report_generated)) == 1
        assert len(session.exec(select(Notification)).all()) == 1
    assert len(list((tmp_path / "reports").iterdir())) == 1  # the loser's scratch copy is gone
    engine.dispose()


def test_a_notice_the_receiver_missed_is_retried_until_it_arrives(
    tmp_path: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The receiver is down when the report is written: the notice waits in the outbox with its
    error, and arrives (once, signed) when the receiver is back on the same address."""
    import socket

    from medmon.alerts import DeliveryPolicy, deliver_due
    from medmon.monitor.plan.routing import build_channels
    from medmon.monitor.service.webserver import serve_in_thread

    monkeypatch.setenv(SECRET_ENV, SECRET)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    plan = parse_plan(yaml.safe_dump(_plan(tmp_path, db_url, f"http://127.0.0.1:{port}")))
    engine = make_engine(db_url)
    clock = Clock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    row = generate_due_report(engine, plan, clock(), plan_path=tmp_path / "plan.yaml")
    assert row is not None and row.period == "2026-11"
    channels, policy = build_channels(plan), DeliveryPolicy(base_delay_s=1.0)
    first = deliver_due(engine, channels, clock, policy)
    assert (first.delivered, first.retried) == (0, 1)
    with Session(engine) as session:
        waiting = session.get(Notification, row.notification_id)
        assert waiting is not None and waiting.status == NotificationStatus.pending and waiting.attempts == 1
        assert waiting.last_error and "committee" in waiting.last_error
    receiver = create_receiver(SECRET)
    server = serve_in_thread(receiver, port=port)
    try:
        clock.at = datetime(2026, 12, 1, 9, 5, tzinfo=UTC)  # past the backoff
        assert deliver_due(engine, channels, clock, policy).delivered == 1
        assert deliver_due(engine, channels, clock, policy).delivered == 0  # nothing left to send
    finally:
        server.stop()
    got = receiver.state.receiver
    assert [(r.body["period"]["label"], r.body["sha256"], r.signature_valid) for r in got.received] == [
        ("2026-11", row.sha256, True)
    ]
    engine.dispose()
