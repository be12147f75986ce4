"""The whole flow over real HTTP on 127.0.0.1: simulator -> probes -> detectors -> signed webhook."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from medmon.alerts import Alert, AlertStatus, acknowledge_incident, deliver_due, incident_members
from medmon.alerts.receiver import create_receiver
from medmon.alerts.signing import signed_headers
from medmon.db import session_scope, utcnow
from medmon.monitor.cli.app import app
from medmon.monitor.models import ProbeSlot
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.routing import build_channels
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.demo import DemoScenario, run_demo
from medmon.monitor.storage import make_engine
from medmon.monitor.storage.migrate import head_revision
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator

SECRET = "test-webhook-secret"


class StepClock:
    """Simulated time: one hour per probe."""

    def __init__(self) -> None:
        self.t = datetime(2026, 11, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.t

    def tick(self) -> None:
        self.t += timedelta(hours=1)


def test_pipeline_alerts_only_after_degradation(
    serve: Callable, make_plan: Callable, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDMON_TEST_SECRET", SECRET)
    canaries = load_pack("clinical_knowledge_mcq").canaries
    sim_app = create_simulator(canaries, [Phase(0, accuracy=0.85), Phase(600, accuracy=0.55, label="drop")], seed=3)
    sim = serve(sim_app)
    receiver_app = create_receiver(SECRET)
    receiver = serve(receiver_app)
    plan = make_plan(
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        },
        alerts={"routes": [{"name": "hook", "url": f"{receiver.url}/alerts", "secret_env": "MEDMON_TEST_SECRET"}]},
    )
    engine = make_engine(db_url)
    ctx = load_context(plan, plan.tasks[0])
    channels = build_channels(plan)
    clock, rng = StepClock(), random.Random(1)

    for _ in range(30):  # 600 requests at baseline accuracy
        run_task_probe(engine, plan, ctx, rng=rng, now=clock)
        deliver_due(engine, channels, clock)
        clock.tick()
    with Session(engine) as s:
        # the local simulator's latency follows the test host's load: a real rise, not the model's
        alerts = s.exec(select(Alert.rule).where(Alert.rule != "latency_rise")).all()
    assert alerts == []

    fired_at = None
    for i in range(25):
        outcome = run_task_probe(engine, plan, ctx, rng=rng, now=clock)
        deliver_due(engine, channels, clock)
        clock.tick()
        if any(s.firing and s.labels["metric"] == "score" for s in outcome.signals):
            fired_at = i + 1
            break
    assert fired_at is not None and fired_at <= 10, "a 30-point drop must alert within 10 probes"

    state = receiver_app.state.receiver
    bodies = [a for r in state.received for a in r.body["alerts"]]  # each webhook lists its group's alerts
    assert any(b["status"] == "firing" and b["labels"]["metric"] == "score" for b in bodies)
    assert state.rejected == 0 and all(r.signature_valid for r in state.received)
    score_alert = next(b for b in bodies if b["labels"]["metric"] == "score" and b["rule"] == "drift_drop")
    assert score_alert["severity"] == "critical"  # risk tier high
    assert score_alert["owner"].startswith("Dr. Owner")
    assert score_alert["category"] == "Clinical Decision Support"
    assert score_alert["evidence"]["estimate"] < score_alert["evidence"]["null_mean"]

    with Session(engine) as s:
        runs = s.exec(select(func.count()).select_from(ProbeRun)).one()
        results = s.exec(select(func.count()).select_from(ProbeResult)).one()
        alert = s.exec(select(Alert).where(Alert.rule == "drift_drop")).one()
    assert runs == 30 + fired_at
    assert results == runs * 20  # every probe result is stored
    assert alert.status == AlertStatus.firing


def test_receiver_rejects_bad_signature_and_replays(serve: Callable) -> None:
    """Forged, stale and re-keyed copies are refused; a replay of an accepted message is dropped."""
    receiver_app = create_receiver(SECRET)
    receiver = serve(receiver_app)
    body = json.dumps({"event": "firing"}).encode()
    now = int(time.time())
    good = signed_headers("msg-1", now, body, SECRET)
    forged = signed_headers("msg-1", now, body, "wrong-secret")
    stale = signed_headers("msg-1", now - 3600, body, SECRET)
    rekeyed = good | {"webhook-id": "msg-2", "Idempotency-Key": "msg-2"}
    with httpx.Client() as client:
        post = lambda headers: client.post(f"{receiver.url}/alerts", content=body, headers=headers)  # noqa: E731
        assert post(good).status_code == 202
        assert post(forged).status_code == 401
        assert post(stale).status_code == 401
        assert post(rekeyed).status_code == 401
        assert post(good).json() == {"status": "duplicate"}
    state = receiver_app.state.receiver
    assert (state.rejected, state.duplicates, len(state.received)) == (3, 1, 1)


@pytest.mark.slow
def test_demo_runs_headless_and_alerts(tmp_path: Path) -> None:
    """The `medmon demo` scenario itself, on a faster clock: all three degradations are caught, and the
    cost rise in the simulated application's own traffic too (sent through the official OpenAI instrumentation)."""
    scenario = DemoScenario(seconds_per_probe=0.15, timeout_s=90)
    told: list[str] = []
    result = run_demo(tmp_path / "demo", scenario=scenario, say=told.append)
    metrics = {a["labels"]["metric"] for b in result.delivered for a in b["alerts"] if a["status"] == "firing"}
    # The console tells the story once: each phase, each incident when it opens, in sentences.
    opened = [line for line in told if " INCIDENT #" in line]
    assert len(opened) == len(result.incidents) == len({line.split(" opened")[0][9:] for line in opened})
    assert not [line for line in told if "signals agree" in line or "(estimate" in line]
    assert any(line.endswith("simulator phase -> silent model swap") for line in told)
    assert {"score", "cost", "served_model", "traffic_cost"} <= metrics
    assert result.rejected_signatures == 0
    assert result.probe_results >= scenario.swap_after
    engine = make_engine(f"sqlite:///{result.database}")
    with Session(engine) as s:
        first_degraded_run = s.exec(
            select(func.min(ProbeRun.started_at)).where(ProbeRun.id > scenario.drop_after // 20)
        ).one()
        early = s.exec(select(Alert).where(Alert.starts_at < first_degraded_run)).all()
        # The demo runs on the service's scheduler: each scheduled probe claimed its slot before it ran.
        slotted = set(s.exec(select(ProbeSlot.run_id)).all())
        done = set(
            s.exec(
                select(ProbeRun.id).where(ProbeRun.status == RunStatus.complete, ProbeRun.purpose != "reevaluation")
            ).all()
        )
    assert done and done <= slotted, sorted(done - slotted)
    assert [(a.summary, a.starts_at) for a in early] == []  # nothing fired while the model held its baseline
    # One problem, one incident: the accuracy drop's signals (paired, unpaired, below minimum, every
    # subgroup falling with the whole) are the evidence of one accuracy incident, not ten alerts.
    still_open = [i for i in result.incidents if i.status == "open"]
    assert len(still_open) <= 4, [i.line() for i in result.incidents]
    titles = {i.title for i in still_open}
    assert titles >= {"knowledge-qa: accuracy", "knowledge-qa: model change"}, titles
    # The cost rise and the longer answers behind it are one problem: one incident naming both causes.
    assert [t for t in titles if "cost" in t], [i.line() for i in result.incidents]
    accuracy = next(i for i in still_open if i.title == "knowledge-qa: accuracy")
    assert {"drift_drop", "below_minimum", "subgroup_drop"} <= set(accuracy.signals)
    assert "subgroup_gap" not in {r for i in result.incidents for r in i.signals}  # every subgroup fell alike
    with session_scope(engine) as s:
        acknowledge_incident(s, accuracy.id, "dr.owner", "suspending the use case pending review", utcnow())
    with Session(engine) as s:
        members = incident_members(s, accuracy.id)
        assert len(members) == len(accuracy.signals) >= 3
        assert {a.status for a in members} == {AlertStatus.acknowledged}
    # The demo's database knows its schema revision (stamped when the demo created it).
    current = CliRunner().invoke(app, ["db", "current", "--url", f"sqlite:///{result.database}"])
    assert current.exit_code == 0, current.output
    assert f"current: {head_revision()}  newest: {head_revision()}" in current.stdout
