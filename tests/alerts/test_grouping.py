"""Grouping per task (group_wait, group_interval), repeats, acknowledgement, escalation, route
matchers and the fallback route, truncation, and a 10,000-finding burst kept to a bounded
number of notifications."""

from __future__ import annotations

import math
import random
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.alerts import (
    Alert,
    Escalation,
    Matcher,
    Notification,
    NotifyLog,
    NotifyPolicy,
    RouteSpec,
    Severity,
    acknowledge,
    alert_history,
    apply_signals,
    flush,
)
from tests.alerts.helpers import FakeClock, apply_signal, clear, fire


def rows(session: Session) -> list[Notification]:
    return list(session.exec(select(Notification).order_by(Notification.id)).all())


def test_group_wait_collects_alerts_into_one_notification(engine: Engine, clock: FakeClock) -> None:
    policy = NotifyPolicy(routes=(RouteSpec("hook"),), group_wait=timedelta(seconds=30))
    with Session(engine) as s:
        apply_signal(s, fire(metric="score"), policy, clock())
        clock.advance(seconds=10)
        apply_signal(s, fire(rule="below_minimum"), policy, clock())  # the same accuracy incident
        assert rows(s) == []  # still inside group_wait
        clock.advance(seconds=21)
        out = flush(s, policy, clock())
        assert [(n.event, n.alert_count) for n in out] == [("firing", 2)]
        assert {a["labels"]["rule"] for a in out[0].payload["alerts"]} == {"drift_drop", "below_minimum"}


