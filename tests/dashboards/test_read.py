"""The read functions aggregate in the database and agree with the rows they summarise.

These run on SQLite and, on the PostgreSQL pass (``MEDMON_TEST_DATABASE=postgresql``), on a
PostgreSQL session whose time zone is not UTC, so day buckets must still be UTC days.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.read import (
    agreement_series,
    change_history,
    cost_by_day,
    cost_by_task,
    current_score,
    judge_cost_by_day,
    judge_cost_by_task,
    recent_estimate,
    run_series,
    served_model_history,
    subgroup_slices,
    task_overview,
)
from medmon.monitor.storage import make_engine
from medmon.probes.models import JudgeCall, ProbeResult, ProbeRun
from tests.conftest import ON_POSTGRES, fresh_postgres_database
from tests.dashboards.seed import JUDGED, Seeded, seed


@pytest.fixture(scope="module")
def db_url() -> Iterator[str | None]:
    """A fresh PostgreSQL database on the PostgreSQL pass; None on SQLite, where the session's
    seeded file serves (the fixture's name keeps these tests on the PostgreSQL pass)."""
    if ON_POSTGRES:
        with fresh_postgres_database("medmon_dash") as url:
            yield url + "?options=-c%20timezone%3DAmerica/New_York"
    else:
        yield None


@pytest.fixture(scope="module")
def seeded_db(
    db_url: str | None, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Seeded, Engine, Plan]]:
    """Read-only tests share one seeded database."""
    seeded = (
        seed(tmp_path_factory.mktemp("read_seed"), db_url=db_url)
        if db_url is not None
        else request.getfixturevalue("seeded_master")
    )
    engine = make_engine(seeded.db_url)
    yield seeded, engine, load_plan(seeded.plan_path)
    engine.dispose()


def _results(engine: Engine, task_id: str) -> list[ProbeResult]:
    with Session(engine) as s:
        return list(
            s.exec(select(ProbeResult).where(ProbeResult.task_id == task_id).order_by(col(ProbeResult.id))).all()
        )


def test_recent_estimate_is_the_mean_of_the_latest_scored_monitoring_answers(
    seeded_db: tuple[Seeded, Engine, Plan],
) -> None:
    """The current score: a re-evaluation's answers judge a candidate model, not the one served."""
    _, engine, _ = seeded_db
    with Session(engine) as s:
        reevaluation_runs = set(s.exec(select(ProbeRun.id).where(ProbeRun.purpose == "reevaluation")).all())
    assert reevaluation_runs, "the seed has a re-evaluation, so the test can tell the definitions apart"
    scored = [
        r.score for r in _results(engine, "knowledge-qa") if r.score is not None and r.run_id not in reevaluation_runs
    ][-200:]
    with Session(engine) as s:
        mean, lo, hi, n = recent_estimate(s, "knowledge-qa")
        now = current_score(s, "knowledge-qa")
    assert n == len(scored) == 200
    assert mean == pytest.approx(sum(scored) / n)
    assert lo < mean < hi
    assert (now.value, now.low, now.high, now.n) == (mean, lo, hi, n)


def test_run_series_matches_each_stored_run(seeded_db: tuple[Seeded, Engine, Plan]) -> None:
    _, engine, plan = seeded_db
    with Session(engine) as s:
        points = run_series(s, "dose-calc", runs=10, latency_slo_s=0.0)
        runs = {r.id: r for r in s.exec(select(ProbeRun).where(ProbeRun.task_id == "dose-calc")).all()}
    assert len(points) == 10 and [p.run_id for p in points] == sorted(runs)[-10:]
    for p in points:
        run = runs[p.run_id]
        assert (p.calls, p.n, p.errors) == (run.n_canaries, run.n_canaries - run.n_errors, run.n_errors)
        assert p.mean == pytest.approx(run.mean_score)
        assert p.ci_low is not None and p.ci_high is not None and p.ci_low <= p.mean <= p.ci_high  # type: ignore[operator]
        assert p.over_slo == p.calls  # every call takes longer than zero seconds


