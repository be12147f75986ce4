"""``dedup.decide``: one case per NotifyReason branch, with the fingerprints it reports as news."""

from __future__ import annotations

from datetime import timedelta

import pytest

from medmon.alerts.dedup import Decision, GroupState, NotifyReason, Timers, Told, decide
from tests.alerts.helpers import T0

F = frozenset
TIMERS = Timers(
    group_wait=timedelta(seconds=30), group_interval=timedelta(minutes=5), repeat_interval=timedelta(hours=4)
)
SENT = T0 - timedelta(hours=1)  # the route was last told an hour ago

# id: (state now, what the route was told, timers, minutes after T0) -> expected decision
CASES = {
    "new_group": (
        GroupState(F({"a"}), born_at=T0 - timedelta(minutes=1)),
        None,
        TIMERS,
        0,
        Decision(NotifyReason.new_group, F({"a"})),
    ),
    "waiting-inside-group_wait": (GroupState(F({"a"}), born_at=T0), None, TIMERS, 0.25, Decision(NotifyReason.waiting)),
    "nothing-new-group-without-firing": (
        GroupState(acknowledged=F({"a"}), resolved=F({"b"})),
        None,
        TIMERS,
        0,
        Decision(NotifyReason.nothing),
    ),
    "escalated-first-time-on-escalation-route": (
        GroupState(F({"a"}), born_at=T0 - timedelta(hours=1)),
        None,
        Timers(escalation_route=True),
        0,
        Decision(NotifyReason.escalated, F({"a"})),
    ),
    "new_firing": (
        GroupState(F({"a", "b"}), born_at=T0),
        Told(F({"a"}), sent_at=SENT),
        TIMERS,
        0,
        Decision(NotifyReason.new_firing, F({"b"})),
    ),
    "escalated-new-alert-on-escalation-route": (
        GroupState(F({"a", "b"})),
        Told(F({"a"}), sent_at=SENT),
        Timers(escalation_route=True),
        0,
        Decision(NotifyReason.escalated, F({"b"})),
    ),
    "acknowledged": (
        GroupState(F({"b"}), F({"a"})),
        Told(F({"a", "b"}), sent_at=SENT),
        TIMERS,
        0,
        Decision(NotifyReason.acknowledged, F({"a"})),
    ),
    "acknowledged-before-it-was-ever-sent-is-not-news": (
        GroupState(F({"b"}), F({"a"})),
        Told(F({"b"}), sent_at=SENT),
        TIMERS,
        0,
        Decision(NotifyReason.unchanged),
    ),
    "resolved": (
        GroupState(F({"b"}), resolved=F({"a"})),
        Told(F({"a", "b"}), sent_at=SENT),
        TIMERS,
        0,
        Decision(NotifyReason.resolved, F({"a"}), F({"a"})),
    ),
    "resolved-after-acknowledged": (
        GroupState(resolved=F({"a"})),
        Told(acknowledged=F({"a"}), sent_at=SENT),
        TIMERS,
        0,
        Decision(NotifyReason.resolved, F({"a"}), F({"a"})),
    ),
    "resolved-but-never-told-firing-is-nothing": (
        GroupState(resolved=F({"a"})),
        Told(F({"b"}), sent_at=SENT),
        TIMERS,
        0,
        Decision(NotifyReason.nothing),
    ),
    "resolved-already-told": (
        GroupState(resolved=F({"a"})),
        Told(F({"a"}), resolved=F({"a"}), sent_at=SENT),
        TIMERS,
        0,
        Decision(NotifyReason.nothing),
    ),
    "resolved-route-without-send_resolved": (
        GroupState(resolved=F({"a"})),
        Told(F({"a"}), sent_at=SENT),
        Timers(send_resolved=False),
        0,
        Decision(NotifyReason.nothing),
    ),
    "repeat": (
        GroupState(F({"a"})),
        Told(F({"a"}), sent_at=T0 - timedelta(hours=4)),
        TIMERS,
        0,
        Decision(NotifyReason.repeat, F({"a"})),
    ),
    "unchanged-before-repeat": (
        GroupState(F({"a"})),
        Told(F({"a"}), sent_at=T0 - timedelta(hours=3, minutes=59)),
        TIMERS,
        0,
        Decision(NotifyReason.unchanged),
    ),
    "no-repeat-for-acknowledged-only": (
        GroupState(acknowledged=F({"a"})),
        Told(F({"a"}), F({"a"}), sent_at=T0 - timedelta(days=2)),
        TIMERS,
        0,
        Decision(NotifyReason.unchanged),
    ),
    "throttled-by-group_interval": (
        GroupState(F({"a", "b"})),
        Told(F({"a"}), sent_at=T0 - timedelta(minutes=4)),
        TIMERS,
        0,
        Decision(NotifyReason.throttled, F({"b"})),
    ),
    "group_interval-elapsed": (
        GroupState(F({"a", "b"})),
        Told(F({"a"}), sent_at=T0 - timedelta(minutes=5)),
        TIMERS,
        0,
        Decision(NotifyReason.new_firing, F({"b"})),
    ),
    "nothing-all-silenced": (GroupState(), Told(F({"a"}), sent_at=SENT), TIMERS, 0, Decision(NotifyReason.nothing)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_decide_branch(case: str) -> None:
    state, told, timers, minutes, expected = CASES[case]
    assert decide(state, told, timers, T0 + timedelta(minutes=minutes)) == expected


def test_every_reason_has_a_case() -> None:
    covered = {c[4].reason for c in CASES.values()}
    assert covered == set(NotifyReason)


@pytest.mark.parametrize(
    ("reason", "sends", "event"),
    [
        (NotifyReason.new_group, True, "firing"),
        (NotifyReason.new_firing, True, "firing"),
        (NotifyReason.escalated, True, "escalated"),
        (NotifyReason.acknowledged, True, "acknowledged"),
        (NotifyReason.resolved, True, "resolved"),
        (NotifyReason.repeat, True, "repeat"),
        (NotifyReason.waiting, False, "waiting"),
        (NotifyReason.throttled, False, "throttled"),
        (NotifyReason.unchanged, False, "unchanged"),
        (NotifyReason.nothing, False, "nothing"),
    ],
)
def test_reason_sends_and_event(reason: NotifyReason, sends: bool, event: str) -> None:
    assert reason.sends is sends
    assert reason.event == event