def test_group_interval_holds_news_then_sends_it_together(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        apply_signal(s, fire(metric="score"), policy, clock())
        for metric in ["score[sex=F]", "score[sex=M]", "score[age=65+]"]:  # one a minute, one incident
            clock.advance(minutes=1)
            apply_signal(s, fire(metric=metric, rule="subgroup_drop"), policy, clock())
        assert len(rows(s)) == 1
        clock.advance(minutes=2)  # 5 minutes after the first notification
        out = flush(s, policy, clock())
        assert [(n.payload["reason"], n.alert_count) for n in out] == [("new_firing", 4)]
        assert [a["new"] for a in out[0].payload["alerts"]] == [True, True, True, False]  # news listed first


def test_repeat_until_acknowledged_then_ack_is_notified(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        clock.advance(hours=3, minutes=59)
        assert flush(s, policy, clock()) == []
        clock.advance(minutes=1)
        assert [n.event for n in flush(s, policy, clock())] == ["repeat"]
        clock.advance(minutes=10)
        acknowledge(s, alert.id, "dr.owner", "on it", clock())
        ack = flush(s, policy, clock())
        assert [n.event for n in ack] == ["acknowledged"]
        assert ack[0].payload["alerts"][0]["acknowledged_by"] == "dr.owner"
        clock.advance(days=2)
        assert flush(s, policy, clock()) == []  # acknowledged: no more repeats


def test_resolved_is_sent_once_to_routes_that_were_told(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        apply_signal(s, fire(), policy, clock())
        clock.advance(hours=1)
        apply_signal(s, clear(), policy, clock())
        clock.advance(hours=5)
        flush(s, policy, clock())
        assert [(n.event, n.payload["status"]) for n in rows(s)] == [("firing", "firing"), ("resolved", "resolved")]


def test_routes_matchers_and_fallback(engine: Engine, clock: FakeClock) -> None:
    policy = NotifyPolicy(
        routes=(
            RouteSpec("pager", matchers=(Matcher.parse("severity=critical"),)),
            RouteSpec("oncall", matchers=(Matcher.parse("task=~never-.*"),)),
        ),
        fallback_route="oncall",
    )
    with Session(engine) as s:
        apply_signals(
            s,
            [fire(task="dosing", severity=Severity.critical), fire(task="billing", severity=Severity.warning)],
            policy,
            clock(),
        )
        assert sorted((n.route, n.group_key) for n in rows(s)) == [
            ("oncall", "production/billing/accuracy"),
            ("pager", "production/dosing/accuracy"),
        ]


def test_unacknowledged_critical_escalates_once(engine: Engine, clock: FakeClock) -> None:
    policy = NotifyPolicy(
        routes=(RouteSpec("slack"), RouteSpec("pagerduty")),
        escalation=Escalation(after=timedelta(minutes=30), route="pagerduty"),
    )
    with Session(engine) as s:
        crit = apply_signal(s, fire(task="dosing", severity=Severity.critical), policy, clock())
        warn = apply_signal(s, fire(task="billing", severity=Severity.warning), policy, clock())
        assert crit is not None and crit.id is not None and warn is not None
        assert {n.route for n in rows(s)} == {"slack"}  # the escalation route waits
        clock.advance(minutes=29)
        assert flush(s, policy, clock()) == []
        clock.advance(minutes=1)
        out = flush(s, policy, clock())
        assert [(n.route, n.event, n.group_key) for n in out] == [
            ("pagerduty", "escalated", "production/dosing/accuracy")
        ]
        assert crit.escalated_to == "pagerduty" and warn.escalated_at is None
        assert "escalated to route pagerduty" in alert_history(s, crit.id)[-1].note
        clock.advance(hours=1)
        assert flush(s, policy, clock()) == []


def test_acknowledged_critical_does_not_escalate(engine: Engine, clock: FakeClock) -> None:
    policy = NotifyPolicy(
        routes=(RouteSpec("slack"), RouteSpec("pagerduty")),
        escalation=Escalation(after=timedelta(minutes=30), route="pagerduty"),
    )
    with Session(engine) as s:
        crit = apply_signal(s, fire(severity=Severity.critical), policy, clock())
        assert crit is not None and crit.id is not None
        clock.advance(minutes=10)
        acknowledge(s, crit.id, "dr.owner", "looking", clock())
        clock.advance(hours=1)
        assert all(n.route == "slack" for n in flush(s, policy, clock()))
        assert crit.escalated_at is None


def test_truncation_lists_max_alerts_and_counts_all(engine: Engine, clock: FakeClock) -> None:
    policy = NotifyPolicy(routes=(RouteSpec("hook"),), max_alerts=5)
    with Session(engine) as s:
        apply_signals(s, [fire(metric=f"score[site={i}]", rule="subgroup_drop") for i in range(12)], policy, clock())
        (n,) = rows(s)
        assert n.alert_count == 12 and len(n.payload["alerts"]) == 5 and n.payload["truncated_alerts"] == 7
        assert n.payload["counts"] == {"firing": 12, "acknowledged": 0, "resolved": 0}


def _burst(
    session: Session,
    policy: NotifyPolicy,
    clock: FakeClock,
    tasks: int,
    metrics: int,
    total: int,
    seconds: float,
    rng: random.Random,
) -> None:
    """``total`` findings (some clearing) over ``seconds``, in batches of 100 like probe runs."""
    start = clock()
    batch = 100
    for b in range(total // batch):
        clock.t = start + timedelta(seconds=seconds * b / (total // batch))
        signals = []
        for _ in range(batch):
            task, metric = f"task-{rng.randrange(tasks)}", f"m{rng.randrange(metrics)}"
            signals.append(
                fire(task=task, metric=metric, rule="drift_drop", estimate=rng.random())
                if rng.random() < 0.8
                else clear(task=task, metric=metric, rule="drift_drop")
            )
        apply_signals(session, signals, policy, clock())


@pytest.mark.slow
def test_burst_of_10000_findings_in_a_minute_is_bounded(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    tasks, tail = 20, timedelta(minutes=11)
    start = clock()
    with Session(engine) as s:
        _burst(s, policy, clock, tasks=tasks, metrics=5, total=10_000, seconds=60, rng=random.Random(4))
        while clock() < start + tail:  # the scheduler's alert pass keeps running afterwards
            clock.advance(seconds=30)
            flush(s, policy, clock())
        s.commit()
        sent = rows(s)
        # Per group and route: one at the start, then at most one per group_interval.
        bound = tasks * (1 + math.floor(tail / policy.group_interval))
        assert len(sent) <= bound, f"{len(sent)} notifications for a burst; bound {bound}"
        assert len({n.group_key for n in sent}) == tasks
        # Nothing is lost: what the route was last told is exactly what is firing now.
        firing = {a.fingerprint for a in s.exec(select(Alert).where(Alert.ends_at == None)).all()}  # noqa: E711
        told = {fp for log in s.exec(select(NotifyLog)).all() for fp in log.firing}
        assert told == firing


@pytest.mark.slow
def test_burst_of_distinct_alerts_for_one_task_is_one_message_per_interval(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    with Session(engine) as s:
        start = clock()
        for b in range(20):  # 2,000 different alerts for one task within 12 seconds
            clock.t = start + timedelta(seconds=0.6 * b)
            apply_signals(
                s,
                [fire(metric=f"score[item={b * 100 + i}]", rule="subgroup_drop") for i in range(100)],
                policy,
                clock(),
            )
        clock.t = start + timedelta(minutes=5)
        flush(s, policy, clock())
        sent = rows(s)
        assert len(sent) == 2  # the first batch at once, the other 1,900 together one group_interval later
        assert sent[-1].alert_count == 2000 and len(sent[-1].payload["alerts"]) == policy.max_alerts
        assert sum(a["new"] for a in sent[-1].payload["alerts"]) == policy.max_alerts  # news listed first
        assert sent[-1].payload["truncated_alerts"] == 2000 - policy.max_alerts


def test_a_repeat_carries_the_figure_at_sending_time_not_the_first_firing_one(engine: Engine, clock: FakeClock) -> None:
    """The 3 a.m. repeat says what the score is at 3 a.m.: the monitor's figure is read when each
    notification is written, and every channel's text (Slack's here) shows it."""
    from medmon.alerts.channels.slack import SlackChannel, SlackConfig

    figures = iter(["score 0.61 (95% interval 0.55-0.67, latest 200 answers)", "score 0.54 (0.48-0.60)"])
    seen: list[str] = []

    def figure(session: Session, task: str) -> str:
        seen.append(task)
        return next(figures)

    policy = NotifyPolicy(routes=(RouteSpec("hook"),), repeat_interval=timedelta(hours=4), figure=figure)
    slack = SlackChannel(SlackConfig(name="hook", url="https://hooks.example/x"))  # type: ignore[arg-type]
    with Session(engine) as s:
        apply_signal(s, fire(metric="score"), policy, clock())
        first = rows(s)[-1].payload
        clock.advance(hours=4, seconds=1)
        flush(s, policy, clock())
        repeat = rows(s)[-1].payload
    assert seen == ["dosing", "dosing"]
    assert first["alerts"][0]["now"].startswith("score 0.61") and repeat["alerts"][0]["now"] == "score 0.54 (0.48-0.60)"
    assert repeat["summary"].endswith("Now: score 0.54 (0.48-0.60)") and "0.61" not in repeat["summary"]
    assert "Now: score 0.54" in slack.render(repeat)["blocks"][1]["text"]["text"]
