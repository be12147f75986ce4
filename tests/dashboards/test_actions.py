"""Acknowledge, resolve, silence and requeue through the page, an incident (and all its signals) at
a time or several with one reason: the database, each alert's history and the audit log all
record who did it and why; sign-in decides who may."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from streamlit.testing.v1 import AppTest

from medmon.alerts import (
    Alert,
    AlertStatus,
    Incident,
    Matcher,
    Notification,
    NotificationStatus,
    Silence,
    incident_members,
)
from medmon.alerts.models import AlertEvent
from medmon.dashboards.actions import NotAllowed, acknowledge_incidents
from medmon.dashboards.auth import Viewer
from medmon.monitor.governance.audit import list_events, verify
from medmon.monitor.plan.model import load_plan
from tests.dashboards.conftest import APP, AUTH_SECRETS
from tests.dashboards.seed import CALC_OWNER, OUTSIDER, OWNER, Seeded

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def _critical(engine: Engine, task: str = "knowledge-qa") -> int:
    """The task's open accuracy incident (the drift detector's alert is one of its signals)."""
    with Session(engine) as s:
        alert = s.exec(select(Alert).where(Alert.task_id == task, Alert.rule == "drift_drop")).one()
        assert alert.incident_id is not None and alert.status == AlertStatus.firing
        incident = s.get(Incident, alert.incident_id)
    assert incident is not None and incident.cause == "accuracy" and incident.closed_at is None
    return alert.incident_id


def _members(engine: Engine, incident_id: int) -> list[Alert]:
    with Session(engine) as s:
        return incident_members(s, incident_id)


def _act(at: AppTest, incident_id: int | list[int], reason: str, button: str) -> AppTest:
    for one in incident_id if isinstance(incident_id, list) else [incident_id]:
        at.checkbox(key=f"incident_{one}").check()
    at.text_input(key="reason").input(reason)
    at.button(key=button).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _events(engine: Engine, alert_id: int) -> list[AlertEvent]:
    with Session(engine) as s:
        return list(
            s.exec(select(AlertEvent).where(AlertEvent.alert_id == alert_id).order_by(col(AlertEvent.id))).all()
        )


def test_acknowledge_records_the_local_user_in_alert_history_and_audit(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER", "nurse.lead")
    incident_id = _critical(seeded_engine)
    members = _members(seeded_engine, incident_id)
    # The drift detectors and the approval minimum see one drop; all of it is about accuracy.
    assert len(members) >= 2 and {a.labels["cause"] for a in members} == {"accuracy"}
    assert {a.status for a in members} == {AlertStatus.firing}
    at = _act(open_page("alerts"), incident_id, "Reviewing with pharmacy today", "ack")
    assert at.success[0].value == f"Incident #{incident_id} acknowledged by nurse.lead (unauthenticated)."
    with Session(seeded_engine) as s:
        for alert in incident_members(s, incident_id):  # one acknowledgement covers every signal
            assert alert.status == AlertStatus.acknowledged
            assert (alert.acknowledged_by, alert.ack_note) == (
                "nurse.lead (unauthenticated)",
                "Reviewing with pharmacy today",
            )
        entries = list_events(s, kind="alert_acknowledged")
        assert verify(s).ok
    last = _events(seeded_engine, members[0].id or 0)[-1]
    assert (last.actor, last.to_status, last.note) == (
        "nurse.lead (unauthenticated)",
        "acknowledged",
        f"incident #{incident_id}: Reviewing with pharmacy today",
    )
    assert [(e.actor, e.subject) for e in entries] == [("nurse.lead (unauthenticated)", f"incident:{incident_id}")]
    assert (
        entries[0].details["authenticated"] is False and entries[0].details["note"] == "Reviewing with pharmacy today"
    )
    assert sorted(entries[0].details["alerts"]) == sorted(a.id for a in members)
    table = [df.value for df in at.dataframe if "acknowledged by" in df.value.columns][0].set_index("id")
    assert table.loc[incident_id, "status"] == "acknowledged"


def test_an_incident_entry_covers_its_alerts_and_deleting_it_is_found(seeded: Seeded, seeded_engine: Engine) -> None:
    incident_id = _critical(seeded_engine)
    members = sorted(a.id or 0 for a in _members(seeded_engine, incident_id))
    owner = Viewer(CALC_OWNER, CALC_OWNER, True, True)
    acknowledge_incidents(seeded_engine, load_plan(seeded.plan_path), owner, [incident_id], "on it", NOW)
    with Session(seeded_engine) as s:
        assert verify(s).ok  # one entry for the incident stands for each member's acknowledgement
        s.delete(list_events(s, kind="alert_acknowledged")[-1])
        s.commit()
        problems = [p.what for p in verify(s).problems]
    assert f"alert {', '.join(str(i) for i in members)} have no audit entry: entries were deleted" in problems


def test_resolve_records_the_reason(seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]) -> None:
    incident_id = _critical(seeded_engine, "dose-calc")
    at = _act(open_page("alerts"), incident_id, "Vendor rolled back to v1; re-evaluation passed", "resolve")
    assert at.success[0].value.startswith(f"Incident #{incident_id} resolved by")
    with Session(seeded_engine) as s:
        incident = s.get(Incident, incident_id)
        assert incident is not None and incident.closed_at is not None
        for alert in incident_members(s, incident_id):
            assert alert.status == AlertStatus.resolved and alert.ends_at is not None
            assert alert.resolve_reason == "Vendor rolled back to v1; re-evaluation passed"
        entries = list_events(s, kind="alert_resolved")
        assert verify(s).ok
    assert [e.subject for e in entries] == [f"incident:{incident_id}"]
    past = [df.value for df in at.dataframe if "resolved by" in df.value.columns][0]
    assert incident_id in set(past["id"])


def test_silence_mutes_the_alert_and_is_audited(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    incident_id = _critical(seeded_engine)
    at = open_page("alerts")
    at.selectbox(key="silence_for").set_value("1 day")
    at = _act(at, incident_id, "Known vendor incident INC-4411", "silence")
    assert at.success[0].value.startswith(f"Incident #{incident_id} silenced for 1 day by")
    with Session(seeded_engine) as s:
        silence = s.exec(select(Silence)).one()
        entries = list_events(s, kind="alert_silenced")
        assert verify(s).ok
    assert silence.reason == "Known vendor incident INC-4411" and silence.created_by.endswith("(unauthenticated)")
    span = silence.ends_at - silence.starts_at
    assert span.total_seconds() == pytest.approx(86400)
    assert entries[0].details["silence_id"] == silence.id
    assert [m.to_dict() for m in map(Matcher.from_dict, silence.matchers)] == [
        {"name": "deployment", "op": "=", "value": "production"},
        {"name": "task", "op": "=", "value": "knowledge-qa"},
        {"name": "cause", "op": "=", "value": "accuracy"},
    ]
    open_table = [df.value for df in at.dataframe if "silenced until" in df.value.columns][0]
    assert open_table.set_index("id").loc[incident_id, "status"] == "silenced"


def test_an_action_without_a_reason_changes_nothing(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    incident_id = _critical(seeded_engine)
    alert_id = _members(seeded_engine, incident_id)[0].id or 0
    before = len(_events(seeded_engine, alert_id))
    at = _act(open_page("alerts"), incident_id, "   ", "ack")
    assert at.error[0].value == "a reason is required to acknowledge an incident"
    with Session(seeded_engine) as s:
        assert s.get(Alert, alert_id).status == AlertStatus.firing  # type: ignore[union-attr]
        assert list_events(s, kind="alert_acknowledged") == []
    assert len(_events(seeded_engine, alert_id)) == before


def test_one_reason_acknowledges_several_incidents_at_once(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    chosen = [_critical(seeded_engine), _critical(seeded_engine, "dose-calc")]
    at = _act(open_page("alerts"), chosen, "Committee reviewing both tasks on Friday", "ack")
    assert at.success[0].value.startswith(f"Incidents #{chosen[0]}, #{chosen[1]} acknowledged by")
    with Session(seeded_engine) as s:
        assert {a.status for i in chosen for a in incident_members(s, i)} == {AlertStatus.acknowledged}
        assert sorted(e.subject for e in list_events(s, kind="alert_acknowledged")) == sorted(
            f"incident:{i}" for i in chosen
        )


def test_a_silence_by_label_matchers_mutes_what_it_matches(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("alerts")
    at.text_input(key="silence_matchers").input("task=dose-calc, cause=~accuracy|cost")
    at.text_input(key="silence_reason").input("Pharmacy change freeze")
    next(b for b in at.button if b.label == "Create silence").click().run()
    assert not at.exception and at.success[0].value.startswith("Silence #")
    open_table = [df.value for df in at.dataframe if "silenced until" in df.value.columns][0]
    by_id = open_table.set_index("id")
    dose = _critical(seeded_engine, "dose-calc")
    assert by_id.loc[dose, "status"] == "silenced"
    assert by_id.loc[_critical(seeded_engine), "status"] != "silenced"
    with Session(seeded_engine) as s:
        (entry,) = list_events(s, kind="alert_silenced")
    assert entry.details["matchers"] == ["task=dose-calc", "cause=~accuracy|cost"]


def test_requeue_sends_a_dead_letter_again_as_the_signed_in_owner_only(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("alerts")  # --allow-local-actions covers acknowledge, resolve and silence only
    assert all(b.label != "Send again" for b in at.button)
    at = open_page("alerts", secrets=AUTH_SECRETS, user={"is_logged_in": True, "email": OWNER, "email_verified": True})
    with Session(seeded_engine) as s:
        dead = s.exec(select(Notification).where(Notification.status == NotificationStatus.dead)).first()
    assert dead is not None
    at.selectbox(key="requeue_id").set_value(dead.id)
    at.text_input(key="requeue_note").input("Receiver fixed")
    next(b for b in at.button if b.label == "Send again").click().run()
    assert not at.exception
    with Session(seeded_engine) as s:
        row = s.get(Notification, dead.id)
    assert row is not None and row.status == NotificationStatus.pending and row.attempts == 0
    assert row.requeued_by == OWNER
    assert row.requeue_note == "Receiver fixed"


def test_with_sign_in_configured_nothing_shows_until_signed_in(
    seeded: Seeded, open_page: Callable[..., AppTest]
) -> None:
    for page in ("overview", "alerts", "governance"):
        at = open_page(page, secrets=AUTH_SECRETS, user={"is_logged_in": False})
        assert len(at.dataframe) == 0 and len(at.get("plotly_chart")) == 0 and len(at.get("code")) == 0
        assert at.info[0].value.startswith("Sign in")
        assert at.button(key="login").label == "Sign in"


def test_a_signed_in_owner_acts_under_their_email(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    incident_id = _critical(seeded_engine, "dose-calc")
    at = open_page(
        "alerts", secrets=AUTH_SECRETS, user={"is_logged_in": True, "email": CALC_OWNER.upper(), "email_verified": True}
    )
    at = _act(at, incident_id, "Pharmacy reviewing calculations", "ack")
    with Session(seeded_engine) as s:
        incident = s.get(Incident, incident_id)
        entries = list_events(s, kind="alert_acknowledged")
    assert incident is not None and incident.acknowledged_by == CALC_OWNER
    assert entries[0].actor == CALC_OWNER and entries[0].details["authenticated"] is True


def test_a_signed_in_non_owner_may_look_but_not_act(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("alerts", secrets=AUTH_SECRETS, user={"is_logged_in": True, "email": OUTSIDER})
    assert len(at.dataframe) >= 2  # they see the alerts
    assert all(at.button(key=k).disabled for k in ("ack", "resolve", "silence"))
    assert "not an owner" in at.info[0].value
    assert not [b for b in at.button if b.label == "Send again"]
    viewer = Viewer(OUTSIDER, OUTSIDER, True, False, "not an owner")
    with pytest.raises(NotAllowed):
        acknowledge_incidents(
            seeded_engine, load_plan(seeded.plan_path), viewer, [_critical(seeded_engine)], "I looked", NOW
        )
    with Session(seeded_engine) as s:
        assert list_events(s, kind="alert_acknowledged") == []


def test_an_owner_whose_email_is_not_verified_may_only_look(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    """Owners are matched on the e-mail claim: an unverified claim could be anyone's address."""
    for claims in (
        {"email": CALC_OWNER},
        {"email": CALC_OWNER, "email_verified": False},
        {"email": CALC_OWNER, "email_verified": "true"},
    ):
        at = open_page("alerts", secrets=AUTH_SECRETS, user={"is_logged_in": True} | claims)
        assert all(at.button(key=k).disabled for k in ("ack", "resolve", "silence"))
        assert "not verified" in at.info[0].value


