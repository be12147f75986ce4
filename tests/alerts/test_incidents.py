"""Incidents: one per task and cause, with the signals that point at it as members; one
notification, one acknowledgement and one resolution cover them all; a subgroup is its own
incident only when its gap to the rest widens."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.alerts import (
    AlertStatus,
    Notification,
    NotifyPolicy,
    Severity,
    acknowledge_incident,
    active_silences,
    alert_history,
    apply_signals,
    incident_causes,
    incident_members,
    incident_status,
    open_incidents,
    resolve_incident,
    silence_incident,
    status_of,
)
from tests.alerts.helpers import FakeClock, clear, fire

ACCURACY_DROP = [
    fire(metric="score"),
    fire(rule="below_minimum"),
    *(fire(metric=f"score[{g}]", rule="subgroup_drop") for g in ("sex=F", "sex=M", "age=65+")),
]


def notifications(session: Session) -> list[Notification]:
    return list(session.exec(select(Notification).order_by(Notification.id)).all())


def test_one_accuracy_drop_is_one_incident_whatever_the_number_of_signals(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    """Signals of one task at one moment (one evaluation) are one problem: one incident, one page."""
    with Session(engine) as s:
        alerts = apply_signals(
            s,
            [
                *ACCURACY_DROP,
                fire(metric="cost", rule="cost_over_budget"),
                fire(metric="gap[sex=F]", rule="subgroup_gap"),
            ],
            policy,
            clock(),
        )
        s.commit()
        (incident,) = open_incidents(s)
        assert incident.cause == "accuracy"
        assert {a.incident_id for a in alerts} == {incident.id}
        members = incident_members(s, incident.id or 0)
        assert [a.rule for a in members][:1] == ["drift_drop"] and len(members) == 7
        assert incident_causes(incident, members) == ["accuracy", "subgroup_gap", "cost"]  # most serious first
        sent = notifications(s)
        assert sorted((n.group_key, n.alert_count) for n in sent) == [("production/dosing/accuracy", 7)]
        body = sent[0].payload["incident"]
        assert body["id"] == incident.id and body["title"] == "dosing: accuracy, a subgroup fell behind, cost"
        assert body["open_members"] == 7 and body["runbook"].startswith("Check whether")
        assert "Answers cost more per call" in body["runbook"]


def test_a_cost_rise_after_longer_answers_joins_their_incident(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    """Longer answers cost more: one problem, one incident and one notification group, hours apart."""
    with Session(engine) as s:
        apply_signals(
            s, [fire(metric="verbosity", rule="output_length_shift", severity=Severity.warning)], policy, clock()
        )
        clock.advance(hours=3)
        (cost,) = apply_signals(s, [fire(metric="cost", rule="cost_over_budget")], policy, clock())
        s.commit()
        (incident,) = open_incidents(s)
        assert incident.cause == "output" and cost is not None and cost.incident_id == incident.id
        assert cost.group_key == incident.key
        assert {n.group_key for n in notifications(s)} == {incident.key}


def test_signals_of_one_task_at_different_moments_are_different_incidents(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signals(s, ACCURACY_DROP, policy, clock())
        clock.advance(minutes=30)
        apply_signals(s, [fire(metric="cost", rule="cost_over_budget")], policy, clock())
        s.commit()
        assert sorted(i.cause for i in open_incidents(s)) == ["accuracy", "cost"]


def test_one_acknowledgement_covers_every_member_and_those_that_join_later(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signals(s, ACCURACY_DROP[:4], policy, clock())
        (incident,) = open_incidents(s)
        clock.advance(minutes=10)
        acknowledge_incident(s, incident.id or 0, "dr.owner", "reviewing with the vendor", clock(), routes=policy)
        s.commit()
        members = incident_members(s, incident.id or 0)
        assert [a.status for a in members] == [AlertStatus.acknowledged] * 4
        assert all(a.acknowledged_by == "dr.owner" for a in members)
        assert alert_history(s, members[0].id or 0)[-1].note == f"incident #{incident.id}: reviewing with the vendor"
        assert [n.event for n in notifications(s)] == ["firing", "acknowledged"]  # one each, not one per signal
        assert notifications(s)[-1].payload["incident"]["acknowledged_by"] == "dr.owner"

        clock.advance(minutes=10)  # one more subgroup falls: more evidence of the same problem, no new page
        (late,) = apply_signals(s, ACCURACY_DROP[4:], policy, clock())
        s.commit()
        assert late is not None and late.incident_id == incident.id and late.status == AlertStatus.acknowledged
        assert late.ack_note == f"covered by incident #{incident.id}: reviewing with the vendor"
        assert [n.event for n in notifications(s)] == ["firing", "acknowledged"]
        with pytest.raises(ValueError, match="already acknowledged"):
            acknowledge_incident(s, incident.id or 0, "someone", "again", clock())


def test_resolving_the_incident_resolves_every_member_and_a_return_opens_a_new_one(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signals(s, ACCURACY_DROP, policy, clock())
        (incident,) = open_incidents(s)
        first_id = incident.id or 0
        clock.advance(minutes=10)
        with pytest.raises(ValueError, match="reason is required"):
            resolve_incident(s, first_id, "dr.owner", " ", clock())
        resolve_incident(s, first_id, "dr.owner", "prompt rolled back", clock(), routes=policy)
        s.commit()
        assert open_incidents(s) == []
        assert all(a.status == AlertStatus.resolved for a in incident_members(s, first_id))
        assert incident.closed_at is not None and incident.resolve_reason == "prompt rolled back"
        assert [n.event for n in notifications(s)] == ["firing", "resolved"]
        with pytest.raises(ValueError, match="resolved"):
            acknowledge_incident(s, first_id, "dr.owner", "late", clock())

        clock.advance(hours=1)
        apply_signals(s, ACCURACY_DROP[:1], policy, clock())
        s.commit()
        (again,) = open_incidents(s)
        assert again.id != first_id and again.key == incident.key
        assert [a.rule for a in incident_members(s, again.id or 0)] == ["drift_drop"]


def test_an_incident_closes_by_itself_when_its_last_member_recovers(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signals(s, ACCURACY_DROP[:2], policy, clock())
        (incident,) = open_incidents(s)
        clock.advance(hours=1)
        apply_signals(s, [clear()], policy, clock())
        assert incident.closed_at is None  # below_minimum still fires
        clock.advance(hours=1)
        apply_signals(s, [clear(rule="below_minimum")], policy, clock())
        s.commit()
        assert incident.closed_at == clock() and incident.resolved_by == "medmon"
        assert open_incidents(s) == []


def test_silencing_an_incident_mutes_every_member_including_new_ones(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signals(s, ACCURACY_DROP[:2], policy, clock())
        clock.advance(minutes=5)  # a later evaluation: a problem of its own
        apply_signals(s, [fire(metric="cost", rule="cost_over_budget")], policy, clock())
        accuracy = next(i for i in open_incidents(s) if i.cause == "accuracy")
        silence_incident(
            s, accuracy.id or 0, "dr.owner", "vendor fix due tomorrow", clock() + timedelta(days=1), clock()
        )
        apply_signals(s, ACCURACY_DROP[2:3], policy, clock())
        s.commit()
        silences = active_silences(s, clock())
        members = incident_members(s, accuracy.id or 0)
        assert len(members) == 3
        assert [status_of(a, silences, clock()) for a in members] == [AlertStatus.silenced] * 3
        assert incident_status(accuracy, members, silences, clock()) == AlertStatus.silenced
        cost = next(i for i in open_incidents(s) if i.cause == "cost")
        assert incident_status(cost, incident_members(s, cost.id or 0), silences, clock()) == AlertStatus.firing


def test_the_overall_drop_seen_in_one_slice_is_not_an_equity_finding() -> None:
    """A "sex=male" signal beside a subgroup gap of 0.002 is the task's drop seen in one slice: it is
    worded as such and belongs to the accuracy problem; only the gap detector's finding is the
    subgroup (equity) problem."""
    from medmon.alerts.catalogue import KINDS, cause_of
    from medmon.alerts.causes import cause_title
    from medmon.alerts.rules import detector_alarm
    from tests.alerts.helpers import subject

    evidence = {"estimate": -0.2, "ci_low": -0.3, "ci_high": -0.1, "null_mean": 0.0, "n": 60,
                "quantity": "paired difference"}  # fmt: skip
    within = detector_alarm(subject(), "score[sex=male]", evidence, what=KINDS["subgroup_score"].words(sub="sex=male"))
    assert cause_title(cause_of(within.labels)) == "accuracy"
    assert "not a gap between subgroups" in within.summary and "for the sex=male subgroup" not in within.summary
    gap = detector_alarm(subject(), "gap[sex=male]", {**evidence, "quantity": "gap"})
    assert cause_title(cause_of(gap.labels)) == "a subgroup fell behind"
