"""``medmon serve``: stored schedule, slots probed once, clean stops, restarts that resume."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import yaml
from sqlmodel import Session, func, select

from medmon.monitor.errors import PlanError
from medmon.monitor.models import DetectorState
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.service.scheduler import build_service_scheduler, sync_probe_jobs, task_trigger
from medmon.monitor.service.serve import ServiceOptions, run_service
from medmon.monitor.service.slots import MAX_ATTEMPTS, claim_slot, last_fire_time, retry_candidates, run_slot, slot_rng
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict
from tests.monitor.service_helpers import reader, runs, slots, start_medmon, wait_for, write_plan

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def simulator(serve: Callable) -> Callable[..., str]:
    def start(*phases: Phase, seed: int = 0) -> str:
        app = create_simulator(load_pack("clinical_knowledge_mcq").canaries, list(phases) or None, seed=seed)
        return str(serve(app).url)

    return start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- slots: the guard against probing a scheduled time twice ---------------------------------


def test_a_slot_is_claimed_once_and_retried_only_while_unfinished(engine) -> None:
    first = claim_slot(engine, "t", T0, by="a:1", now=T0)
    assert first is not None
    assert claim_slot(engine, "t", T0, by="b:2", now=T0) is None, "a second claim of the same time must fail"
    assert claim_slot(engine, "t", T0 + timedelta(hours=1), by="b:2", now=T0) is not None
    # The first claimer died before finishing: a retry may claim it again, up to MAX_ATTEMPTS.
    attempts = [claim_slot(engine, "t", T0, by="c:3", now=T0, retry=True) for _ in range(MAX_ATTEMPTS)]
    assert attempts[: MAX_ATTEMPTS - 1] == [first] * (MAX_ATTEMPTS - 1)
    assert attempts[-1] is None, "a slot gives up after MAX_ATTEMPTS"


def test_interval_schedules_are_one_grid_whoever_computes_them(make_plan: Callable[..., Plan]) -> None:
    plan = make_plan()
    task = plan.tasks[0].model_copy(update={"schedule": "15m"})
    a, b = task_trigger(task), task_trigger(task)
    now = datetime(2026, 11, 2, 9, 7, 30, tzinfo=UTC)
    assert (
        a.get_next_fire_time(None, now) == b.get_next_fire_time(None, now) == datetime(2026, 11, 2, 9, 15, tzinfo=UTC)
    )
    assert last_fire_time(a, now, timedelta(minutes=15)) == datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    assert last_fire_time(a, now, timedelta(minutes=5)) is None, "no scheduled time within the lookback"


def test_same_seed_same_slot_draws_the_same_canaries() -> None:
    pool = list(range(100))
    draw = [slot_rng(7, "t", T0).choice(pool) for _ in range(3)]
    assert draw == [slot_rng(7, "t", T0).choice(pool) for _ in range(3)]
    a, b = slot_rng(7, "t", T0), slot_rng(7, "t", T0 + timedelta(hours=1))
    assert [a.random() for _ in range(3)] != [b.random() for _ in range(3)], "every slot must draw afresh"
    assert slot_rng(None, "t", T0).random() != slot_rng(None, "t", T0).random(), "unseeded draws are fresh entropy"


def test_run_slot_probes_once_and_a_cut_short_slot_is_a_retry_candidate(engine, make_plan, simulator) -> None:
    url = simulator()
    plan = make_plan(
        deployment={
            "base_url": f"{url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        }
    )
    ctx = load_context(plan, plan.tasks[0])
    clock = lambda: T0  # noqa: E731
    outcome = run_slot(engine, plan, ctx, T0, now=clock, by="me:1", seed=1)
    assert outcome is not None and outcome.results == plan.tasks[0].sample_size
    assert run_slot(engine, plan, ctx, T0, now=clock, by="me:1", seed=1) is None, "probed twice"
    assert retry_candidates(engine, {"knowledge-qa": timedelta(hours=2)}, T0) == []
    # A process dies after claiming the next slot and opening its run.
    nxt = T0 + timedelta(hours=1)
    slot_id = claim_slot(engine, "knowledge-qa", nxt, by="dead:9", now=nxt)
    assert slot_id is not None
    [candidate] = retry_candidates(engine, {"knowledge-qa": timedelta(hours=2)}, nxt)
    assert (candidate.task_id, candidate.scheduled_for, candidate.attempts) == ("knowledge-qa", nxt, 1)
    assert retry_candidates(engine, {"knowledge-qa": timedelta(hours=2)}, nxt, busy={"knowledge-qa"}) == []
    retried = run_slot(engine, plan, ctx, nxt, now=lambda: nxt, by="me:1", seed=1, retry=True)
    assert retried is not None
    with Session(engine) as s:
        run = s.get(ProbeRun, retried.run_id)
        assert run is not None and run.status == RunStatus.complete and run.purpose == "retry"
    assert retry_candidates(engine, {"knowledge-qa": timedelta(hours=2)}, nxt) == []


def test_a_probe_whose_slot_was_taken_over_stores_nothing(engine, make_plan, simulator) -> None:
    """A slow worker presumed dead finishes after another took its slot: only the taker's run counts."""
    url = simulator()
    plan = make_plan(
        deployment={
            "base_url": f"{url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        }
    )
    ctx = load_context(plan, plan.tasks[0])
    taken = []

    def taken_over(run_id: int) -> None:  # while the slow one probes, the slot is retried elsewhere
        taken.append(claim_slot(engine, "knowledge-qa", T0, by="other:2", now=T0, retry=True))

    slow = run_slot(engine, plan, ctx, T0, now=lambda: T0, by="slow:1", seed=1, on_start=taken_over)
    assert slow is not None and slow.superseded and slow.updates == [] and slow.signals == []
    assert taken[0] is not None
    with Session(engine) as s:
        run = s.get(ProbeRun, slow.run_id)
        assert run is not None and run.status == RunStatus.interrupted and run.n_canaries == 0
        assert s.exec(select(func.count()).select_from(ProbeResult)).one() == 0
        assert s.exec(select(func.count()).select_from(DetectorState)).one() == 0
    [candidate] = retry_candidates(engine, {"knowledge-qa": timedelta(hours=2)}, T0)  # still owed a probe
    assert candidate.attempts == 2


# --- the stored schedule ------------------------------------------------------------------------


def test_stored_jobs_are_kept_across_restarts_and_follow_plan_changes(db_url: str, make_plan) -> None:
    engine = make_engine(db_url)
    tasks = [
        {
            "id": i,
            "benchmark": "med_qa",
            "canaries": {"pack": "clinical_knowledge_mcq"},
            "schedule": "1h",
            "thresholds": {"min_score": 0.7},
        }
        for i in ("a", "b")
    ]
    plan = make_plan(tasks=tasks)
    first = build_service_scheduler(engine, plan, "k", {})
    stored = {j.id: j.next_run_time for j in first.get_jobs(jobstore="default")}
    first.shutdown(wait=False)
    assert set(stored) == {"probe:a", "probe:b"}

    second = build_service_scheduler(engine, plan, "k", {})
    assert {j.id: j.next_run_time for j in second.get_jobs(jobstore="default")} == stored
    changed = make_plan(tasks=[tasks[0] | {"schedule": "30m"}])
    assert sync_probe_jobs(second, changed, "k") == {"probe:b": "removed", "probe:a": "added"}
    assert [j.id for j in second.get_jobs(jobstore="default")] == ["probe:a"]
    assert sync_probe_jobs(second, changed, "k") == {"probe:a": "kept"}
    second.shutdown(wait=False)
    engine.dispose()


def test_service_probes_on_schedule_reports_health_and_stops_cleanly(
    db_url: str, tmp_path: Path, simulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", "k")
    monkeypatch.delenv("MEDMON_DATABASE_URL", raising=False)
    plan_path = write_plan(tmp_path / "plan.yaml", simulator(), db_url, schedule="1s", sample_size=2)
    port = _free_port()
    stop = threading.Event()
    outcome: dict[str, object] = {}
    thread = threading.Thread(
        target=lambda: outcome.setdefault(
            "result",
            run_service(
                plan_path, stop, options=ServiceOptions(health_port=port, install_signals=False, stop_timeout_s=10)
            ),
        )
    )
    thread.start()
    db = reader(db_url)
    try:
        wait_for(lambda: sum(r.status == RunStatus.complete for r in runs(db)) >= 3, 30, what="three probes")
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        assert health.status_code == 200, health.text
        body = health.json()
        assert body["role"] == "leader" and body["database"]["reachable"] is True
        assert body["tasks"][0]["task"] == "task-0" and body["tasks"][0]["last_probe"] is not None
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert outcome["result"].led is True  # type: ignore[attr-defined]
    all_runs = runs(db)
    assert all(r.status == RunStatus.complete for r in all_runs), [(r.id, r.status) for r in all_runs]
    claimed = slots(db)
    assert len(claimed) == len(all_runs), "one run per scheduled time"
    gaps = [(b.scheduled_for - a.scheduled_for).total_seconds() for a, b in zip(claimed, claimed[1:])]
    assert all(g >= 1.0 for g in gaps), f"two probes for one second: {gaps}"
    db.dispose()


# --- real processes -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.process
def test_sigterm_finishes_the_probe_in_flight_and_a_restart_resumes_the_schedule(
    db_url: str, tmp_path: Path, simulator
) -> None:
    plan = write_plan(
        tmp_path / "plan.yaml", simulator(Phase(latency_s=0.3)), db_url, schedule="1s", sample_size=3, max_concurrency=1
    )
    db = reader(db_url)
    first = start_medmon(["serve", str(plan)], tmp_path / "first.log")
    try:
        wait_for(lambda: len([r for r in runs(db) if r.status == RunStatus.complete]) >= 2, 40, what="two probes")
        in_flight = wait_for(
            lambda: [r for r in runs(db) if r.status == RunStatus.running], 10, what="a probe in flight"
        )
    finally:
        assert first.stop(signal.SIGTERM) == 0, first.text()
    finished = {r.id: r for r in runs(db)}
    assert finished[in_flight[0].id].status == RunStatus.complete, "SIGTERM cut the probe in flight short"
    assert finished[in_flight[0].id].n_canaries == 3
    before = slots(db)
    stopped_at = datetime.now(UTC)
    wait_for(lambda: datetime.now(UTC) - stopped_at > timedelta(seconds=2.5), 10, what="2.5 s down")

    second = start_medmon(["serve", str(plan)], tmp_path / "second.log")
    try:
        second.wait_log("leading as")
        restarted_at = datetime.now(UTC)
        wait_for(
            lambda: len([s for s in slots(db) if s.run_id]) >= len(before) + 2, 30, what="two probes after restart"
        )
    finally:
        assert second.stop() == 0, second.text()
    everything = slots(db)
    after = everything[len(before) :]
    assert [s.id for s in everything[: len(before)]] == [s.id for s in before]
    assert after[0].scheduled_for > before[-1].scheduled_for, "a scheduled time was probed twice"
    # Down for more than 2.5 s: at most one catch-up probe (coalesced, 1 s grace), then the grid.
    caught_up = [s for s in after if s.scheduled_for < restarted_at - timedelta(seconds=1.5)]
    assert len(caught_up) <= 1, f"burst after restart: {[s.scheduled_for for s in caught_up]}"
    gaps = [(b.scheduled_for - a.scheduled_for).total_seconds() for a, b in zip(after, after[1:])]
    assert all(g >= 1.0 for g in gaps), gaps
    assert all(r.status == RunStatus.complete for r in runs(db)), [(r.id, r.status) for r in runs(db)]
    assert len(runs(db)) == len(everything)
    db.dispose()


def test_plan_service_section_is_validated(make_plan) -> None:
    plan = make_plan(service={"executor": "celery", "health_port": 9100, "seed": 3})
    assert plan.service.executor == "celery" and plan.service.health_port == 9100
    with pytest.raises(PlanError) as err:
        parse_plan(yaml.safe_dump(plan_dict(service={"executor": "threads", "misfire_grace": "soon"})))
    text = str(err.value)
    assert "service.executor" in text and "service.misfire_grace" in text
