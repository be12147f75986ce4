"""Correlation across tasks through the real pipeline: a simulator on 127.0.0.1, two tasks probed every
simulated hour, detectors, incidents, the outbox and a signed webhook receiver.

A silent model swap (the served model's name changes, nobody declared it) on a deployment with two
tasks, after which accuracy drops on both and each answer costs more: on-call is paged once, for
the model change, and everything that followed is a child of that one incident. Without a change,
two tasks that drop in the same hour are two problems and two pages.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from medmon.alerts import Alert, Incident, Notification, deliver_due, flush, incident_members
from medmon.alerts.correlation import incident_children
from medmon.alerts.receiver import create_receiver
from medmon.db import session_scope
from medmon.monitor.governance.current import live_policy
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.routing import build_channels
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.storage import make_engine
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator

SECRET = "test-webhook-secret"
PACKS = {"knowledge-qa": ("clinical_knowledge_mcq", "med_qa"), "research-qa": ("research_yes_no_maybe", "pubmed_qa")}
BASELINE_HOURS = 30  # 600 answers per task at the baseline accuracy
PER_HOUR = 2 * 20  # two tasks, twenty canaries each


def _plan(make_plan: Callable[..., Plan], sim_url: str, receiver_url: str) -> Plan:
    tasks = [
        {
            "id": task,
            "benchmark": benchmark,
            "canaries": {"pack": pack},
            "schedule": "1h",
            "sample_size": 20,
            "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 30},
        }
        for task, (pack, benchmark) in PACKS.items()
    ]
    return make_plan(
        deployment={
            "base_url": f"{sim_url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "price": {"input_per_mtok": 5, "output_per_mtok": 15},
            "timeout_s": 10,
            "max_retries": 0,
        },
        tasks=tasks,
        # The shared test host's load is no latency problem of the model's; river's distribution
        # checks are information that never pages.
        detection={"latency_min_rise_s": 10, "distribution_checks": False},
        alerts={
            "routes": [{"name": "hook", "url": f"{receiver_url}/alerts", "secret_env": "MEDMON_TEST_SECRET"}],
            "repeat_interval": "48h",
        },
    )


def _at(moment: datetime) -> Callable[[], datetime]:
    """A clock stopped at ``moment``."""
    return lambda: moment


def _run(
    make_plan: Callable[..., Plan],
    serve: Callable,
    db_url: str,
    monkeypatch: pytest.MonkeyPatch,
    later: Phase,
    hours_after: int,
) -> tuple[Engine, list[dict[str, Any]], list[Incident], dict[int, list[Incident]]]:
    """Probe both tasks hourly: ``BASELINE_HOURS`` at baseline, then ``hours_after`` in ``later``."""
    monkeypatch.setenv("MEDMON_TEST_SECRET", SECRET)
    canaries = [c for pack, _ in PACKS.values() for c in load_pack(pack).canaries]
    sim = serve(create_simulator(canaries, [Phase(0, accuracy=0.9), later], seed=5))
    receiver_app = create_receiver(SECRET)
    receiver = serve(receiver_app)
    plan = _plan(make_plan, sim.url, receiver.url)
    engine = make_engine(db_url)
    channels = build_channels(plan)
    t = datetime(2026, 11, 1, tzinfo=UTC)
    rng = random.Random(7)
    contexts = [load_context(plan, task) for task in plan.tasks]
    for _ in range(BASELINE_HOURS + hours_after):
        for i, ctx in enumerate(contexts):
            stamp = t + timedelta(minutes=20 * i)  # the second task is probed twenty minutes after the first
            run_task_probe(engine, plan, ctx, rng=rng, now=_at(stamp))
            deliver_due(engine, channels, _at(stamp))
        pass_at = t + timedelta(minutes=50)  # the service's periodic pass: news held back by group_interval
        with session_scope(engine) as s:
            flush(s, live_policy(plan), pass_at)
        deliver_due(engine, channels, _at(pass_at))
        t += timedelta(hours=1)
    received = [r.body for r in receiver_app.state.receiver.received]
    with Session(engine) as s:
        incidents = list(s.exec(select(Incident).order_by(Incident.id)).all())
        children = {i.id or 0: incident_children(s, i.id or 0) for i in incidents}
        undelivered = s.exec(select(Notification).where(Notification.status != "delivered")).all()
    assert undelivered == [], [(n.event, n.last_error) for n in undelivered]
    return engine, received, incidents, children


def _pages(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What pages on-call: the first notification of a group (an update of it lands on the same page)."""
    return [b for b in received if b["reason"] in ("new_group", "escalated")]


def test_a_silent_swap_and_what_followed_on_two_tasks_page_once(
    make_plan: Callable[..., Plan], serve: Callable, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    swap = Phase(
        BASELINE_HOURS * PER_HOUR,
        accuracy=0.55,
        extra_completion_tokens=400,
        model="medmon-simulator/clinical-v2",
        fingerprint="fp_sim_0002",
        label="silent model swap",
    )
    engine, received, incidents, children = _run(make_plan, serve, db_url, monkeypatch, swap, hours_after=14)

    parents = [i for i in incidents if i.parent_id is None]
    assert [(p.cause, p.task_id) for p in parents] == [("model_change", "knowledge-qa")], [
        (i.id, i.task_id, i.cause, i.parent_id) for i in incidents
    ]
    parent = parents[0]
    kids = children[parent.id or 0]
    assert {(c.task_id, c.cause) for c in kids} >= {
        ("research-qa", "model_change"),  # the same swap seen from the second task
        ("knowledge-qa", "accuracy"),
        ("research-qa", "accuracy"),
    }
    # Every signal of the swap's aftermath is in the family: the drops and the cost rise on both tasks.
    seen = {(a.task_id, a.rule) for i in [parent, *kids] for a in _members(engine, i)}
    assert {(t, r) for t in PACKS for r in ("model_change", "drift_drop", "cost_over_budget")} <= seen, seen

    pages = _pages(received)
    assert len(pages) == 1, [(b["reason"], b["group_key"]) for b in received]
    assert pages[0]["incident"]["id"] == parent.id and pages[0]["incident"]["cause"] == "model_change"
    # Every later notification is an update of that one page: the parent's incident, its children listed.
    assert {b["incident"]["id"] for b in received} == {parent.id}
    last = received[-1]["incident"]
    assert {c["id"] for c in last["children"]} == {c.id for c in kids}
    assert last["parent_id"] is None
    told = {a["incident_id"] for b in received for a in b["alerts"]}
    assert {c.id for c in kids if c.cause == "accuracy"} <= told  # the drops reached on-call, as updates


def _members(engine: Engine, incident: Incident) -> list[Alert]:
    with Session(engine) as s:
        return incident_members(s, incident.id or 0)


def test_two_tasks_dropping_in_one_hour_without_a_change_are_two_pages(
    make_plan: Callable[..., Plan], serve: Callable, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    drop = Phase(BASELINE_HOURS * PER_HOUR, accuracy=0.3, label="accuracy drop")  # same model, same name
    _engine, received, incidents, _children = _run(make_plan, serve, db_url, monkeypatch, drop, hours_after=10)

    accuracy = [i for i in incidents if i.cause == "accuracy"]
    assert {i.task_id for i in accuracy} == set(PACKS)
    assert all(i.parent_id is None for i in incidents)  # no model change: nothing to follow
    opened = sorted(i.opened_at for i in accuracy)
    assert opened[-1] - opened[0] <= timedelta(hours=1)  # they dropped in the same hour
    pages = _pages(received)
    assert sorted(b["incident"]["task"] for b in pages) == sorted(PACKS)  # two problems, two pages
