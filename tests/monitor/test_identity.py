"""Served identities as a pool: alternation is no change, a newcomer with a real share is one, a leaver too."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.monitor.detection.identity import IdentityChange, observe_identities
from medmon.monitor.governance.changes import record_change
from medmon.monitor.governance.reevaluation import reevaluation_due
from medmon.monitor.models import Reevaluation, ReevaluationStatus
from medmon.monitor.plan.model import Endpoint, parse_plan
from medmon.probes.models import ProbeRecord
from medmon.probes.redaction import TextPolicy
from medmon.probes.runs import finish_run, start_run
from tests.conftest import plan_dict

T0 = datetime(2026, 11, 5, tzinfo=UTC)


class Pool:
    """Runs of a task whose answers come from the identities given, stored and observed in turn."""

    def __init__(self, engine: Engine, endpoint: Endpoint) -> None:
        self.engine, self.endpoint, self.runs = engine, endpoint, 0

    def run(self, identities: list[tuple[str, str | None]]) -> IdentityChange | None:
        self.runs += 1
        now = T0 + timedelta(hours=self.runs)
        with Session(self.engine) as session:
            run = start_run(session, "t", started_at=now)
            results = [
                ProbeRecord(task_id="t", canary_id=f"c{i}", served_model=m, system_fingerprint=f, score=1.0)
                for i, (m, f) in enumerate(identities)
            ]
            finish_run(session, run, results, now, policy=TextPolicy())  # the plan's default: builtin redactor
            assert run.id is not None
            report = observe_identities(session, self.endpoint, "t", results, run.id, now)
            session.commit()
        return report.change


def _mixed(rng: random.Random, choices: list[tuple[str, str | None]], n: int = 20) -> list[tuple[str, str | None]]:
    return [rng.choice(choices) for _ in range(n)]


def _endpoint(**extra: Any) -> Endpoint:
    return Endpoint(base_url="http://127.0.0.1:9/v1", model="clinical", **extra)


def test_two_backends_alternating_over_fifty_runs_are_no_change(engine: Engine) -> None:
    pool, rng = Pool(engine, _endpoint()), random.Random(1)
    changes = [pool.run(_mixed(rng, [("a", None), ("b", None)])) for _ in range(50)]
    assert changes == [None] * 50


def test_rotating_fingerprints_are_recorded_not_a_change_unless_the_plan_alerts_on_them(
    engine: Engine, new_db_url: Any
) -> None:
    from medmon.monitor.storage import make_engine

    rng = random.Random(2)
    fps = [("gpt-4o-2024-08-06", f"fp_{i}") for i in range(3)]
    recorded = Pool(engine, _endpoint())
    assert [recorded.run(_mixed(rng, fps)) for _ in range(20)] == [None] * 20
    alerting = Pool(make_engine(new_db_url()), _endpoint(fingerprints="alert"))
    assert [alerting.run(_mixed(rng, fps)) for _ in range(20)] == [None] * 20  # the go-live pool of three
    change = alerting.run(_mixed(rng, [("gpt-4o-2024-08-06", "fp_new")]))
    assert change == IdentityChange(change.old, ("gpt-4o-2024-08-06", "fp_new"), "joined") and change.old in fps


def test_a_replaced_backend_is_one_change_and_its_departure_is_silent(engine: Engine) -> None:
    pool, rng = Pool(engine, _endpoint(identity_window_runs=5)), random.Random(3)
    assert [pool.run(_mixed(rng, [("a", None), ("b", None)])) for _ in range(10)] == [None] * 10
    after = [pool.run(_mixed(rng, [("a", None), ("c", None)])) for _ in range(15)]
    assert [c.new for c in after if c is not None] == [("c", None)]


def test_a_stray_answer_is_watched_a_backend_that_leaves_is_a_change(engine: Engine) -> None:
    pool = Pool(engine, _endpoint(identity_window_runs=4))
    assert pool.run([("a", None)] * 10 + [("b", None)] * 10) is None
    assert pool.run([("a", None)] * 19 + [("fallback", None)]) is None  # 5% of one run: not a real share
    left = [pool.run([("a", None)] * 20) for _ in range(4)]
    assert [(c.old, c.how) for c in left if c is not None] == [(("b", None), "left")]  # once, when the window is clear


def test_expected_backends_join_silently(engine: Engine) -> None:
    pool = Pool(engine, _endpoint(expected_models=["a", "b", "c"]))
    assert pool.run([("a", None)] * 20) is None
    assert pool.run([("a", None)] * 10 + [("c", None)] * 10) is None  # listed in the plan: no change
    change = pool.run([("a", None)] * 10 + [("d", None)] * 10)
    assert change is not None and change.new == ("d", None)


def test_reevaluations_wait_for_the_one_in_flight_and_the_cooldown(engine: Engine) -> None:
    data = plan_dict(governance={"controls": {"reevaluation": {"cooldown": "2h"}}})
    plan = parse_plan(yaml.safe_dump(data))
    task = plan.tasks[0].id
    with Session(engine) as s:
        assert not reevaluation_due(s, plan, task, T0)  # nothing pending
        record_change(s, task_ids=[task], kind="model", source="declared", actor="a", note="n", now=T0)
        assert not reevaluation_due(s, plan, task, T0)  # a declared change waits for a person
        record_change(s, task_ids=[task], kind="model", source="detected", actor="medmon", note="n", now=T0)
        assert reevaluation_due(s, plan, task, T0)
        s.add(Reevaluation(task_id=task, started_at=T0, status=ReevaluationStatus.running))
        s.flush()
        assert not reevaluation_due(s, plan, task, T0 + timedelta(hours=3))  # one in flight
        last = s.exec(select(Reevaluation)).one()
        last.status = ReevaluationStatus.complete
        s.add(last)
        s.flush()
        assert not reevaluation_due(s, plan, task, T0 + timedelta(hours=1))  # cooling down
        assert reevaluation_due(s, plan, task, T0 + timedelta(hours=2))
