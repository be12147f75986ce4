"""A probe run's life: the legal moves of its status, and what execute_probe stores on each path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from medmon.db import session_scope
from medmon.probes.models import ProbeRecord, ProbeResult, ProbeResultBase, ProbeRun, RunStatus
from medmon.probes.pool import ClientPool
from medmon.probes.redaction import TextPolicy, keep
from medmon.probes.runs import MOVES, IllegalRunMove, execute_probe, move_run

T0 = datetime(2026, 11, 1, tzinfo=UTC)
SETTLED = [RunStatus.complete, RunStatus.failed, RunStatus.interrupted]


def records(n: int) -> list[ProbeResultBase]:
    return [ProbeRecord(task_id="t", canary_id=f"c{i}", score=1.0) for i in range(n)]


def stored(engine: Engine) -> tuple[list[ProbeRun], int]:
    with Session(engine) as s:
        return list(s.exec(select(ProbeRun)).all()), s.exec(select(func.count()).select_from(ProbeResult)).one()


@pytest.mark.parametrize("to", SETTLED)
def test_a_running_run_can_settle_each_way(to: RunStatus) -> None:
    run = ProbeRun(id=1, task_id="t")
    move_run(run, to, T0, "why" if to != RunStatus.complete else None)
    assert (run.status, run.finished_at) == (to, T0)
    assert run.error == (None if to == RunStatus.complete else "why")


@pytest.mark.parametrize("now", SETTLED)
@pytest.mark.parametrize("to", list(RunStatus))
def test_a_settled_run_never_moves_again(now: RunStatus, to: RunStatus) -> None:
    run = ProbeRun(id=1, task_id="t", status=now, finished_at=T0, error="first")
    with pytest.raises(IllegalRunMove, match=f"run 1 of t is {now.value}; it cannot become {to.value}"):
        move_run(run, to, datetime(2026, 11, 2, tzinfo=UTC), "second")
    assert (run.status, run.finished_at, run.error) == (now, T0, "first")


def test_the_table_lists_exactly_the_three_ways_out_of_running() -> None:
    assert dict(MOVES) == {RunStatus.running: frozenset(SETTLED)}
    with pytest.raises(IllegalRunMove):
        move_run(ProbeRun(id=1, task_id="t"), RunStatus.running, T0)


def test_a_probe_stores_its_results_and_completes(engine: Engine) -> None:
    started: list[int] = []

    async def call(_pool: ClientPool) -> list[ProbeResultBase]:
        (run,), _ = stored(engine)
        assert run.status == RunStatus.running  # committed before the call
        return records(3)

    done = execute_probe(
        engine,
        "t",
        call,
        now=lambda: T0,
        texts=TextPolicy(keep),
        on_start=started.append,
        store=lambda _s, run, results, _at: (run.status, len(results)),
    )
    (run,), n = stored(engine)
    assert started == [run.id] == [done.run_id] and done.stored == (RunStatus.complete, 3) and not done.superseded
    assert (run.status, run.n_canaries, run.mean_score, n) == (RunStatus.complete, 3, 1.0, 3)


def test_a_run_interrupted_mid_probe_stores_nothing(engine: Engine) -> None:
    stores: list[int] = []

    async def call(_pool: ClientPool) -> list[ProbeResultBase]:
        with session_scope(engine) as s:  # what the service does when it gives up on a probe in flight
            run = s.exec(select(ProbeRun)).one()
            move_run(run, RunStatus.interrupted, T0, "process stopped mid-probe")
            s.add(run)
        return records(3)

    done = execute_probe(engine, "t", call, now=lambda: T0, texts=TextPolicy(keep), store=lambda *_: stores.append(1))
    (run,), n = stored(engine)
    assert done.superseded and len(done.results) == 3 and done.stored is None and stores == []
    assert (run.status, run.error, n) == (RunStatus.interrupted, "process stopped mid-probe", 0)


def test_a_failing_call_fails_the_run_and_raises(engine: Engine) -> None:
    async def call(_pool: ClientPool) -> list[ProbeResultBase]:
        raise RuntimeError("endpoint exploded")

    with pytest.raises(RuntimeError, match="endpoint exploded"):
        execute_probe(engine, "t", call, now=lambda: T0, texts=TextPolicy(keep))
    (run,), n = stored(engine)
    assert (run.status, run.error, run.finished_at is not None, n) == (
        RunStatus.failed,
        "RuntimeError: endpoint exploded",
        True,
        0,
    )


def test_a_failing_store_rolls_back_and_fails_the_run(engine: Engine) -> None:
    async def call(_pool: ClientPool) -> list[ProbeResultBase]:
        return records(2)

    def store(*_: object) -> None:
        raise ValueError("detector broke")

    with pytest.raises(ValueError, match="detector broke"):
        execute_probe(engine, "t", call, now=lambda: T0, texts=TextPolicy(keep), store=store)
    (run,), n = stored(engine)
    assert (run.status, run.error, n) == (RunStatus.failed, "ValueError: detector broke", 0)


def test_a_kept_failure_closes_the_run_failed_and_still_reports(engine: Engine) -> None:
    async def call(_pool: ClientPool) -> list[ProbeResultBase]:
        raise RuntimeError("endpoint exploded")

    done = execute_probe(
        engine,
        "t",
        call,
        now=lambda: T0,
        texts=TextPolicy(keep),
        keep_failure=True,
        store=lambda _s, run, results, _at: (run.status, run.error, results),
    )
    (run,), n = stored(engine)
    assert done.stored == (RunStatus.failed, "RuntimeError: endpoint exploded", [])
    assert (run.status, run.n_canaries, n) == (RunStatus.failed, 0, 0)
