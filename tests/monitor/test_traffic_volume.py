"""Calls per hour against the same hours of the reference: a stable week is quiet, a halving is found,
the day-night rhythm is no change, a collapse to nothing is found at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

from medmon.alerts import Alert, Cause, cause_of
from medmon.db import session_scope
from medmon.monitor.detection.drift import CountSR
from medmon.monitor.models import DetectorState, FindingRecord, TrafficReference, TrafficRollup
from medmon.monitor.traffic.ingest import Ingestor, store_calls
from medmon.monitor.traffic.spans import Decoded, Limits
from medmon.monitor.traffic.streams import traffic_pass
from medmon.monitor.traffic.volume import dispersion, volume_reference
from tests.monitor.traffic_helpers import calls_in_hours, clinic_counts, traffic_plan, working_hour

T0 = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday, midnight
PEAK = 200  # calls an hour in working hours


def _store(engine, plan, counts, seed: int) -> None:  # type: ignore[no-untyped-def]
    store_calls(
        engine,
        Ingestor(plan, lambda s: s, Limits(max_age=timedelta(days=3650))),
        Decoded(calls_in_hours(seed, counts)),
        T0,
    )


def _drain(engine, plan, now):  # type: ignore[no-untyped-def]
    while True:
        with session_scope(engine) as s:
            done = traffic_pass(s, plan, now)
        if done.spans < 5000:
            return


def _volume_alerts(engine) -> list[Alert]:  # type: ignore[no-untyped-def]
    with Session(engine) as s:
        return list(s.exec(select(Alert).where(Alert.rule.in_(("traffic_collapse", "traffic_surge")))).all())  # type: ignore[attr-defined]


def _reference(engine, plan, seed: int) -> None:  # type: ignore[no-untyped-def]
    """Three days of traffic as the reference (hour of the day: under a week)."""
    _store(engine, plan, clinic_counts(seed, T0, 72, PEAK), seed)
    _drain(engine, plan, T0 + timedelta(days=3, minutes=11))


def _hour_by_hour(engine, plan, counts, seed: int, stop_on_alert: bool = False) -> int:  # type: ignore[no-untyped-def]
    """Store each hour's calls and run the pass after it, as the service does; hours run."""
    for i, (hour, n) in enumerate(counts):
        _store(engine, plan, [(hour, n)], seed * 1000 + i)
        _drain(engine, plan, hour + timedelta(hours=1, minutes=11))
        if stop_on_alert and _volume_alerts(engine):
            return i + 1
    return len(counts)


@pytest.mark.slow
def test_a_stable_week_with_its_day_night_rhythm_raises_nothing(engine, db_url) -> None:
    plan = traffic_plan(db_url, reference_window="3d", reference_min_calls=200)
    _reference(engine, plan, seed=1)
    with Session(engine) as s:
        vol = s.get(TrafficReference, "discharge").stats["volume"]  # type: ignore[union-attr]
    assert vol["slots"] == "hour of day" and vol["hours"] == 71  # the first span's partial hour left out
    assert vol["mean"]["03"] < 0.1 * vol["mean"]["10"]  # the reference knows the night is quiet
    week = clinic_counts(2, T0 + timedelta(days=3), 7 * 24, PEAK)
    _hour_by_hour(engine, plan, week, seed=2)
    assert _volume_alerts(engine) == []
    with Session(engine) as s:
        rise = s.get(DetectorState, "discharge:traffic_calls:rise")
        drop = s.get(DetectorState, "discharge:traffic_calls:drop")
    assert rise is not None and drop is not None
    assert rise.n == 7 * 24 and 6 * 12 <= drop.n < 7 * 24  # night hours too quiet to show a drop are skipped
    # The same week against one flat expectation (the reference's mean hour) would be a "drop" every night.
    flat = sum(vol["mean"].values()) / 24
    naive = CountSR(phi=vol["phi"], threshold=rise.threshold, direction="drop", null_ratio=0.8)
    assert any(naive.update((n, 0.8 * flat, flat)) for _, n in week)


