"""Silences: matchers (equality and regex), expiry, reason and author; a silenced alert sends
nothing while the silence is active and is notified again when it ends still firing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from medmon.alerts import (
    AlertStatus,
    Matcher,
    Notification,
    NotifyPolicy,
    Silence,
    active_silences,
    alert_history,
    create_silence,
    expire_silence,
    flush,
    list_silences,
    silence_alert,
    status_of,
)
from tests.alerts.helpers import FakeClock, apply_signal, clear, fire


def sent(session: Session) -> list[tuple[str, str]]:
    rows = session.exec(select(Notification).order_by(Notification.id)).all()
    return [(n.group_key.split("/")[1], n.event) for n in rows]


def test_regex_silence_mutes_matching_tasks_only(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        create_silence(
            s,
            ["task=~dos.*", "severity=critical"],
            ends_at=clock() + timedelta(hours=2),
            reason="dosing pack being replaced",
            created_by="cmio@hospital.example",
            now=clock(),
        )
        dosing = apply_signal(s, fire(task="dosing"), policy, clock())
        triage = apply_signal(s, fire(task="triage"), policy, clock())
        s.commit()
        assert sent(s) == [("triage", "firing")]
        silences = active_silences(s, clock())
        assert dosing is not None and triage is not None
        assert status_of(dosing, silences, clock()) == AlertStatus.silenced
        assert status_of(triage, silences, clock()) == AlertStatus.firing
        assert dosing.status == AlertStatus.firing  # the stored lifecycle is untouched


def test_silence_expiry_renotifies_a_still_firing_alert(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        until = clock() + timedelta(hours=1)
        silence_alert(s, alert.id, "oncall@hospital.example", "known issue, vendor ticket 42", until, clock())
        start = clock()
        for minutes in (9, 30, 59):  # inside the silence: nothing, not even the repeat
            clock.t = start + timedelta(minutes=minutes)
            assert flush(s, policy, clock()) == []
        clock.t = start + timedelta(hours=1, minutes=1)
        assert [n.event for n in flush(s, policy, clock())] == ["firing"]  # ended, still firing: news again
        s.commit()
        assert sent(s) == [("dosing", "firing"), ("dosing", "firing")]


def test_alert_resolving_while_silenced_sends_nothing(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        apply_signal(s, fire(), policy, clock())
        create_silence(
            s,
            ["task=dosing"],
            ends_at=clock() + timedelta(hours=3),
            reason="maintenance",
            created_by="ops",
            now=clock(),
        )
        clock.advance(minutes=10)
        flush(s, policy, clock())
        apply_signal(s, clear(), policy, clock())
        clock.advance(hours=4)
        flush(s, policy, clock())
        assert sent(s) == [("dosing", "firing")]


def test_expire_early_records_who_and_history(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        alert = apply_signal(s, fire(), policy, clock())
        assert alert is not None and alert.id is not None
        row = silence_alert(s, alert.id, "ops@hospital.example", "deploy window", clock() + timedelta(hours=8), clock())
        assert row.id is not None
        clock.advance(minutes=20)
        expire_silence(s, row.id, "cmio@hospital.example", clock())
        s.commit()
        assert row.ends_at == clock() and row.expired_by == "cmio@hospital.example"
        assert active_silences(s, clock()) == []
        assert list_silences(s, clock()) == [] and len(list_silences(s, clock(), include_ended=True)) == 1
        notes = [(e.to_status, e.actor) for e in alert_history(s, alert.id)]
        assert notes[1:] == [("silenced", "ops@hospital.example"), ("firing", "cmio@hospital.example")]
        with pytest.raises(ValueError, match="already ended"):
            expire_silence(s, row.id, "x", clock())


def test_future_silence_is_not_active_yet(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        create_silence(
            s,
            ["task=dosing"],
            starts_at=clock() + timedelta(hours=1),
            ends_at=clock() + timedelta(hours=2),
            reason="planned maintenance",
            created_by="ops",
            now=clock(),
        )
        apply_signal(s, fire(), policy, clock())
        assert sent(s) == [("dosing", "firing")]
        assert len(list_silences(s, clock())) == 1 and active_silences(s, clock()) == []


@pytest.mark.parametrize(
    ("matchers", "kwargs", "message"),
    [
        ([], {}, "at least one matcher"),
        (["task=~(unclosed"], {}, "invalid regular expression"),
        (["task dosing"], {}, "expected a matcher like"),
        (["task=dosing"], {"reason": " "}, "reason is required"),
        (["task=dosing"], {"created_by": ""}, "must name who"),
        (["task=dosing"], {"hours": -1}, "must end after it starts"),
    ],
)
def test_bad_silences_are_refused(
    engine: Engine, clock: FakeClock, matchers: list[str], kwargs: dict[str, object], message: str
) -> None:
    hours = float(kwargs.pop("hours", 1))  # type: ignore[arg-type]
    args: dict[str, object] = {"reason": "r", "created_by": "me", **kwargs}
    with Session(engine) as s, pytest.raises(ValueError, match=message):
        create_silence(s, matchers, ends_at=clock() + timedelta(hours=hours), now=clock(), **args)  # type: ignore[arg-type]
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(Silence)).one() == 0


def test_silence_alert_errors(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        with pytest.raises(LookupError, match="no alert with id 7"):
            silence_alert(s, 7, "me", "r", clock() + timedelta(hours=1), clock())
        alert = apply_signal(s, fire(), policy, clock())
        apply_signal(s, clear(), policy, clock())
        assert alert is not None and alert.id is not None
        with pytest.raises(ValueError, match="resolved"):
            silence_alert(s, alert.id, "me", "r", clock() + timedelta(hours=1), clock())


@pytest.mark.parametrize(
    ("text", "labels", "hit"),
    [
        ("task=dosing", {"task": "dosing"}, True),
        ("task=dosing", {"task": "dosing-2"}, False),
        ("task!=dosing", {"task": "triage"}, True),
        ("task=~dos.*", {"task": "dosing"}, True),
        ("task=~dos", {"task": "dosing"}, False),  # anchored at both ends
        ("task!~dos.*", {"task": "dosing"}, False),
        ("owner=", {}, True),  # a missing label reads as empty
        ('summary="a b"', {"summary": "a b"}, True),
    ],
)
def test_matcher(text: str, labels: dict[str, str], hit: bool) -> None:
    m = Matcher.parse(text)
    assert m.matches(labels) is hit
    assert Matcher.from_dict(m.to_dict()) == m
