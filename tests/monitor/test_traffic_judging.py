"""Real answers judged: sampled, redacted, sent only to in-network judges, capped per day, turned into streams."""

from __future__ import annotations

import json
import random
from datetime import timedelta

from sqlmodel import Session, col, select

from medmon.db import session_scope
from medmon.monitor.models import DetectorState, TrafficJudgement, TrafficSpan
from medmon.monitor.plan.model import Plan
from medmon.monitor.traffic.ingest import Ingestor, store_calls
from medmon.monitor.traffic.judging import judge_traffic, sampled
from medmon.monitor.traffic.spans import Decoded, Limits
from medmon.monitor.traffic.streams import traffic_pass
from medmon.probes.redaction import redact
from medmon.probes.simulator import create_simulator
from tests.monitor.test_traffic_streams import T0, _calls
from tests.monitor.traffic_helpers import traffic_plan
from tests.probes.simkit import JUDGE_MODELS, sim_state

PHI_ANSWER = "Patient: Jane Roe, MRN 00987654, call 555-987-6543. Continue amoxicillin for 7 days."


def _plan(db_url: str, sim_url: str, **judging) -> Plan:  # type: ignore[no-untyped-def]
    base = traffic_plan(db_url, reference_window="1h", judging={"sample_rate": 0.5, "daily_cap": 40, **judging})
    data = base.model_dump(mode="json", exclude_none=True)
    data["jury"] = {
        "judges": [
            {
                "name": f"judge-{m[-1]}",
                "base_url": f"{sim_url}/v1",
                "model": m,
                "api_key_env": "MEDMON_TEST_KEY",
                "max_retries": 0,
                "phi_allowed": m[-1] != "c",
            }
            for m in JUDGE_MODELS
        ]
    }
    data["tasks"][0]["thresholds"]["min_jury_agreement"] = 0.6
    return Plan.model_validate(data)


def test_a_sample_of_real_answers_is_judged_redacted_by_in_network_judges_only(engine, db_url, serve) -> None:
    sim = serve(create_simulator([]))
    plan = _plan(db_url, sim.url)
    now = T0 + timedelta(hours=2)
    calls = _calls(random.Random(6), 300, T0, per_hour=200)
    for c in calls:
        c.prompt, c.completion = "Summarize the discharge plan.", PHI_ANSWER
    store_calls(engine, Ingestor(plan, redact, Limits(max_age=timedelta(days=3650))), Decoded(calls), now)
    with session_scope(engine) as s:
        traffic_pass(s, plan, now)
    first = judge_traffic(engine, plan, now)
    second = judge_traffic(engine, plan, now)
    third = judge_traffic(engine, plan, now)
    assert len(first) + len(second) + len(third) == 40  # the daily cap
    assert third == [] or len(first) + len(second) == 40
    with Session(engine) as s:
        judged = s.exec(select(TrafficJudgement)).all()
        spans = {r.id: r for r in s.exec(select(TrafficSpan)).all()}
        states = {
            d.metric: d
            for d in s.exec(select(DetectorState).where(col(DetectorState.metric).startswith("traffic_j"))).all()
        }
    assert all(sampled(spans[j.span_id].span_id, 0.5) for j in judged)
    assert {tuple(sorted(j.scores)) for j in judged} == {("judge-a", "judge-b")}  # judge-c is not phi_allowed
    assert all(set(v) == {"accuracy", "completeness", "clarity", "safety"} for j in judged for v in j.scores.values())
    assert all(j.score is not None and 0 <= j.score <= 1 and j.agreement is not None for j in judged)
    state = sim_state(sim.server.config.app)
    assert state.by_model[JUDGE_MODELS[2]] == 0
    sent = json.dumps(list(state.recent))
    assert "Jane Roe" not in sent and "00987654" not in sent and "Patient: [NAME], MRN [MRN]" in sent
    assert "<gold" not in sent.lower()  # reference-free: no gold answer in the judge prompt
    assert states["traffic_jury_agreement"].n == 40


def test_no_phi_allowed_judge_means_nothing_is_sent(engine, db_url, serve) -> None:
    sim = serve(create_simulator([]))
    data = _plan(db_url, sim.url).model_dump(mode="json", exclude_none=True)
    for j in data["jury"]["judges"]:
        j["phi_allowed"] = False
    plan = Plan.model_validate(data)
    calls = _calls(random.Random(1), 20, T0)
    for c in calls:
        c.prompt, c.completion = "q", "a"
    store_calls(engine, Ingestor.from_plan(plan), Decoded(calls), T0 + timedelta(minutes=30))
    assert judge_traffic(engine, plan, T0 + timedelta(hours=1)) == []
    assert sum(sim_state(sim.server.config.app).by_model.values()) == 0


def test_check_says_when_real_answers_cannot_be_judged(db_url) -> None:
    from medmon.monitor.governance.checks import plan_notes

    data = _plan(db_url, "http://127.0.0.1:9").model_dump(mode="json", exclude_none=True)
    assert not [n for n in plan_notes(Plan.model_validate(data)) if n.startswith("traffic")]
    for j in data["jury"]["judges"]:
        j["phi_allowed"] = False
    data["privacy"] = {"store_text": False}
    notes = plan_notes(Plan.model_validate(data))
    assert any("no judge is marked phi_allowed" in n for n in notes)
    assert any("privacy.store_text is false" in n for n in notes)
