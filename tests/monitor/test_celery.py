"""Scale-out on Celery with a real Redis broker on 127.0.0.1: same results as in process, once each."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.monitor.errors import PlanError
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.service.slots import run_slot
from medmon.monitor.service.workers import (
    CeleryDispatch,
    make_celery,
    plan_digest,
    register_worker_runtime,
    worker_runtime,
)
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.monitor.service_helpers import reader, runs, slots, start_medmon, wait_for, write_plan

REDIS = os.environ.get("MEDMON_TEST_REDIS_URL", "redis://127.0.0.1:6379/11")  # a database of its own
H0 = datetime(2026, 11, 3, 8, 0, tzinfo=UTC)


@pytest.fixture
def broker() -> Iterator[str]:
    client = redis.Redis.from_url(REDIS)
    client.flushdb()
    yield REDIS
    client.flushdb()
    client.close()


def _plan(make_plan: Callable[..., Plan], sim_url: str) -> Plan:
    return make_plan(
        deployment={
            "base_url": f"{sim_url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
            "max_concurrency": 1,
        },
        tasks=[
            {
                "id": "knowledge-qa",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1h",
                "sample_size": 6,
                "baseline": {"value": 0.85, "n": 500},
                "thresholds": {"min_score": 0.7},
            }
        ],
        service={"executor": "celery", "seed": 42, "queue": f"medmon-test-{uuid.uuid4().hex[:8]}"},
    )


def _results(engine: Engine) -> list[tuple[object, ...]]:
    with Session(engine) as s:
        rows = s.exec(
            select(ProbeRun, ProbeResult)
            .join(ProbeResult, col(ProbeResult.run_id) == col(ProbeRun.id))
            .order_by(col(ProbeRun.started_at), col(ProbeResult.id))
        ).all()
        return [
            (
                run.purpose,
                r.canary_id,
                r.answer,
                r.score,
                r.correct,
                r.prompt_tokens,
                r.completion_tokens,
                r.cost_usd,
                r.served_model,
            )
            for run, r in rows
        ]


@pytest.mark.process
def test_a_real_worker_gives_the_same_results_as_in_process_and_probes_each_slot_once(
    broker: str, make_plan, serve: Callable, new_db_url: Callable[[], str]
) -> None:
    canaries = load_pack("clinical_knowledge_mcq").canaries
    phases = [Phase(accuracy=0.7)]  # wrong answers too, drawn by the simulator's seeded RNG
    slots_ = [H0 + timedelta(hours=i) for i in range(3)]

    local_plan = _plan(make_plan, serve(create_simulator(canaries, phases, seed=9)).url)
    local = make_engine(new_db_url())
    ctx = load_context(local_plan, local_plan.tasks[0])
    for when in slots_:
        run_slot(local, local_plan, ctx, when, now=lambda: H0, by="local:1", seed=local_plan.service.seed)

    plan = _plan(make_plan, serve(create_simulator(canaries, phases, seed=9)).url)
    shared = make_engine(new_db_url())
    app = make_celery(broker, queue=plan.service.queue, name=f"medmon-test-{uuid.uuid4().hex[:6]}")
    register_worker_runtime(app, worker_runtime(shared, plan, [load_context(plan, plan.tasks[0])]))
    dispatch = CeleryDispatch(app, plan)
    with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING"):
        for when in slots_:
            dispatch("knowledge-qa", when, False)
        dispatch("knowledge-qa", slots_[0], False)  # a duplicate message (e.g. a redelivery after a restart)
        wait_for(
            lambda: (
                dispatch.queue_depth() == 0 and len([r for r in runs(shared) if r.status == RunStatus.complete]) == 3
            ),
            60,
            what="the worker to probe three slots",
        )
    assert dispatch.queue_depth() == 0
    got, expected = _results(shared), _results(local)
    assert len(expected) == 18 and any(row[4] is False for row in expected), "the comparison needs wrong answers too"
    assert got == expected, "a worker must record exactly what in-process execution records"
    assert len(runs(shared)) == 3 and len(slots(shared)) == 3, "a duplicate message probed a slot twice"
    local.dispose()
    shared.dispose()


def test_digest_ignores_where_things_run_but_not_what_is_probed(make_plan) -> None:
    plan = _plan(make_plan, "http://127.0.0.1:1")
    moved = plan.model_copy(update={"storage": plan.storage.model_copy(update={"url": "postgresql://db/medmon"})})
    assert plan_digest(plan) == plan_digest(moved)
    other = plan.model_copy(update={"tasks": [plan.tasks[0].model_copy(update={"sample_size": 7})]})
    assert plan_digest(plan) != plan_digest(other)


@pytest.mark.slow
@pytest.mark.process
def test_medmon_serve_enqueues_and_medmon_worker_processes_execute(
    broker: str, db_url: str, tmp_path: Path, serve: Callable
) -> None:
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries))
    queue = f"medmon-test-{uuid.uuid4().hex[:8]}"
    plan = write_plan(
        tmp_path / "plan.yaml",
        sim.url,
        db_url,
        schedule="1s",
        sample_size=2,
        service={"executor": "celery", "queue": queue, "broker_url_env": "MEDMON_TEST_BROKER"},
    )
    env = {"MEDMON_TEST_BROKER": broker}
    db = reader(db_url)
    worker = start_medmon(["worker", str(plan), "--hostname", f"w1-{queue}@%h"], tmp_path / "worker.log", env)
    scheduler = start_medmon(["serve", str(plan)], tmp_path / "serve.log", env)
    try:
        scheduler.wait_log("executor celery")
        wait_for(
            lambda: len([r for r in runs(db) if r.status == RunStatus.complete]) >= 3,
            60,
            what="probes executed by the worker",
        )
    finally:
        stopped = scheduler.stop()
        worker.stop(timeout=30)
        worker.kill()  # even when the service failed: no worker is left consuming after the test
    assert stopped == 0, scheduler.text()
    serve_pid, worker_pid = scheduler.proc.pid, worker.proc.pid
    claimers = {s.claimed_by.rsplit(":", 1)[1] for s in slots(db)}
    assert claimers == {str(worker_pid)}, (
        f"probes ran in {claimers}, not in the worker {worker_pid} (serve {serve_pid})"
    )
    times = [s.scheduled_for for s in slots(db)]
    assert len(times) == len(set(times))
    db.dispose()


@pytest.mark.slow
@pytest.mark.process
def test_a_worker_killed_mid_probe_leaves_its_slot_to_the_next_worker(
    broker: str, db_url: str, tmp_path: Path, serve: Callable
) -> None:
    """``kill -9`` of the worker holding a probe: once the visibility timeout passes, the broker hands
    the message to the next worker, which marks the abandoned run interrupted and probes the slot once."""
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(latency_s=1.0)]))
    queue = f"medmon-test-{uuid.uuid4().hex[:8]}"
    plan_path = write_plan(
        tmp_path / "plan.yaml",
        sim.url,
        db_url,
        schedule="1h",
        sample_size=4,
        max_concurrency=1,
        service={
            "executor": "celery",
            "queue": queue,
            "broker_url_env": "MEDMON_TEST_BROKER",
            "visibility_timeout": "3s",
        },
    )
    env, db = {"MEDMON_TEST_BROKER": broker}, reader(db_url)
    dispatch = CeleryDispatch(make_celery(broker, queue=queue), load_plan(plan_path))
    first = start_medmon(["worker", str(plan_path), "--hostname", f"w1-{queue}@%h"], tmp_path / "w1.log", env)
    try:
        dispatch("task-0", H0, False)
        wait_for(lambda: any(r.status == RunStatus.running for r in runs(db)), 60, what="the first worker's probe")
    finally:
        first.kill()
    second = start_medmon(["worker", str(plan_path), "--hostname", f"w2-{queue}@%h"], tmp_path / "w2.log", env)
    try:
        wait_for(
            lambda: any(r.status == RunStatus.complete for r in runs(db)),
            60,
            what=f"the slot probed by the second worker ({second.log})",
        )
    finally:
        second.stop(timeout=30)
        second.kill()
    abandoned, finished = runs(db)
    assert (abandoned.status, abandoned.error) == (RunStatus.interrupted, "abandoned mid-probe; retried")
    assert (finished.status, finished.purpose) == (RunStatus.complete, "retry")
    (slot,) = slots(db)
    assert (slot.attempts, slot.run_id) == (2, finished.id)
    assert slot.claimed_by.endswith(f":{second.proc.pid}")
    with Session(db) as s:
        counted = s.exec(select(ProbeResult.run_id)).all()
    assert counted.count(finished.id) == 4  # the retried probe's sample, stored once
    assert dispatch.queue_depth() == 0
    db.dispose()


def test_check_says_when_a_probe_can_outlast_the_visibility_timeout(make_plan: Callable[..., Plan]) -> None:
    from medmon.monitor.governance.checks import plan_notes

    def notes(**service: object) -> list[str]:
        return [n for n in plan_notes(make_plan(service={"executor": "celery", **service})) if "visibility" in n]

    # 20 canaries, 8 at a time, 5 s timeout, no retries: three waves of 5 s at worst.
    assert notes(visibility_timeout="10s") == [
        "service.visibility_timeout (10s) is shorter than the longest probe can take (about 15s when every call "
        "times out): a slow probe's message would be handed to a second worker while the first still runs"
    ]
    assert notes() == [] and notes(visibility_timeout="20s") == []
    with pytest.raises(PlanError, match=r"service.visibility_timeout: expected an interval like '1h', got 'soon'"):
        make_plan(service={"executor": "celery", "visibility_timeout": "soon"})
