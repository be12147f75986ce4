"""One scheduler per database: the lock, and a hot standby taking over from a killed leader."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from medmon.monitor.service.leader import FileLeadership, LocalLeadership, PostgresLeadership, leadership_for
from medmon.probes.models import RunStatus
from medmon.probes.packs import load_pack
from medmon.probes.simulator import create_simulator
from tests.monitor.service_helpers import reader, runs, slots, start_medmon, wait_for, write_plan


def test_file_lock_admits_one_holder_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "medmon.db.lock"
    first, second = FileLeadership(path, "a:1"), FileLeadership(path, "b:2")
    assert first.try_acquire() and first.still_held()
    assert not second.try_acquire(), "two holders of one lock"
    assert path.read_text().strip() == "a:1", "the lock file names its holder"
    first.release()
    assert not first.still_held()
    assert second.try_acquire()
    second.release()


@pytest.mark.postgres
def test_advisory_lock_admits_one_holder_and_is_freed_when_its_connection_dies(postgres_url: str) -> None:
    first, second = PostgresLeadership(postgres_url), PostgresLeadership(postgres_url)
    try:
        assert first.try_acquire() and first.still_held()
        assert not second.try_acquire(), "two holders of one lock"
        # An administrator (or a database restart) ends the leader's session.
        parsed = make_url(postgres_url)
        admin = parsed.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
        with psycopg.connect(admin, autocommit=True) as conn:
            killed = conn.execute(
                "SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l JOIN pg_database d "
                "ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = %s",
                (parsed.database,),
            ).fetchone()
        assert killed is not None and killed[0] == 1
        assert not first.still_held(), "the leader must notice it lost the lock"
        assert wait_for(second.try_acquire, 10, what="the standby taking the lock")
        assert not first.try_acquire()
    finally:
        first.release()
        second.release()


def test_the_lock_matches_the_database(tmp_path: Path) -> None:
    assert isinstance(leadership_for(f"sqlite:///{tmp_path}/x.db"), FileLeadership)
    assert isinstance(leadership_for("sqlite:///:memory:"), LocalLeadership)
    pg = leadership_for("postgresql://postgres@127.0.0.1:5432/test")
    assert isinstance(pg, PostgresLeadership)
    pg.release()
    with pytest.raises(ValueError, match="mysql"):
        leadership_for("mysql://u@127.0.0.1/x")


@pytest.mark.slow
@pytest.mark.process
def test_a_standby_takes_over_when_the_leader_is_killed(db_url: str, tmp_path: Path, serve: Callable) -> None:
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries))
    plan = write_plan(
        tmp_path / "plan.yaml", sim.url, db_url, schedule="1s", sample_size=2, service={"standby_poll": "200ms"}
    )
    db = reader(db_url)
    a = start_medmon(["serve", str(plan)], tmp_path / "a.log")
    b = start_medmon(["serve", str(plan)], tmp_path / "b.log")
    try:
        leader = wait_for(lambda: next((p for p in (a, b) if "leading as" in p.text()), None), 40, what="a leader")
        standby = b if leader is a else a
        standby.wait_log("standby: waiting for the leader lock")
        leader_id = re.search(r"leading as (\S+):", leader.text()).group(1)  # type: ignore[union-attr]
        wait_for(lambda: len([s for s in slots(db) if s.run_id]) >= 3, 30, what="three probes by the leader")
        assert {s.claimed_by for s in slots(db)} == {leader_id}, "the standby probed while the leader lived"
        assert "leading as" not in standby.text()
        leader.kill()  # kill -9: no goodbye, the lock goes with the process
        killed_at = time.monotonic()
        standby.wait_log("leading as", timeout=15)
        took_over = time.monotonic() - killed_at
        standby_id = re.search(r"leading as (\S+):", standby.text()).group(1)  # type: ignore[union-attr]
        wait_for(
            lambda: [s for s in slots(db) if s.claimed_by == standby_id and s.run_id],
            15,
            what="a probe by the new leader",
        )
    finally:
        a.kill()
        b.kill()
    assert took_over < 5.0, f"takeover took {took_over:.1f}s"
    claimed = slots(db)
    times = [s.scheduled_for for s in claimed]
    assert len(times) == len(set(times)), "one scheduled time probed twice"
    assert all((y - x) >= timedelta(seconds=1) for x, y in zip(times, times[1:]))
    by_id = {r.id: r for r in runs(db)}
    assert len(claimed) - 1 <= len(by_id) <= len(claimed) + sum(s.attempts - 1 for s in claimed)
    # The killed leader's probe in flight, if any, is interrupted and retried by the new leader.
    assert all(by_id[s.run_id].status in (RunStatus.complete, RunStatus.running) for s in claimed if s.run_id)
    db.dispose()
