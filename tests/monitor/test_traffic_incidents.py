"""Traffic alerts point at the same causes as the canaries': a traffic finding and a canary finding
about one task and one cause are one incident."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session

from medmon.alerts import apply_signals, cause_of
from medmon.alerts.incidents import incident_causes, incident_members, open_incidents
from medmon.db import session_scope
from medmon.monitor.alerting.signals import model_change_signal, stream_signal
from medmon.monitor.detection.drift import Finding
from medmon.monitor.detection.drift.layout import StreamSpec
from medmon.monitor.detection.streams import StreamUpdate
from medmon.monitor.models import StreamStatus
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.routing import notify_policy
from medmon.monitor.traffic.ingest import Ingestor, store_calls
from medmon.monitor.traffic.spans import Decoded, Limits
from medmon.monitor.traffic.streams import signal_of, traffic_pass
from tests.monitor.traffic_helpers import MODEL, calls_in_hours, clinic_counts, traffic_plan

T0 = datetime(2026, 3, 2, tzinfo=UTC)
# traffic stream (metric, direction) -> the cause its alert belongs to, and a canary stream of that cause
CASES = [
    (("traffic_cost", "rise"), "cost", ("cost", "rise")),
    (("traffic_latency", "rise"), "latency", ("latency", "rise")),
    (("traffic_error_rate", "rise"), "availability", ("error_rate", "rise")),
    (("traffic_calls", "drop"), "availability", ("error_rate", "rise")),
    (("traffic_calls", "rise"), "availability", ("error_rate", "rise")),
    (("traffic_truncation", "rise"), "output", ("truncation", "rise")),
    (("traffic_output_tokens", "rise"), "output", ("verbosity", "rise")),
    (("traffic_refusal", "rise"), "output", ("refusal", "rise")),
    (("traffic_judged_score", "drop"), "accuracy", ("score", "drop")),
    (("traffic_jury_agreement", "drop"), "jury", ("jury_agreement", "drop")),
]


def _drain(engine, plan, now) -> None:  # type: ignore[no-untyped-def]
    while True:
        with session_scope(engine) as s:
            if traffic_pass(s, plan, now).spans < 5000:
                return


def _update(task: str, metric: str, direction: str) -> StreamUpdate:
    finding = Finding(
        detector="mixture_sr",
        direction=direction,
        statistic=2e7,
        threshold=1e7,
        estimate=0.7,
        ci_low=0.6,
        ci_high=0.8,
        n=120,
        null_mean=0.5,
    )
    spec = StreamSpec(
        f"{task}:{metric}:{direction}", task, metric, direction, 0.5, 0.5, lambda r: None, what=f"{metric} moved"
    )
    return StreamUpdate(spec, StreamStatus.degraded, StreamStatus.ok, finding, 0.7, 1.1, 120)


@pytest.mark.parametrize(("traffic", "cause", "canary"), CASES, ids=[f"{t[0]}:{t[1]}" for t, _, _ in CASES])
def test_a_traffic_finding_and_a_canary_finding_of_one_cause_are_one_incident(
    engine, db_url, traffic: tuple[str, str], cause: str, canary: tuple[str, str]
) -> None:
    plan = traffic_plan(db_url)
    ctx = load_context(plan, plan.task("discharge"))
    from_traffic = signal_of(plan, _update("discharge", *traffic))
    from_canary = stream_signal(plan, ctx, _update("discharge", *canary))
    assert from_traffic is not None and from_canary is not None
    assert cause_of(from_traffic.labels).value == cause
    now = datetime.now(UTC)
    with session_scope(engine) as s:
        alerts = apply_signals(s, [from_traffic, from_canary], notify_policy(plan), now)
    with Session(engine) as s:
        [incident] = open_incidents(s)
        assert incident.cause == cause and incident.task_id == "discharge"
        members = incident_members(s, incident.id or 0)
    assert {a.id for a in members} == {a.id for a in alerts} and len(members) == 2
    assert {a.rule for a in members} == {from_traffic.labels["rule"], from_canary.labels["rule"]}


def test_a_collapse_and_a_model_change_seen_in_traffic_join_the_canaries_incidents(engine, db_url) -> None:
    """Through the real traffic pass: calls stop (availability) and a new model answers (model change)."""
    plan = traffic_plan(db_url, reference_window="3d", reference_min_calls=200)
    ingestor = Ingestor(plan, lambda s: s, Limits(max_age=timedelta(days=3650)))
    store_calls(engine, ingestor, Decoded(calls_in_hours(1, clinic_counts(1, T0, 82, 200))), T0)  # until 10:00
    _drain(engine, plan, T0 + timedelta(days=3, minutes=11))
    store_calls(
        engine,
        ingestor,
        Decoded(calls_in_hours(2, [(T0 + timedelta(days=3, hours=11), 3)], model="vendor/clinical-v2")),
        T0,
    )
    later = T0 + timedelta(days=3, hours=11, minutes=30)  # nothing arrived 10:00-11:00, then another model
    _drain(engine, plan, later)
    ctx = load_context(plan, plan.task("discharge"))
    canary = [
        stream_signal(plan, ctx, _update("discharge", "error_rate", "rise")),
        model_change_signal(plan, ctx, (MODEL, "fp1"), ("vendor/clinical-v2", None)),
    ]
    with session_scope(engine) as s:
        apply_signals(s, [c for c in canary if c is not None], notify_policy(plan), later)
    with Session(engine) as s:
        [incident] = [i for i in open_incidents(s) if i.task_id == "discharge"]  # one problem at one moment
        alerts = incident_members(s, incident.id or 0)
        causes = set(incident_causes(incident, alerts))
    assert {a.rule for a in alerts} == {"traffic_collapse", "probes_failing", "model_change"}
    assert {"availability", "model_change"} <= causes
