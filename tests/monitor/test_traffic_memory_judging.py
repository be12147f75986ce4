"""With `store_text: false`, real answers are judged from memory at ingest: only verdicts are stored,
never the text; judges get it redacted, only the in-network ones; the daily cap holds across replicas."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import httpx
from sqlalchemy import text
from sqlmodel import Session, SQLModel, col, select

from medmon.db import utcnow
from medmon.monitor.models import DetectorState, TrafficJudgement, TrafficSpan
from medmon.monitor.plan.model import Plan
from medmon.monitor.service.receiver import create_receiver
from medmon.monitor.traffic.judging import PENDING, judging_job, sampled
from medmon.monitor.traffic.spans import PROTOBUF
from medmon.probes.simulator import create_simulator
from tests.monitor.test_traffic_judging import PHI_ANSWER, _plan
from tests.monitor.traffic_helpers import export_body, genai_attributes, make_spans
from tests.probes.simkit import JUDGE_MODELS, sim_state

PROMPT = "Summarize the discharge plan."


def _no_text_plan(db_url: str, sim_url: str, **judging) -> Plan:  # type: ignore[no-untyped-def]
    data = _plan(db_url, sim_url, **judging).model_dump(mode="json", exclude_none=True)
    data["privacy"]["store_text"] = False
    return Plan.model_validate(data)


def _send(url: str, n: int, offset: int = 0) -> list[str]:
    """``n`` spans carrying the exchange as the current GenAI convention writes it; their span ids."""
    content = {
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": PROMPT}]}]),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": PHI_ANSWER}]}]
        ),
    }
    spans = make_spans([genai_attributes(**content, **{"app.call": offset + i}) for i in range(n)])
    r = httpx.post(f"{url}/v1/traces", content=export_body(spans), headers={"content-type": PROTOBUF}, timeout=30)
    assert r.status_code == 200, r.text
    return [f"{s.context.span_id:016x}" for s in spans]


def _settled(engine, expected: int, timeout: float = 60.0) -> list[TrafficJudgement]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        with Session(engine) as s:
            rows = list(s.exec(select(TrafficJudgement)).all())
        if (len(rows) >= expected and all(r.error != PENDING for r in rows)) or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def _database_text(engine) -> str:  # type: ignore[no-untyped-def]
    """Every row of every table, as text: where the answer would be if anything stored it."""
    out = []
    with engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            out += [str(tuple(row)) for row in conn.execute(text(f'SELECT * FROM "{table.name}"'))]
    return "\n".join(out)


def test_answers_are_judged_from_memory_and_only_their_scores_are_stored(engine, db_url, serve) -> None:
    sim = serve(create_simulator([]))
    plan = _no_text_plan(db_url, sim.url, daily_cap=1000)
    receiver = serve(create_receiver(engine, plan, token=None))
    ids = _send(receiver.url, 60)
    expected = sum(sampled(i, 0.5) for i in ids)
    assert 15 < expected < 45
    rows = _settled(engine, expected)
    assert len(rows) == expected and all(r.error is None for r in rows)
    assert all(r.score is not None and 0 <= r.score <= 1 and r.agreement is not None for r in rows)
    assert {tuple(sorted(r.scores)) for r in rows} == {("judge-a", "judge-b")}  # judge-c is not phi_allowed
    with Session(engine) as s:
        spans = {r.id: r for r in s.exec(select(TrafficSpan)).all()}
    assert {spans[r.span_id].span_id for r in rows} == {i for i in ids if sampled(i, 0.5)}
    assert all(sp.prompt is None and sp.completion is None and sp.has_content for sp in spans.values())
    stored = _database_text(engine)
    assert "Jane Roe" not in stored and "00987654" not in stored and "amoxicillin" not in stored
    assert PROMPT not in stored
    state = sim_state(sim.server.config.app)
    assert state.by_model[JUDGE_MODELS[2]] == 0
    sent = json.dumps(list(state.recent))
    assert "Jane Roe" not in sent and "00987654" not in sent and "Patient: [NAME], MRN [MRN]" in sent
    # The leader feeds the verdicts to the task's streams, once.
    judging_job(engine, plan, utcnow)
    judging_job(engine, plan, utcnow)
    with Session(engine) as s:
        agreement = s.exec(select(DetectorState).where(col(DetectorState.metric) == "traffic_jury_agreement")).one()
        assert agreement.n == expected
        assert all(r.streamed for r in s.exec(select(TrafficJudgement)).all())


def test_the_daily_cap_holds_across_two_receivers(engine, db_url, serve) -> None:
    sim = serve(create_simulator([]))
    plan = _no_text_plan(db_url, sim.url, daily_cap=12)
    one = serve(create_receiver(engine, plan, token=None))
    two = serve(create_receiver(engine, plan, token=None))
    ids = _send(one.url, 40) + _send(two.url, 40, offset=40)
    assert sum(sampled(i, 0.5) for i in ids) > 24
    rows = _settled(engine, 12)
    time.sleep(2)  # anything over the cap would have been judged by now
    with Session(engine) as s:
        rows = list(s.exec(select(TrafficJudgement)).all())
    assert len(rows) == 12 and all(r.score is not None for r in rows)
    assert len({r.span_id for r in rows}) == 12
    assert datetime.now(UTC).date() == rows[0].judged_at.date()