def test_without_sign_in_the_dashboard_is_read_only_unless_started_to_allow_local_actions(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEDMON_DASHBOARD_LOCAL_ACTIONS")
    at = open_page("alerts")
    assert len(at.dataframe) >= 2  # reading is allowed
    assert all(at.button(key=k).disabled for k in ("ack", "resolve", "silence"))
    assert at.info[0].value.startswith("read-only")
    assert "listening on 127.0.0.1: read-only" in at.caption[0].value
    viewer = Viewer("someone (unauthenticated)", None, False, False, "read-only")
    with pytest.raises(NotAllowed):
        acknowledge_incidents(seeded_engine, load_plan(seeded.plan_path), viewer, [_critical(seeded_engine)], "x", NOW)


def test_local_actions_are_refused_when_listening_beyond_loopback(
    seeded: Seeded, open_page: Callable[..., AppTest]
) -> None:
    from tests.dashboards.conftest import local_dashboard

    with local_dashboard("0.0.0.0"):
        at = open_page("alerts")
    assert all(at.button(key=k).disabled for k in ("ack", "resolve", "silence"))
    assert "listening on 0.0.0.0: read-only" in at.caption[0].value


def test_a_plan_requiring_sign_in_shows_nothing_without_an_auth_section(
    seeded: Seeded, open_page: Callable[..., AppTest]
) -> None:
    text = seeded.plan_path.read_text("utf-8")
    seeded.plan_path.write_text(text + "\ndashboard:\n  auth: oidc\n", "utf-8")
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert len(at.dataframe) == 0 and len(at.get("plotly_chart")) == 0
    assert "requires sign-in" in at.error[0].value


def test_no_incident_is_ticked_before_the_user_chooses(
    seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    """Acknowledging starts from nothing chosen, and there is no "Select all" to click by mistake."""
    incident_id = _critical(seeded_engine)
    at = open_page("alerts")
    boxes = [c for c in at.checkbox if c.key and c.key.startswith("incident_")]
    assert boxes and not any(c.value for c in boxes) and f"incident_{incident_id}" in [c.key for c in boxes]
    assert not [m for m in at.multiselect if m.key == "incidents"]
