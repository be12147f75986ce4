"""Alert lifecycle: dedup by fingerprint, fire/refresh/resolve/re-fire, acknowledge, resolve by a
person, derived status, and every transition stored with its time and actor."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from medmon.alerts import (
    Alert,
    AlertStatus,
    Notification,
    NotifyPolicy,
    acknowledge,
    alert_history,
    apply_signals,
    flush,
    lifecycle_status,
    open_alerts,
    resolve,
    status_of,
)
from tests.alerts.helpers import FakeClock, apply_signal, clear, fire


def count(session: Session, model: type) -> int:
    return int(session.exec(select(func.count()).select_from(model)).one())


def test_same_fingerprint_updates_one_alert(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        first = apply_signal(s, fire(estimate=0.61), policy, clock())
        clock.advance(hours=1)
        again = apply_signal(s, fire(estimate=0.58, summary="dosing: worse"), policy, clock())
        s.commit()
        assert first is not None and again is not None and first.id == again.id
        assert count(s, Alert) == 1
        assert again.evidence == {"estimate": 0.58} and again.summary == "dosing: worse"
        assert again.starts_at == first.starts_at  # the episode began with the first finding
        assert count(s, Notification) == 1  # the refresh is not news


def test_clearing_signal_without_alert_does_nothing(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        assert apply_signal(s, clear(), policy, clock()) is None
        assert count(s, Alert) == 0


def test_fire_resolve_refire_history(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        clock.advance(hours=2)
        apply_signal(s, clear(), policy, clock())
        assert alert.status == AlertStatus.resolved and alert.resolved_by == "medmon"
        assert alert.ends_at == clock()
        clock.advance(hours=3)
        apply_signal(s, fire(), policy, clock())
        s.commit()
        assert alert.status == AlertStatus.firing and alert.ends_at is None and alert.starts_at == clock()
        history = [(e.from_status, e.to_status, e.actor) for e in alert_history(s, alert.id)]
        assert history == [
            (None, "firing", "medmon"),
            ("firing", "resolved", "medmon"),
            ("resolved", "firing", "medmon"),
        ]


def test_acknowledge_records_who_when_note(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        clock.advance(minutes=7)
        acknowledge(s, alert.id, "dr.owner@hospital.example", "checking the dosing pack", clock())
        s.commit()
        assert alert.status == AlertStatus.acknowledged
        assert (alert.acknowledged_by, alert.acknowledged_at, alert.ack_note) == (
            "dr.owner@hospital.example",
            clock(),
            "checking the dosing pack",
        )
        last = alert_history(s, alert.id)[-1]
        assert (last.from_status, last.to_status, last.actor, last.at, last.note) == (
            "firing",
            "acknowledged",
            "dr.owner@hospital.example",
            clock(),
            "checking the dosing pack",
        )


def test_acknowledge_errors(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        with pytest.raises(LookupError, match="no alert with id 999"):
            acknowledge(s, 999, "a", "n", clock())
        with pytest.raises(ValueError, match="must name who"):
            acknowledge(s, alert.id, " ", "n", clock())
        acknowledge(s, alert.id, "a", "n", clock())
        with pytest.raises(ValueError, match="is acknowledged, only a firing alert"):
            acknowledge(s, alert.id, "b", "n", clock())


def test_person_resolves_with_reason_and_receivers_are_told(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        clock.advance(minutes=30)
        resolve(s, alert.id, "dr.owner@hospital.example", "pack was mislabelled; fixed", policy, clock())
        s.commit()
        assert (alert.resolved_by, alert.resolve_reason, alert.ends_at) == (
            "dr.owner@hospital.example",
            "pack was mislabelled; fixed",
            clock(),
        )
        events = [n.event for n in s.exec(select(Notification).order_by(Notification.id)).all()]
        assert events == ["firing", "resolved"]
        with pytest.raises(ValueError, match="already resolved"):
            resolve(s, alert.id, "x", "again", policy, clock())


def test_resolve_needs_a_reason(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        with pytest.raises(ValueError, match="reason is required"):
            resolve(s, alert.id, "x", "  ", None, clock())
        with pytest.raises(LookupError):
            resolve(s, 12345, "x", "r", None, clock())


def test_resolve_without_routes_is_notified_by_the_next_flush(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        clock.advance(minutes=10)
        resolve(s, alert.id, "x", "false alarm", None, clock())
        assert count(s, Notification) == 1
        assert [n.event for n in flush(s, policy, clock())] == ["resolved"]


def test_status_is_derived_from_timestamps(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None
        assert lifecycle_status(alert) == AlertStatus.firing == status_of(alert, [], clock())
        alert.acknowledged_at = clock()
        assert lifecycle_status(alert) == AlertStatus.acknowledged
        alert.ends_at = clock()
        assert lifecycle_status(alert) == AlertStatus.resolved


def test_open_alerts_newest_first(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        apply_signals(s, [fire(task="a"), fire(task="b")], policy, clock())
        clock.advance(hours=1)
        apply_signal(s, fire(task="c"), policy, clock())
        apply_signal(s, clear(task="a"), policy, clock())
        s.commit()
        assert [a.task_id for a in open_alerts(s)] == ["c", "b"]


def test_one_probe_findings_make_one_notification_per_incident(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signals(
            s,
            [
                fire(metric="score"),
                fire(rule="below_minimum"),
                fire(metric="cost", rule="cost_over_budget"),
                fire(task="triage"),
            ],
            policy,
            clock(),
        )
        s.commit()
        rows = s.exec(select(Notification).order_by(Notification.group_key)).all()
        # dosing's cost finding came with its accuracy drop (one evaluation): one incident, one notification
        assert [(n.group_key, n.alert_count) for n in rows] == [
            ("production/dosing/accuracy", 3),
            ("production/triage/accuracy", 1),
        ]


def test_clock_in_the_record_is_the_injected_one(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.last_notified_at == clock()
        clock.advance(days=1)
        assert alert.last_seen_at == clock() - timedelta(days=1)