def test_calls_halved_in_working_hours_are_a_traffic_collapse_within_six_hours(engine, db_url) -> None:
    plan = traffic_plan(db_url, reference_window="3d", reference_min_calls=200)
    _reference(engine, plan, seed=3)
    change = T0 + timedelta(days=3, hours=8)  # Thursday 08:00
    after = clinic_counts(4, T0 + timedelta(days=3), 48, PEAK, change_at=change, change=0.5)
    hours = _hour_by_hour(engine, plan, after, seed=4, stop_on_alert=True)
    [alert] = _volume_alerts(engine)
    working = sum(1 for h, _ in after[:hours] if h >= change and working_hour(h))
    assert 1 <= working <= 6, f"found after {working} working hours"
    assert alert.rule == "traffic_collapse" and alert.task_id == "discharge"
    assert cause_of(alert.labels) is Cause.availability
    with Session(engine) as s:
        f = s.exec(select(FindingRecord).where(FindingRecord.metric == "traffic_calls")).one()
    assert f.direction == "drop" and 0.35 < f.estimate < 0.65  # calls at about half the reference's


def test_no_call_at_all_in_a_busy_hour_is_found_in_that_hour(engine, db_url) -> None:
    plan = traffic_plan(db_url, reference_window="3d", reference_min_calls=200)
    _reference(engine, plan, seed=5)
    before = clinic_counts(6, T0 + timedelta(days=3), 10, PEAK)  # Thursday until 10:00
    _hour_by_hour(engine, plan, before, seed=6)
    assert _volume_alerts(engine) == []
    _drain(engine, plan, T0 + timedelta(days=3, hours=11, minutes=11))  # 10:00-11:00: nothing arrived
    [alert] = _volume_alerts(engine)
    assert alert.rule == "traffic_collapse"


def test_a_week_long_reference_compares_the_same_weekday_and_hour(engine, db_url) -> None:
    traffic_plan(db_url, reference_window="7d")
    with session_scope(engine) as s:
        for hour, n in clinic_counts(7, T0, 14 * 24, PEAK, weekends=True):
            s.add(TrafficRollup(hour=hour, task_id="discharge", model="m", calls=n))
        ref = TrafficReference(task_id="discharge", period_from=T0, period_to=T0 + timedelta(days=14), calls=1)
        vol = volume_reference(s, ref)
    assert vol is not None and vol["slots"] == "weekday and hour" and vol["days"]["5-10"] == 2
    assert vol["mean"]["5-10"] < 0.5 * vol["mean"]["2-10"]  # a Saturday morning is not a Wednesday morning
    assert vol["phi_estimate"] < 0.02  # the weekend is in the slots, not in the dispersion
    with session_scope(engine) as s:  # one week: each weekday once, the spread measured within working days
        ref = TrafficReference(task_id="discharge", period_from=T0, period_to=T0 + timedelta(days=7), calls=1)
        week = volume_reference(s, ref)
    assert week is not None and week["slots"] == "weekday and hour" and week["days"]["5-10"] == 1
    assert week["phi_estimate"] < 0.02  # the weekend is not taken for spread
    with session_scope(engine) as s:  # a 7d window from the first call: its partial first hour is left out
        ref = TrafficReference(
            task_id="discharge",
            period_from=T0 + timedelta(minutes=20),
            period_to=T0 + timedelta(days=7, minutes=20),
            calls=1,
        )
        window = volume_reference(s, ref)
    assert window is not None and window["slots"] == "weekday and hour" and "0-00" not in window["days"]


def test_dispersion_of_poisson_counts_is_near_zero_and_of_spread_counts_is_not() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    poisson = [list(rng.poisson(500, size=4)) for _ in range(24)]
    spread = [list(rng.poisson(500 * rng.gamma(25, 1 / 25, size=4))) for _ in range(24)]  # 20% SD
    assert dispersion(poisson)[0] < 0.005
    assert 0.02 < dispersion(spread)[0] < 0.08
