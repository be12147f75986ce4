"""The plan's reader model over real HTTP: the simulator serves both the clinical model and the reader.

A reply the rules cannot read ("I would go with the option listed second.") is read by the reader
model and scored, the stored result saying that path decided; a reader that starts reading every
reply wrongly drops its agreement with the rules and raises the ``reader_agreement`` floor alert;
a plan that stores no text sends the reader nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlmodel import Session, select

from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.webserver import RunningServer
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.probes.simkit import sim_state

READER = "medmon-simulator/reader"


def _setup(
    serve: Callable[[object], RunningServer],
    make_plan: Callable[..., Plan],
    phases: list[Phase],
    *,
    check_share: float = 0.0,
    store_text: bool = True,
) -> tuple[Plan, Any, Any]:
    app = create_simulator(load_pack("clinical_knowledge_mcq").canaries, phases, seed=3)
    sim = serve(app)
    endpoint = {"base_url": f"{sim.url}/v1", "api_key_env": "X", "timeout_s": 5, "max_retries": 0}
    plan = make_plan(
        deployment={**endpoint, "model": "medmon-simulator/clinical-v1"},
        reader_model={**endpoint, "model": READER, "enabled": True, "check_share": check_share, "agreement_floor": 0.9},
        privacy={"store_text": store_text},
        tasks=[
            {
                "id": "knowledge-qa",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1h",
                "sample_size": 20,
                "thresholds": {"min_score": 0.7, "latency_slo_s": 5},
            }
        ],
    )
    return plan, app, load_context(plan, plan.tasks[0])


def test_a_reply_the_rules_cannot_read_is_read_by_the_reader_model_and_scored(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str
) -> None:
    plan, app, ctx = _setup(serve, make_plan, [Phase(0, accuracy=1.0, styles={"ordinal": 1.0})])
    engine = make_engine(db_url)
    run_task_probe(engine, plan, ctx, rng=random.Random(1), now=lambda: datetime(2026, 11, 1, tzinfo=UTC))
    with Session(engine) as session:
        results = session.exec(select(ProbeResult)).all()
    assert len(results) == 20 and all("listed" in (r.answer or "") for r in results)
    assert all(r.read_path == "reader model" for r in results), [(r.answer, r.parse_reason) for r in results]
    assert all(r.parsed and r.score == 1.0 and r.reader_extracted for r in results)
    assert sim_state(app).by_model[READER] == 20


def test_a_reader_that_starts_reading_wrongly_raises_the_agreement_floor_alert(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str
) -> None:
    plan, app, ctx = _setup(serve, make_plan, [Phase(0, accuracy=0.85)], check_share=1.0)
    engine = make_engine(db_url)
    t, rng = datetime(2026, 11, 1, tzinfo=UTC), random.Random(2)
    fired: list[tuple[int, str]] = []
    for i in range(20):
        sim_state(app).reader_wrong = i >= 5
        outcome = run_task_probe(engine, plan, ctx, rng=rng, now=lambda t=t: t)
        fired += [(i, s.labels["metric"]) for s in outcome.signals if s.firing]
        t += timedelta(hours=1)
    assert not [f for f in fired if f[0] < 5], fired  # an agreeing reader raises nothing
    at = [i for i, m in fired if m == "reader_agreement"]
    assert at and at[0] < 12, fired
    assert not [m for _, m in fired if m.startswith("score")], fired  # the reader never decides a rule-read score
    with Session(engine) as session:
        results = session.exec(select(ProbeResult)).all()
    assert all(r.read_path == "rules" for r in results)
    early = [r.reader_agrees for r in results if r.run_id <= 5]
    assert early and all(early)


def test_a_plan_that_stores_no_text_sends_the_reader_nothing(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str
) -> None:
    plan, app, ctx = _setup(
        serve, make_plan, [Phase(0, accuracy=1.0, styles={"ordinal": 1.0})], check_share=1.0, store_text=False
    )
    engine = make_engine(db_url)
    run_task_probe(engine, plan, ctx, rng=random.Random(1), now=lambda: datetime(2026, 11, 1, tzinfo=UTC))
    assert sim_state(app).by_model[READER] == 0
    with Session(engine) as session:
        results = session.exec(select(ProbeResult)).all()
    assert len(results) == 20 and all(r.read_path == "none" and r.parsed is False for r in results)
    assert all(r.reader_reason and "not sent" in r.reader_reason for r in results)
