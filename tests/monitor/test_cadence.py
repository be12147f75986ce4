"""Adaptive cadence: a task probed faster while its evidence builds, within the plan's daily budget."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.monitor.errors import PlanError
from medmon.monitor.models import DetectorState, ProbeSlot, StreamStatus
from medmon.monitor.plan.cadence import AdaptiveCadence
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.plan.starter import STARTER_PLAN
from medmon.monitor.service.cadence import BudgetUsed, next_interval
from medmon.monitor.service.health import ServiceStatus, cadence_metrics, health_report
from medmon.monitor.service.scheduler import (
    ServiceScheduler,
    build_service_scheduler,
    cadence_job,
    fire_probe,
    register_runtime,
    sync_probe_jobs,
    unregister_runtime,
)
from medmon.monitor.service.serve import make_dispatch
from medmon.probes.models import ProbeRun, RunStatus
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
HOUR, QUARTER = timedelta(hours=1), timedelta(minutes=15)
ON = AdaptiveCadence(enabled=True, fastest_interval="15m", max_extra_probes_per_day=2, max_extra_cost_per_day=1.0)
KEY = "cadence-test"


# --- the decision ---------------------------------------------------------------------------------


def test_a_watching_task_is_probed_at_the_fastest_interval_that_divides_its_schedule() -> None:
    assert next_interval(HOUR, True, BudgetUsed(), ON).interval == QUARTER
    slower = ON.model_copy(update={"fastest_interval": "25m"})
    assert next_interval(HOUR, True, BudgetUsed(), slower).interval == timedelta(minutes=30), "30 min keeps the grid"
    assert next_interval(HOUR, False, BudgetUsed(), ON).interval is None, "no stream watching: the schedule"
    assert next_interval(None, True, BudgetUsed(), ON).interval is None, "a cron schedule keeps its times"
    assert next_interval(timedelta(minutes=10), True, BudgetUsed(), ON).interval is None, "already faster"
    assert next_interval(HOUR, True, BudgetUsed(), AdaptiveCadence()).reason == "adaptive cadence is off"


def test_the_budget_ends_the_faster_cadence() -> None:
    spent = next_interval(HOUR, True, BudgetUsed(probes=2), ON)
    assert spent.interval is None and spent.reason == "today's extra probes are spent (2 of 2)"
    assert next_interval(HOUR, True, BudgetUsed(1, 0.5), ON, next_cost_usd=0.4).fast, "0.9 of 1.0 fits"
    costly = next_interval(HOUR, True, BudgetUsed(1, 0.7), ON, next_cost_usd=0.4)
    assert costly.interval is None and "extra probe cost is spent ($0.70 of $1.00)" in costly.reason


def test_the_plan_section_is_validated_and_the_starter_plan_turns_it_on() -> None:
    starter = parse_plan(STARTER_PLAN).adaptive_cadence
    assert starter.enabled and starter.fastest == QUARTER and starter.max_extra_probes_per_day > 0
    assert starter.max_extra_cost_per_day is not None
    assert parse_plan_dict().adaptive_cadence.enabled is False, "off unless the plan asks"
    with pytest.raises(PlanError) as err:
        parse_plan_dict(adaptive_cadence={"enabled": True, "fastest_interval": "30s"})
    assert any(i.path == "adaptive_cadence.fastest_interval" and "one minute" in i.message for i in err.value.issues)
    with pytest.raises(PlanError) as err:
        parse_plan_dict(adaptive_cadence={"enabled": True, "max_extra_probes_per_day": -1})
    assert any(i.path == "adaptive_cadence.max_extra_probes_per_day" for i in err.value.issues)


def parse_plan_dict(**overrides: object) -> Plan:
    import yaml

    return parse_plan(yaml.safe_dump(plan_dict(**overrides)))


# --- the service's scheduler on an injected clock ---------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def service(engine: Engine, serve: Callable, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple]:
    """The service's scheduler (paused: the test fires its probe job) and in-process executor,
    probing the simulator, with adaptive cadence on: 15 min, 2 extra probes a day."""
    monkeypatch.setenv("MEDMON_TEST_KEY", "k")
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(accuracy=0.85)], seed=1))
    plan = parse_plan_dict(
        deployment=plan_dict()["deployment"] | {"base_url": f"{sim.url}/v1"},
        adaptive_cadence=ON.model_dump(),
        service={"seed": 7},
    )
    plan = plan.model_copy(update={"tasks": [plan.tasks[0].model_copy(update={"sample_size": 4})]})
    clock = Clock()
    _, runtime = make_dispatch(engine, plan, clock)
    register_runtime(KEY, runtime)
    scheduler = build_service_scheduler(engine, plan, KEY, {}, now=clock)
    try:
        yield scheduler, runtime, clock
    finally:
        scheduler.shutdown(wait=False)
        unregister_runtime(KEY)


def job_interval_s(scheduler: ServiceScheduler) -> float:
    job = scheduler.get_job("probe:knowledge-qa", jobstore="default")
    return float(job.trigger.interval.total_seconds())


def watch(engine: Engine) -> None:
    """A stream of the task starts watching (as its detector sets it when evidence builds)."""
    with Session(engine) as s:
        row = s.exec(select(DetectorState).where(DetectorState.key == "knowledge-qa:error_rate:rise")).one()
        row.status = StreamStatus.watching
        s.add(row)
        s.commit()


def probed_at(engine: Engine) -> list[datetime]:
    with Session(engine) as s:
        slots = s.exec(select(ProbeSlot).order_by(col(ProbeSlot.scheduled_for))).all()
        done = {r.id for r in s.exec(select(ProbeRun).where(ProbeRun.status == RunStatus.complete)).all()}
        return [slot.scheduled_for.replace(tzinfo=UTC) for slot in slots if slot.run_id in done]


def test_the_scheduler_probes_faster_while_evidence_builds_and_returns_when_it_fades(
    engine: Engine, service: tuple, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler, runtime, clock = service
    fire_probe(KEY, "knowledge-qa")  # the schedule's own probe at 09:00: the detectors start
    assert job_interval_s(scheduler) == 3600
    assert runtime.cadence_view()["knowledge-qa"]["text"] == (
        "task knowledge-qa probed on its schedule (1h): no stream is watching (0 of 2 extra probes used today, "
        "$0.00 of $1.00)"
    )

    watch(engine)
    cadence_job(KEY)  # the periodic pass sees the evidence and reschedules the stored job
    assert job_interval_s(scheduler) == 900
    job = scheduler.get_job("probe:knowledge-qa", jobstore="default")
    assert job.next_run_time.minute % 15 == 0 and job.next_run_time.second == 0, "on the 15-minute grid"
    view = runtime.cadence_view()["knowledge-qa"]
    assert view["text"].startswith("task knowledge-qa probed every 15 min while evidence builds (0 of 2 extra")

    clock.at = T0 + QUARTER
    fire_probe(KEY, "knowledge-qa")  # an extra probe; the simulator answers as at go-live: the evidence fades
    assert probed_at(engine) == [T0, T0 + QUARTER]
    assert job_interval_s(scheduler) == 3600, "back on the schedule once no stream watches"

    watch(engine)
    cadence_job(KEY)
    clock.at = T0 + 2 * QUARTER
    fire_probe(KEY, "knowledge-qa")
    watch(engine)
    cadence_job(KEY)  # two of two extra probes used: the budget ends the faster cadence
    assert job_interval_s(scheduler) == 3600
    view = runtime.cadence_view()["knowledge-qa"]
    assert view["extra_probes_today"] == 2 and 0 < float(view["extra_cost_today_usd"]) < 1  # type: ignore[arg-type]
    assert "today's extra probes are spent (2 of 2)" in str(view["text"])

    runtime.fast["knowledge-qa"] = QUARTER  # a firing on the fast grid that raced the pass back
    clock.at = T0 + 3 * QUARTER
    with caplog.at_level(logging.WARNING, logger="medmon.scheduler"):
        fire_probe(KEY, "knowledge-qa")
    assert probed_at(engine) == [T0, T0 + QUARTER, T0 + 2 * QUARTER], "a probe beyond the budget is not run"
    assert runtime.refused == {"knowledge-qa": 1}
    assert "extra probe of knowledge-qa for 2026-11-02T09:45:00+00:00 not run: today's extra probes are spent" in (
        caplog.text
    )
    clock.at = T0 + HOUR
    fire_probe(KEY, "knowledge-qa")  # the schedule's own time always runs
    assert probed_at(engine)[-1] == T0 + HOUR

    clock.at = T0 + timedelta(days=1)  # a new UTC day renews the budget
    watch(engine)
    cadence_job(KEY)
    assert job_interval_s(scheduler) == 900
    assert "(0 of 2 extra probes used today" in str(runtime.cadence_view()["knowledge-qa"]["text"])

    code, body = health_report(
        engine, runtime.plan.tasks, ServiceStatus(identity="t", cadence=runtime.cadence_view), clock.at
    )
    task = body["tasks"][0]  # type: ignore[index]
    assert task["cadence"]["fast"] is True and task["cadence"]["extra_probes_refused"] == 1
    assert task["cadence"]["text"].startswith("task knowledge-qa probed every 15 min while evidence builds")

    metrics = {m.name: m.samples[0].value for m in cadence_metrics(runtime.cadence_view())}
    assert metrics == {
        "medmon_probe_interval_seconds": 900,
        "medmon_cadence_extra_probes_today": 0,
        "medmon_cadence_extra_probes_refused": 1,
    }

    assert sync_probe_jobs(scheduler, runtime.plan, KEY) == {"probe:knowledge-qa": "added"}, "a restart resets"
    assert job_interval_s(scheduler) == 3600
