"""The judge-canary job: re-judged over HTTP, stored in the judges' ledger, one alert per drifting judge."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from medmon.alerts.models import Alert, AlertStatus
from medmon.monitor.errors import PlanError
from medmon.monitor.models import FindingRecord, StreamStatus
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.judging import JOB_ID, JudgingOutcome, judging_job, run_judge_canaries
from medmon.monitor.service.scheduler import build_service_scheduler
from medmon.probes.judge_canaries import load_judge_canaries
from medmon.probes.jury import JurySettings
from medmon.probes.models import JudgeCall, JuryVerdict, ProbeResult, ProbeRun, RunStatus
from medmon.probes.simulator import JudgeBehaviour, create_simulator
from tests.probes.simkit import JUDGE_MODELS, judge_settings, wait_for

T0 = datetime(2026, 3, 1, tzinfo=UTC)
N_CANARIES = len(load_judge_canaries())


def jury_section(url: str, **extra: Any) -> dict[str, Any]:
    judges = [{"name": f"judge-{m[-1]}", "base_url": f"{url}/v1", "model": m} for m in JUDGE_MODELS]
    return {"judges": judges, "canary_schedule": "1d"} | extra


class Days:
    """A clock the test moves a day at a time."""

    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> datetime:
        return self.t

    def next(self) -> None:
        self.t += timedelta(days=1)


def rejudge_days(engine: Engine, plan: Plan, url: str, days: int) -> list[JudgingOutcome]:
    clock, settings, out = Days(), JurySettings(judge_settings(url)), []
    for _ in range(days):
        clock.next()
        out.append(run_judge_canaries(engine, plan, now=clock, settings=settings))
    return out


def open_alerts(engine: Engine) -> list[Alert]:
    with Session(engine) as s:
        return list(s.exec(select(Alert).where(Alert.status == AlertStatus.firing)).all())


def test_honest_judges_raise_nothing_and_their_calls_are_in_the_ledger(
    engine: Engine, make_plan: Callable[..., Plan], serve: Callable
) -> None:
    server = serve(create_simulator([]))
    plan = make_plan(jury=jury_section(server.url))
    outcomes = rejudge_days(engine, plan, server.url, 8)
    assert not any(o.signals for o in outcomes) and open_alerts(engine) == []
    assert all(a is not None and a >= 0.85 for o in outcomes for a in o.agreement.values())
    streams = {u.spec.task_id for u in outcomes[-1].updates.values()}
    assert streams == {"judge:judge-a", "judge:judge-b", "judge:judge-c"}
    with Session(engine) as s:
        runs = s.exec(select(ProbeRun).where(ProbeRun.purpose == "judge_canaries")).all()
        assert len(runs) == 8 and all(r.status == RunStatus.complete and r.n_canaries == N_CANARIES for r in runs)
        calls = s.exec(select(JudgeCall)).all()
        assert len(calls) == 8 * N_CANARIES * 3
        assert {c.task_id for c in calls} == {"judge_canaries"}
        assert all(c.cost_usd is not None and c.cost_usd > 0 and c.prompt_tokens for c in calls)
        assert s.exec(select(func.count()).select_from(JuryVerdict)).one() == 8 * N_CANARIES * 3 * 3
        # the production model's ledger is untouched: the stored results carry no model cost
        assert all(r.cost_usd is None and r.jury_judges == 3 for r in s.exec(select(ProbeResult)).all())


def test_a_drifting_judge_raises_its_own_alert_and_the_others_stay_ok(
    engine: Engine, make_plan: Callable[..., Plan], serve: Callable
) -> None:
    # judge-b starts scoring two points low after its first 3 runs' worth of calls
    drifting = JudgeBehaviour(drift_after=3 * N_CANARIES, drift_offset=-2.0)
    server = serve(create_simulator([], judges={JUDGE_MODELS[1]: drifting}))
    plan = make_plan(jury=jury_section(server.url))
    outcomes = rejudge_days(engine, plan, server.url, 10)
    fired = {s.labels["metric"]: (day, s) for day, o in enumerate(outcomes) for s in o.signals if s.firing}
    assert sorted(fired) == ["judge_bias", "judge_canaries"]  # it agrees less, and it has turned severe
    day, signal = fired["judge_canaries"]
    assert day >= 3  # not before the judge drifted
    assert "judge judge-b" in signal.summary and "judge drift" in signal.summary
    assert all(o.updates["judge-b"].status == StreamStatus.degraded for o in outcomes[day:])
    bias_day, bias = fired["judge_bias"]
    assert bias_day >= 3 and bias.evidence["direction"] == "drop" and bias.evidence["estimate"] < -1.0
    assert all(
        o.updates[j].finding is None and o.bias[j].finding is None for o in outcomes for j in ("judge-a", "judge-c")
    )
    alerts = {a.labels["metric"]: a for a in open_alerts(engine)}
    assert sorted(alerts) == ["judge_bias", "judge_canaries"]
    alert = alerts["judge_canaries"]
    assert alert.task_id == "judge:judge-b" and alert.rule == "judge_drift"
    assert alert.owner.startswith(plan.owners.technical.name)
    assert alert.evidence["estimate"] < 0.8
    with Session(engine) as s:
        findings = s.exec(select(FindingRecord).order_by(FindingRecord.id)).all()
        assert {(f.task_id, f.metric) for f in findings} == {
            ("judge:judge-b", "judge_canaries"),
            ("judge:judge-b", "judge_bias"),
        }


def test_a_failing_judge_feeds_nothing_and_is_recorded_failed(
    engine: Engine, make_plan: Callable[..., Plan], serve: Callable
) -> None:
    server = serve(create_simulator([], judges={JUDGE_MODELS[2]: JudgeBehaviour(mode="fail")}))
    plan = make_plan(jury=jury_section(server.url))
    (outcome,) = rejudge_days(engine, plan, server.url, 1)
    assert outcome.agreement["judge-c"] is None and "judge-c" not in outcome.updates
    assert sorted(outcome.updates) == ["judge-a", "judge-b"] and not outcome.signals
    with Session(engine) as s:
        statuses = s.exec(select(JudgeCall.parse_status).where(JudgeCall.judge == "judge-c")).all()
        assert len(statuses) == N_CANARIES and {st.value for st in statuses} == {"failed"}


def test_canary_schedule_is_validated(make_plan: Callable[..., Plan]) -> None:
    section = jury_section("http://127.0.0.1:9")
    assert make_plan(jury=section | {"canary_schedule": "0 6 * * 1"}).jury.canary_schedule == "0 6 * * 1"
    assert make_plan(jury={"judges": section["judges"]}).jury.canary_schedule is None
    with pytest.raises(PlanError, match="canary_schedule"):
        make_plan(jury=section | {"canary_schedule": "daily"})


@pytest.mark.parametrize("schedule, expected", [("1d", True), (None, False)], ids=["scheduled", "not-scheduled"])
def test_the_scheduler_carries_the_job_only_with_a_canary_schedule(
    engine: Engine, make_plan: Callable[..., Plan], schedule: str | None, expected: bool
) -> None:
    plan = make_plan(jury=jury_section("http://127.0.0.1:9", canary_schedule=schedule))
    service = build_service_scheduler(engine, plan, "judging-test", {})
    try:
        job = service.get_job(JOB_ID, jobstore="local")
        assert (job is not None) is expected
        if job is not None:
            assert job.trigger.interval == timedelta(days=1)
    finally:
        service.shutdown(wait=False)


def judge_runs(engine: Engine) -> list[ProbeRun]:
    with Session(engine) as s:
        return list(s.exec(select(ProbeRun).where(ProbeRun.purpose == "judge_canaries")).all())


def test_the_scheduled_job_rejudges_with_the_plans_judges(
    engine: Engine, make_plan: Callable[..., Plan], serve: Callable
) -> None:
    server = serve(create_simulator([]))
    plan = make_plan(jury=jury_section(server.url))
    scheduler = build_service_scheduler(engine, plan, "judging-test", {}, now=lambda: T0, time_scale=86400 / 0.5)
    scheduler.resume()
    try:
        wait_for(lambda: any(r.status == RunStatus.complete for r in judge_runs(engine)), timeout=20)
    finally:
        scheduler.shutdown(wait=True)
    with Session(engine) as s:
        judges = set(s.exec(select(JudgeCall.judge)).all())
    assert judges == {"judge-a", "judge-b", "judge-c"}


def test_the_job_logs_a_failure_instead_of_raising(
    engine: Engine, make_plan: Callable[..., Plan], tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    plan = make_plan(jury=jury_section("http://127.0.0.1:9", canary_path=str(tmp_path / "missing.jsonl")))
    seen: list[JudgingOutcome] = []
    judging_job(engine, plan, lambda: T0, on_outcome=seen.append)
    assert seen == [] and judge_runs(engine) == []
    assert "judge-canary run failed" in caplog.text and "missing.jsonl" in caplog.text


def test_a_judge_turning_lenient_is_caught_by_its_bias_stream(
    engine: Engine, make_plan: Callable[..., Plan], serve: Callable
) -> None:
    """Scoring two points higher costs judge-b little agreement (most gold scores are already at
    the top) but moves its signed error well away from its first three runs."""
    lenient = JudgeBehaviour(drift_after=3 * N_CANARIES, drift_offset=+2.0)
    server = serve(create_simulator([], judges={JUDGE_MODELS[1]: lenient}))
    plan = make_plan(jury=jury_section(server.url))
    outcomes = rejudge_days(engine, plan, server.url, 12)
    fired = [(day, s) for day, o in enumerate(outcomes) for s in o.signals if s.firing]
    assert [s.labels["metric"] for _, s in fired] == ["judge_bias"]
    day, signal = fired[0]
    assert 3 <= day <= 10  # after the drift (run 3), within eight daily runs
    assert signal.labels["task"] == "judge:judge-b" and "more leniently or more severely" in signal.summary
    assert signal.evidence["direction"] == "rise" and signal.evidence["estimate"] > 0.5  # points above gold
    assert all(
        o.bias[j].finding is None and o.updates[j].finding is None for o in outcomes for j in ("judge-a", "judge-c")
    )
    (alert,) = open_alerts(engine)
    assert (alert.task_id, alert.rule) == ("judge:judge-b", "judge_drift")