def test_cost_per_day_adds_up_in_utc_days_and_counts_calls_over_budget(seeded_db: tuple[Seeded, Engine, Plan]) -> None:
    seeded, engine, plan = seeded_db
    since = seeded.start - timedelta(days=1)
    rows = _results(engine, "knowledge-qa") + _results(engine, "dose-calc")
    expected: dict[tuple[object, str], list[ProbeResult]] = defaultdict(list)
    for r in rows:
        expected[(r.created_at.date(), r.task_id)].append(r)
    with Session(engine) as s:
        days = cost_by_day(s, plan, since)
        tasks = cost_by_task(plan, days, judge_cost_by_task(s, since))
    assert {(d.day, d.task) for d in days} == set(expected)
    for d in days:
        mine = expected[(d.day, d.task)]
        assert d.calls == len(mine)
        assert d.cost_usd == pytest.approx(sum(r.cost_usd or 0 for r in mine))
        assert d.over_budget == sum(1 for r in mine if (r.cost_usd or 0) > 0.002)
        timed = [r.latency_s for r in mine if r.latency_s is not None]
        assert d.latency_mean == pytest.approx(sum(timed) / len(timed))
    by_task = {t.task: t for t in tasks}
    latencies = [r.latency_s for r in rows if r.task_id == "dose-calc" and r.latency_s is not None]
    assert by_task["dose-calc"].latency_mean == pytest.approx(
        sum(latencies) / len(latencies)
    )  # exact, not a mean of means
    assert by_task["dose-calc"].latency_max == pytest.approx(max(latencies))
    assert by_task["dose-calc"].calls == len(_results(engine, "dose-calc"))
    assert by_task["knowledge-qa"].cost_usd == pytest.approx(
        sum(r.cost_usd or 0 for r in _results(engine, "knowledge-qa"))
    )
    assert by_task["knowledge-qa"].judge_cost_usd == pytest.approx(JUDGED * 3 * 0.0004)
    assert by_task["dose-calc"].judge_cost_usd == 0.0


def test_subgroup_slices_partition_the_recent_answers(seeded_db: tuple[Seeded, Engine, Plan]) -> None:
    _, engine, _ = seeded_db
    rows = [r for r in _results(engine, "knowledge-qa") if r.score is not None]
    with Session(engine) as s:
        slices = subgroup_slices(s, "knowledge-qa", ["age_band", "sex"], runs=1000)
    for tag in ("age_band", "sex"):
        mine = {sl.value: sl for sl in slices if sl.tag == tag}
        values = {str(r.tags[tag]) for r in rows}
        assert set(mine) == values
        for value, sl in mine.items():
            group = [r.score for r in rows if str(r.tags[tag]) == value]
            assert sl.n == len(group) and sl.mean == pytest.approx(sum(group) / len(group))  # type: ignore[arg-type]


def test_jury_agreement_and_judge_cost_per_day(seeded_db: tuple[Seeded, Engine, Plan]) -> None:
    seeded, engine, _ = seeded_db
    since = seeded.start - timedelta(days=1)
    judged = [r for r in _results(engine, "knowledge-qa") if r.jury_agreement is not None]
    with Session(engine) as s:
        days = agreement_series(s, since)
        cost = judge_cost_by_day(s, since)
        calls = s.exec(select(JudgeCall)).all()
    by_day: dict[object, list[float]] = defaultdict(list)
    for r in judged:
        by_day[r.created_at.date()].append(r.jury_agreement)  # type: ignore[arg-type]
    assert {d.day: d.items for d in days} == {k: len(v) for k, v in by_day.items()}
    for d in days:
        assert d.agreement == pytest.approx(sum(by_day[d.day]) / len(by_day[d.day]))
    assert sum(cost.values()) == pytest.approx(sum(c.cost_usd or 0 for c in calls))


def test_overview_model_changes_and_reevaluations(seeded_db: tuple[Seeded, Engine, Plan]) -> None:
    _, engine, plan = seeded_db
    with Session(engine) as s:
        rows = task_overview(s, plan)
        served = served_model_history(s)
        changes = change_history(s)
    assert [r.status for r in rows] == ["degraded", "degraded"]
    assert all(r.estimate is not None and r.baseline == pytest.approx(0.85) for r in rows)
    swaps = [m for m in served if m.is_change]
    assert {(m.task, m.previous_model, m.served_model) for m in swaps} == {
        (t, "medmon-simulator/clinical-v1", "medmon-simulator/clinical-v2") for t in ("knowledge-qa", "dose-calc")
    }
    reevaluated = [c for c in changes if c.reevaluation is not None]
    assert [(c.task, c.kind, c.source) for c in reevaluated] == [("knowledge-qa", "model", "detected")]
    r = reevaluated[0].reevaluation
    assert r is not None and r.passed is False and r.ci_low is not None and r.ci_high is not None
    assert r.ci_low <= (r.estimate or 0) <= r.ci_high < r.min_score  # type: ignore[operator]
