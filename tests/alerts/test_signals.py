"""``medmon.monitor.alerting.signals``: detector updates, the recent estimate, probe freshness and the heartbeat,
read from the monitor's records and turned into alerts (and notifications) by the periodic pass."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.alerts import Alert, AlertStatus, Notification, Severity
from medmon.monitor.alerting.signals import alert_pass, stale_signals, stream_signal, threshold_signals
from medmon.monitor.detection.drift.finding import Finding
from medmon.monitor.detection.streams import StreamSpec, StreamUpdate
from medmon.monitor.models import StreamStatus
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus
from tests.alerts.helpers import T0, FakeClock

HOOK = {"routes": [{"name": "hook", "url": "http://127.0.0.1:9/hook"}], "repeat_interval": "4h"}


def run(
    session: Session, task: str, finished_hours_ago: float, *, errors: int = 0, n: int = 20, score: float | None = 0.9
) -> None:
    at = T0 - timedelta(hours=finished_hours_ago)
    row = ProbeRun(
        task_id=task,
        status=RunStatus.complete,
        started_at=at - timedelta(minutes=1),
        finished_at=at,
        n_canaries=n,
        n_errors=errors,
    )
    session.add(row)
    session.flush()
    assert row.id is not None
    for i in range(n):
        session.add(
            ProbeResult(
                run_id=row.id,
                task_id=task,
                canary_id=f"c{i}",
                score=None if i < errors else score,
                error_type="timeout" if i < errors else None,
                created_at=at,
            )
        )


def finding(estimate: float, quantity: str = "mean") -> Finding:
    return Finding(
        "mixture_sr", "drop", 1e7, 1e6, estimate, estimate - 0.05, estimate + 0.05, 160, 0.8, quantity=quantity
    )


def update(metric: str, task: str = "knowledge-qa", *, alarm: bool = True, what: str = "") -> StreamUpdate:
    spec = StreamSpec(f"{task}:{metric}:drop", task, metric, "drop", 0.8, 0.85, lambda r: None, what=what)
    if alarm:
        return StreamUpdate(spec, StreamStatus.degraded, StreamStatus.watching, finding(0.6), 0.6, 1e7, 160)
    return StreamUpdate(spec, StreamStatus.recovered, StreamStatus.degraded, None, 0.86, 0.1, 220)


@pytest.mark.parametrize(
    ("metric", "task", "rule", "severity", "group_task"),
    [
        ("score", "knowledge-qa", "drift_drop", Severity.critical, "knowledge-qa"),
        ("score[sex=F]", "knowledge-qa", "subgroup_drop", Severity.critical, "knowledge-qa"),
        ("gap[sex=F]", "knowledge-qa", "subgroup_gap", Severity.critical, "knowledge-qa"),
        ("cost", "knowledge-qa", "cost_over_budget", Severity.warning, "knowledge-qa"),
        ("error_rate", "knowledge-qa", "probes_failing", Severity.warning, "knowledge-qa"),
        ("verbosity", "knowledge-qa", "output_length_shift", Severity.warning, "knowledge-qa"),
        ("jury_agreement", "knowledge-qa", "jury_disagreement", Severity.critical, "knowledge-qa"),
        (
            "pooled_score",
            "category:clinical-decision-support",
            "category_drop",
            Severity.critical,
            "category:clinical-decision-support",
        ),
    ],
)
def test_stream_signal_rule_and_severity(
    make_plan: Callable[..., Plan], metric: str, task: str, rule: str, severity: Severity, group_task: str
) -> None:
    plan = make_plan()  # risk tier high
    ctx = load_context(plan, plan.tasks[0])
    signal = stream_signal(plan, ctx, update(metric, task))
    assert signal is not None and signal.firing
    assert (signal.labels["rule"], signal.severity, signal.labels["task"]) == (rule, severity, group_task)
    assert signal.owner == "Dr. Owner <owner@hospital.example>"
    assert signal.category == "Clinical Decision Support"
    assert signal.evidence["estimate"] == 0.6 and signal.evidence["n"] == 160
    cleared = stream_signal(plan, ctx, update(metric, task, alarm=False))
    assert cleared is not None and not cleared.firing and cleared.fingerprint == signal.fingerprint


def test_stream_signal_says_what_the_stream_means(make_plan: Callable[..., Plan]) -> None:
    plan = make_plan()
    ctx = load_context(plan, plan.tasks[0])
    signal = stream_signal(plan, ctx, update("refusal", what="the model refuses to answer more often"))
    assert signal is not None
    assert signal.summary.startswith("knowledge-qa: the model refuses to answer more often: now 60% of answers where")
    assert "95% CI" not in signal.summary and "null" not in signal.summary
    quiet = StreamUpdate(update("score").spec, StreamStatus.watching, StreamStatus.ok, None, 0.8, 3.0, 40)
    assert stream_signal(plan, ctx, quiet) is None


def test_threshold_rule_reads_the_recent_estimate(engine: Engine, make_plan: Callable[..., Plan]) -> None:
    plan = make_plan()  # min_score 0.7
    ctx = load_context(plan, plan.tasks[0])
    with Session(engine) as s:
        for h in range(5):
            run(s, "knowledge-qa", h, score=0.5 if h % 2 else 0.6)
        (signal,) = threshold_signals(s, plan, ctx)
        assert signal.firing and signal.labels["rule"] == "below_minimum" and signal.evidence["n"] == 100
        assert signal.evidence["ci_high"] < 0.7


def test_stale_signals_follow_the_schedule(engine: Engine, make_plan: Callable[..., Plan]) -> None:
    task = plan_task = make_plan().tasks[0].model_dump(mode="json", exclude_none=True)
    tasks = [
        task | {"id": "fresh"},
        task | {"id": "stale"},
        task | {"id": "failing"},
        task | {"id": "daily", "schedule": "0 6 * * *"},
    ]
    plan = make_plan(tasks=tasks)  # hourly schedules; 2 intervals allowed
    assert plan_task["schedule"] == "1h"
    with Session(engine) as s:
        run(s, "fresh", 0.5)
        run(s, "stale", 3)
        run(s, "failing", 5)
        run(s, "failing", 0.2, errors=20)  # ran, but produced nothing usable
        run(s, "daily", 30)  # a daily cron: 48 h allowed
        found = {sig.labels["task"]: sig for sig in stale_signals(s, plan, T0, since=T0 - timedelta(days=3))}
    assert sorted(found) == ["failing", "stale"]
    assert found["stale"].evidence["age_s"] == 3 * 3600 and found["stale"].evidence["allowed_s"] == 7200


def test_alert_pass_reports_a_heartbeat_gap_then_clears_it(engine: Engine, make_plan: Callable[..., Plan]) -> None:
    plan = make_plan(alerts=HOOK)
    clock = FakeClock()
    with Session(engine) as s:
        run(s, "knowledge-qa", 0.1)
        assert alert_pass(s, plan, clock()) == []  # first beat ever: nothing to report
        s.commit()
        clock.advance(hours=3)  # the monitor was down for three hours
        run(s, "knowledge-qa", -3)  # (a probe ran right after the restart)
        notes = alert_pass(s, plan, clock())
        s.commit()
        assert [(n.event, n.group_key) for n in notes] == [("firing", "production/_monitor/availability")]
        alert = s.exec(select(Alert).where(Alert.rule == "heartbeat")).one()
        assert alert.severity == Severity.warning and "no heartbeat for 3h00m" in alert.summary
        assert alert.owner == "Tech <tech@hospital.example>"
        clock.advance(seconds=1)
        alert_pass(s, plan, clock())
        s.commit()
        assert alert.status == AlertStatus.resolved
        assert s.exec(select(Alert).where(Alert.rule == "stale")).first() is None  # the gap is not also "stale"
        clock.advance(minutes=5)
        assert [n.event for n in alert_pass(s, plan, clock())] == ["resolved"]
        assert len(s.exec(select(Notification)).all()) == 2
