"""Traffic streams: the reference, a cost rise found and not a stable stream, a new served model, retention."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, col, func, select

from medmon.alerts import Alert
from medmon.db import session_scope
from medmon.monitor.governance.retention import delete_expired
from medmon.monitor.models import (
    LATENCY_BUCKETS,
    DetectorState,
    FindingRecord,
    TrafficReference,
    TrafficRollup,
    TrafficSpan,
)
from medmon.monitor.traffic.ingest import Ingestor, store_calls
from medmon.monitor.traffic.spans import CallRecord, Decoded, Limits
from medmon.monitor.traffic.streams import traffic_pass
from tests.monitor.traffic_helpers import MODEL, traffic_plan

T0 = datetime(2026, 3, 2, 8, tzinfo=UTC)


def _calls(
    rng: random.Random,
    n: int,
    start: datetime,
    *,
    cost_factor: float = 1.0,
    served: str = MODEL,
    error_share: float = 0.0,
    length_share: float = 0.0,
    per_hour: int = 1000,
) -> list[CallRecord]:
    out = []
    for i in range(n):
        end = start + timedelta(seconds=i * 3600 / per_hour)
        tokens = max(1, round(rng.lognormvariate(5.0, 0.35) * cost_factor))
        error = "timeout" if rng.random() < error_share else None
        out.append(
            CallRecord(
                trace_id=f"{rng.getrandbits(128):032x}",
                span_id=f"{rng.getrandbits(64):016x}",
                service="discharge-app",
                span_name=f"chat {MODEL}",
                operation="chat",
                request_model=MODEL,
                response_model=served,
                system_fingerprint="fp1",
                started_at=end - timedelta(seconds=rng.uniform(0.5, 2.0)),
                ended_at=end,
                input_tokens=300,
                output_tokens=None if error else tokens,
                finish_reason=None if error else ("length" if rng.random() < length_share else "stop"),
                error_type=error,
                prompt=None,
                completion=None,
            )
        )
    return out


def _store(engine, plan, calls, now) -> None:  # type: ignore[no-untyped-def]
    store_calls(engine, Ingestor(plan, lambda s: s, Limits(max_age=timedelta(days=3650))), Decoded(calls), now)


def _pass(engine, plan, now):  # type: ignore[no-untyped-def]
    total = []
    while True:
        with session_scope(engine) as s:
            done = traffic_pass(s, plan, now, batch=500)
        total.append(done)
        if done.spans < 500:
            return total


def _alerts(engine, rule: str) -> list[Alert]:  # type: ignore[no-untyped-def]
    with Session(engine) as s:
        return list(s.exec(select(Alert).where(Alert.rule == rule)).all())


def test_reference_then_a_20_percent_median_cost_rise_alerts_within_hours(engine, db_url) -> None:
    plan = traffic_plan(db_url, reference_window="1d")
    rng = random.Random(3)
    _store(engine, plan, _calls(rng, 24_000, T0), T0)  # one day at 1,000 calls an hour
    _pass(engine, plan, T0 + timedelta(days=1, seconds=1))
    with Session(engine) as s:
        ref = s.get(TrafficReference, "discharge")
        assert ref is not None and ref.calls == 24_000 and ref.models == [MODEL]
        assert 0.45 < ref.stats["traffic_cost"]["share_above"] <= 0.5
    start = T0 + timedelta(days=1, seconds=2)
    hours = 0
    while not _alerts(engine, "traffic_cost_rise") and hours < 6:
        _store(engine, plan, _calls(rng, 1000, start + timedelta(hours=hours), cost_factor=1.2), start)
        _pass(engine, plan, start + timedelta(hours=hours + 1))
        hours += 1
    [alert] = _alerts(engine, "traffic_cost_rise")
    assert hours <= 2, "a +20% median cost rise at 1,000 calls an hour is found within two hours"
    assert alert.task_id == "discharge" and alert.severity.value == "warning"  # operational: at most a warning
    with Session(engine) as s:
        finding = s.exec(select(FindingRecord).where(FindingRecord.metric == "traffic_cost")).one()
    assert finding.estimate > 0.6 and finding.ci_low > finding.null_mean - 0.05
    assert not _alerts(engine, "traffic_errors") and not _alerts(engine, "traffic_truncation")


def test_stable_traffic_raises_nothing_and_rollups_add_up(engine, db_url) -> None:
    plan = traffic_plan(db_url, reference_window="2h")
    rng = random.Random(11)
    calls = _calls(rng, 12_000, T0, error_share=0.02, length_share=0.03)
    _store(engine, plan, calls, T0)
    _pass(engine, plan, T0 + timedelta(hours=13))
    with Session(engine) as s:
        states = s.exec(select(DetectorState).where(col(DetectorState.metric).startswith("traffic_"))).all()
        assert {d.metric for d in states} >= {
            "traffic_cost",
            "traffic_latency",
            "traffic_output_tokens",
            "traffic_error_rate",
            "traffic_truncation",
        }
        assert all(d.status.value in ("ok", "watching") for d in states)
        assert max(d.n for d in states) == sum(1 for c in calls if c.ended_at > T0 + timedelta(hours=2))
        assert s.exec(select(func.count()).select_from(Alert)).one() == 0
        rollups = s.exec(select(TrafficRollup).where(TrafficRollup.task_id == "discharge")).all()
    assert len(rollups) == 12
    assert sum(r.calls for r in rollups) == 12_000
    assert sum(r.errors for r in rollups) == sum(1 for c in calls if c.error_type)
    assert sum(r.truncated for r in rollups) == sum(1 for c in calls if c.finish_reason == "length")
    assert sum(r.cost_usd for r in rollups) == pytest.approx(
        sum((300 * 5 + (c.output_tokens or 0) * 15) / 1e6 for c in calls)
    )
    assert all(sum(getattr(r, f"latency_b{i}") for i in range(len(LATENCY_BUCKETS))) == r.calls for r in rollups)


def test_a_served_model_the_reference_never_saw_is_a_model_change_once(engine, db_url) -> None:
    plan = traffic_plan(db_url, reference_window="1h")
    rng = random.Random(5)
    _store(engine, plan, _calls(rng, 1000, T0), T0)
    _pass(engine, plan, T0 + timedelta(hours=1, seconds=1))
    later = T0 + timedelta(hours=2)
    _store(engine, plan, _calls(rng, 50, later, served="medmon-simulator/clinical-v2"), later)
    _pass(engine, plan, later + timedelta(minutes=5))
    _store(engine, plan, _calls(rng, 50, later + timedelta(minutes=10), served="medmon-simulator/clinical-v2"), later)
    _pass(engine, plan, later + timedelta(minutes=15))
    [alert] = _alerts(engine, "model_change")
    assert "clinical-v2" in alert.summary and alert.task_id == "discharge"
    with Session(engine) as s:
        [finding] = s.exec(select(FindingRecord).where(FindingRecord.metric == "traffic_served_model")).all()
    assert finding.kind == "model_change" and "seen in real traffic" in finding.summary


def test_a_declared_reference_period_is_used_as_declared(engine, db_url) -> None:
    plan = traffic_plan(
        db_url, reference_from=(T0 + timedelta(hours=1)).isoformat(), reference_to=(T0 + timedelta(hours=2)).isoformat()
    )
    rng = random.Random(8)
    _store(engine, plan, _calls(rng, 3000, T0), T0)
    _pass(engine, plan, T0 + timedelta(hours=1, minutes=30))
    with Session(engine) as s:
        assert s.get(TrafficReference, "discharge") is None  # the period is not over
    _pass(engine, plan, T0 + timedelta(hours=3))
    with Session(engine) as s:
        ref = s.get(TrafficReference, "discharge")
    assert ref is not None and ref.calls == 1001  # the calls that ended within the declared hour, both ends included


def test_retention_deletes_expired_raw_rows_in_batches_and_keeps_rollups(engine, db_url) -> None:
    plan = traffic_plan(db_url, retention="1d")
    rng = random.Random(2)
    _store(engine, plan, _calls(rng, 1200, T0, per_hour=100), T0)  # 12 hours
    _store(engine, plan, _calls(rng, 30, T0 + timedelta(days=2)), T0)
    with session_scope(engine) as s:
        traffic_pass(s, plan, T0, batch=1100)  # 130 spans are left unstreamed: never deleted before rollup
    gone = delete_expired(engine, plan.traffic, T0 + timedelta(days=2), batch=250)
    assert gone == 1100
    with Session(engine) as s:
        assert s.exec(select(func.count()).select_from(TrafficSpan)).one() == 130
        assert s.exec(select(func.sum(TrafficRollup.calls))).one() == 1100


def test_plan_errors_in_the_traffic_section_name_the_field() -> None:
    import yaml

    from medmon.monitor.errors import PlanError
    from medmon.monitor.plan.model import parse_plan
    from tests.conftest import plan_dict

    def issues(traffic: dict) -> str:  # type: ignore[type-arg]
        with pytest.raises(PlanError) as err:
            parse_plan(yaml.safe_dump(plan_dict(traffic=traffic)))
        return str(err.value)

    assert "traffic.routes[0].task 'nope': no such task; expected one of knowledge-qa" in issues(
        {"routes": [{"task": "nope"}]}
    )
    assert "expected both 'reference_from' and 'reference_to'" in issues({"reference_from": "2026-01-01T00:00:00Z"})
    assert "traffic.retention" in issues({"retention": "forever"})
    assert "traffic.routes.0.servce" in issues({"routes": [{"task": "knowledge-qa", "servce": "x"}]}).replace(
        "[0]", ".0"
    )
