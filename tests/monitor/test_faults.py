"""Faults the service must survive: crashes mid-probe, a database away, a full disk, a dead model
endpoint, and a clock that jumps."""

from __future__ import annotations

import logging
import signal
import sqlite3
import threading
import types
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apscheduler.executors.base
import apscheduler.schedulers.base
import httpx
import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlmodel import Session, select

from medmon.alerts import Alert
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.service.scheduler import (
    InProcessDispatch,
    ServiceRuntime,
    build_service_scheduler,
    register_runtime,
    unregister_runtime,
)
from medmon.monitor.service.serve import ServiceOptions, run_service
from medmon.monitor.service.slots import claim_slot, run_slot
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Fault, Phase, create_simulator
from tests.monitor.service_helpers import reader, runs, slots, start_medmon, wait_for, write_plan

H0 = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)


@pytest.fixture
def simulator(serve: Callable) -> Callable[..., tuple[str, object]]:
    def start(*phases: Phase, seed: int = 0) -> tuple[str, object]:
        app = create_simulator(load_pack("clinical_knowledge_mcq").canaries, list(phases) or None, seed=seed)
        return str(serve(app).url), app.state.sim

    return start


def _sim_plan(make_plan: Callable[..., Plan], url: str, **task: object) -> Plan:
    base = {
        "id": "knowledge-qa",
        "benchmark": "med_qa",
        "canaries": {"pack": "clinical_knowledge_mcq"},
        "schedule": "5m",
        "sample_size": 20,
        "baseline": {"value": 0.85, "n": 500},
        "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5},
    }
    return make_plan(
        deployment={
            "base_url": f"{url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        },
        tasks=[base | task],
    )


# --- kill -9 and abandoned stops ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.process
def test_abandoned_and_killed_probes_are_marked_interrupted_and_retried(tmp_path: Path, db_url: str, simulator) -> None:
    url, _ = simulator(Phase(latency_s=0.3))
    plan = write_plan(
        tmp_path / "plan.yaml",
        url,
        db_url,
        schedule="2s",
        sample_size=4,
        max_concurrency=1,
        service={"misfire_grace": "1m"},
    )
    db = reader(db_url)

    def in_flight() -> list[ProbeRun]:
        return [r for r in runs(db) if r.status == RunStatus.running]

    # 1. SIGTERM with a short stop timeout abandons the probe: its run is marked interrupted.
    first = start_medmon(["serve", str(plan), "--stop-timeout", "0.2"], tmp_path / "first.log")
    try:
        [cut] = wait_for(in_flight, 90, what="a probe in flight")  # a loaded machine starts slowly
        assert first.stop(signal.SIGTERM, timeout=20) == 0, first.text()
    finally:
        first.kill()
    [slot] = [s for s in slots(db) if s.run_id == cut.id]
    assert {r.id: r.status for r in runs(db)}[cut.id] == RunStatus.interrupted
    assert not in_flight()

    # 2. The next start retries that slot; kill -9 it mid-probe: the run stays 'running'.
    second = start_medmon(["serve", str(plan)], tmp_path / "second.log")
    try:
        retry = wait_for(lambda: [r for r in in_flight() if r.purpose == "retry"], 40, what="the retry in flight")
        second.kill()
    finally:
        second.kill()
    assert {r.id: r.status for r in runs(db)}[retry[0].id] == RunStatus.running, "kill -9 left nothing to recover"

    # 3. The third start marks it interrupted and retries the slot again, to completion.
    third = start_medmon(["serve", str(plan)], tmp_path / "third.log")
    try:
        third.wait_log(r"marked 1 probe run\(s\) left running by a previous leader as interrupted")
        wait_for(
            lambda: (
                next(s for s in slots(db) if s.id == slot.id).attempts == 3
                and any(r.status == RunStatus.complete and r.purpose == "retry" for r in runs(db))
            ),
            40,
            what="the slot retried to completion",
        )
    finally:
        assert third.stop() == 0, third.text()
    final = next(s for s in slots(db) if s.id == slot.id)
    by_id = {r.id: r for r in runs(db)}
    assert final.run_id is not None and by_id[final.run_id].status == RunStatus.complete
    assert by_id[final.run_id].n_canaries == 4
    assert by_id[cut.id].status == by_id[retry[0].id].status == RunStatus.interrupted
    assert not [r for r in by_id.values() if r.status == RunStatus.running]
    db.dispose()


# --- the database away ---------------------------------------------------------------------------


def _block(url: str, allow: bool) -> None:
    """Refuse (or allow again) every new connection to the test database and drop the current ones."""
    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{parsed.database}" ALLOW_CONNECTIONS {"true" if allow else "false"}')
        if not allow:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (parsed.database,)
            )


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.process
def test_database_unreachable_the_service_waits_and_recovers(
    postgres_url: str, tmp_path: Path, simulator, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The database is away at start, then again mid-run ('a minute', shortened to 3 s)."""
    monkeypatch.setenv("MEDMON_TEST_KEY", "k")
    monkeypatch.delenv("MEDMON_DATABASE_URL", raising=False)
    caplog.set_level(logging.INFO)
    url, _ = simulator(Phase(latency_s=0.15))
    plan = write_plan(
        tmp_path / "plan.yaml",
        url,
        postgres_url,
        schedule="1s",
        sample_size=3,
        max_concurrency=1,
        service={"standby_poll": "200ms", "misfire_grace": "10s"},
    )
    port = wait_for(lambda: _port(), 5)
    _block(postgres_url, allow=False)
    stop = threading.Event()
    thread = threading.Thread(
        target=run_service,
        args=(plan, stop),
        kwargs={
            "options": ServiceOptions(
                health_port=port, install_signals=False, database_retry_s=0.3, check_every_s=0.2, stop_timeout_s=10
            )
        },
    )
    thread.start()
    db = reader(postgres_url)
    try:
        wait_for(lambda: "database unreachable" in caplog.text, 20, what="the service waiting for the database")
        _block(postgres_url, allow=True)
        wait_for(lambda: len([r for r in runs(db) if r.status == RunStatus.complete]) >= 2, 40, what="probes")
        _block(postgres_url, allow=False)
        down = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        assert down.status_code == 503 and down.json()["database"]["reachable"] is False, down.text
        wait_for(lambda: "lost the leader lock" in caplog.text, 10, what="the leader noticing its lock is gone")
        outage_end = datetime.now(UTC) + timedelta(seconds=3)
        wait_for(lambda: datetime.now(UTC) > outage_end, 10, what="the outage")
        assert thread.is_alive(), "the service died with its database"
        _block(postgres_url, allow=True)
        db.dispose()
        resumed = datetime.now(UTC)
        wait_for(
            lambda: (
                len(
                    [
                        r
                        for r in runs(db)
                        if r.status == RunStatus.complete and r.finished_at is not None and r.finished_at > resumed
                    ]
                )
                >= 2
            ),
            40,
            what="probes after the outage",
        )
        up = wait_for(
            lambda: (r := httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)).status_code == 200 and r,
            20,
            what="healthy again",
        )
        assert up.json()["role"] == "leader"
    finally:
        _block(postgres_url, allow=True)
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    by_id = {r.id: r for r in runs(db)}
    assert not [r for r in by_id.values() if r.status == RunStatus.running], "a run was left half-done"
    for s in slots(db):
        # Every slot either completed or was cut short and retried to completion (or gave up loudly).
        assert s.run_id is not None and by_id[s.run_id].status in (
            RunStatus.complete,
            RunStatus.interrupted,
            RunStatus.failed,
        ), s
    complete = [s for s in slots(db) if by_id[s.run_id].status == RunStatus.complete]  # type: ignore[index]
    assert len(complete) >= len(slots(db)) - 1, "more than the slot in flight at the cut was lost"
    db.dispose()


def _port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- a full disk ----------------------------------------------------------------------------------


def test_sqlite_disk_full_is_a_clear_error_and_leaves_the_database_intact(
    tmp_path: Path, make_plan, simulator, caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = simulator()
    path = tmp_path / "full.db"
    plan = _sim_plan(make_plan, url, sample_size=20)
    ctx = load_context(plan, plan.tasks[0])
    engine = make_engine(f"sqlite:///{path}")
    for i in range(2):
        assert run_slot(engine, plan, ctx, H0 + timedelta(minutes=5 * i), now=lambda: H0, by="t:1") is not None
    engine.dispose()
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT count(*) FROM proberesult").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0] + 2
        # Fill the disk: cap the file and use up every free page.
        conn.execute(f"PRAGMA max_page_count = {pages}")
        conn.execute("CREATE TABLE filler (x BLOB)")
        with pytest.raises(sqlite3.OperationalError, match="full"):
            for _ in range(10_000):
                conn.execute("INSERT INTO filler VALUES (randomblob(2000))")
        conn.commit()

    full = make_engine(f"sqlite:///{path}", create=False)

    @event.listens_for(full, "connect")
    def _cap(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")  # the disk is now full

    # a probe of 200 answers: more than any slack left inside the pages of the full file
    big = _sim_plan(make_plan, url, sample_size=200)
    dispatch = InProcessDispatch(full, big, [load_context(big, big.tasks[0])], now=lambda: H0)
    with caplog.at_level(logging.ERROR, logger="medmon"):
        dispatch("knowledge-qa", H0 + timedelta(minutes=10), False)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors, "a failed probe must be logged"
    assert "database is full" in errors[-1].getMessage() and str(path) in errors[-1].getMessage()
    full.dispose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM proberesult").fetchone()[0] == stored
        assert conn.execute("SELECT count(*) FROM proberun WHERE status = 'complete'").fetchone()[0] == 2
    # With space again, the next scheduled time is probed normally.
    engine = make_engine(f"sqlite:///{path}")
    assert run_slot(engine, plan, ctx, H0 + timedelta(minutes=15), now=lambda: H0, by="t:1") is not None
    engine.dispose()


# --- the model endpoint down for an hour -------------------------------------------------------


def test_model_down_for_an_hour_raises_an_availability_alert_not_an_accuracy_one(engine, make_plan, simulator) -> None:
    url, sim = simulator(Phase(accuracy=0.85), seed=4)
    plan = _sim_plan(make_plan, url, schedule="5m")
    ctx = load_context(plan, plan.tasks[0])
    clock = [H0]
    for i in range(12):  # an hour of healthy probes first
        run_slot(engine, plan, ctx, H0 + timedelta(minutes=5 * i), now=lambda: clock[0], by="t:1", seed=1)
    sim.inject(Fault(kind="status", status=503, count=12 * 20))  # type: ignore[attr-defined]
    outage = [H0 + timedelta(hours=1, minutes=5 * i) for i in range(12)]
    for when in outage:  # the endpoint answers 503 to every call for an hour
        clock[0] = when
        run_slot(engine, plan, ctx, when, now=lambda: clock[0], by="t:1", seed=1)
    with Session(engine) as s:
        alerts = s.exec(select(Alert)).all()
        metrics = {a.labels.get("metric") for a in alerts}
        failed = s.exec(select(ProbeResult).where(ProbeResult.created_at >= outage[0])).all()
    assert "error_rate" in metrics, f"no availability alert: {metrics}"
    assert "score" not in metrics, "failed calls were scored as wrong answers"
    assert failed and all(r.error_type and r.score is None and r.correct is None for r in failed)


# --- clock jumps ---------------------------------------------------------------------------------


def test_clock_jumps_forward_and_back_cause_no_burst_and_no_duplicate(
    engine, make_plan, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [datetime(2026, 11, 2, 0, 30, tzinfo=UTC)]

    def now(tz: object = None) -> datetime:
        return clock[0].astimezone(tz) if tz is not None else clock[0]  # type: ignore[arg-type]

    fake = types.SimpleNamespace(now=now)
    monkeypatch.setattr(apscheduler.schedulers.base, "datetime", fake)
    monkeypatch.setattr(apscheduler.executors.base, "datetime", fake)
    plan = make_plan(
        tasks=[
            {
                "id": "hourly",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1h",
                "thresholds": {"min_score": 0.7},
            }
        ]
    )
    probed: list[tuple[datetime, bool]] = []
    done = threading.Semaphore(0)

    def dispatch(task_id: str, when: datetime, retry: bool) -> None:
        probed.append((when, claim_slot(engine, task_id, when, by="t:1", now=clock[0]) is not None))
        done.release()

    register_runtime("clock-test", ServiceRuntime(engine, plan, dispatch, now=lambda: clock[0], retries=False))
    scheduler = build_service_scheduler(engine, plan, "clock-test", {}, delivery_every_s=3600, recovery_every_s=3600)
    passes = threading.Semaphore(0)
    process = scheduler._process_jobs

    def counted() -> float | None:
        try:
            return process()
        finally:
            passes.release()

    scheduler._process_jobs = counted  # type: ignore[method-assign]
    scheduler.resume()

    def step(to: datetime, expect_probes: int) -> None:
        clock[0] = to
        while passes.acquire(timeout=0.01):
            pass
        scheduler.wakeup()
        assert passes.acquire(timeout=10), "the scheduler did not run a pass"
        for _ in range(expect_probes):
            assert done.acquire(timeout=10), f"expected {expect_probes} probe(s) at {to}"

    try:
        step(datetime(2026, 11, 2, 1, 0, 0, 100_000, tzinfo=UTC), 1)
        step(datetime(2026, 11, 2, 6, 0, 30, tzinfo=UTC), 1)  # forward 5 h: one probe, not five
        step(datetime(2026, 11, 2, 3, 30, tzinfo=UTC), 0)  # back 2.5 h: nothing re-runs
        step(datetime(2026, 11, 2, 5, 0, 10, tzinfo=UTC), 0)  # 05:00 again: already past for the job
        step(datetime(2026, 11, 2, 7, 0, 0, 200_000, tzinfo=UTC), 1)
    finally:
        scheduler.shutdown(wait=True)
        unregister_runtime("clock-test")
    assert [(w.hour, ok) for w, ok in probed] == [(1, True), (6, True), (7, True)]
    # A restart with the clock set back re-fires a time already probed: the slot refuses it.
    assert claim_slot(engine, "hourly", datetime(2026, 11, 2, 6, tzinfo=UTC), by="t:2", now=clock[0]) is None
