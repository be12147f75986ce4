"""A model that changes how it writes is told apart from a model that got worse.

The simulator answers the bundled multiple-choice pack over real HTTP on 127.0.0.1. Phases change
only its answer style (plain, then markdown / reasoning / JSON, then a quarter hedged between two
options) or only its accuracy; the streams must say which one changed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlmodel import Session, select

from medmon.alerts import Alert
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.webserver import RunningServer
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator

READABLE = {"markdown": 1.0, "reasoning": 1.0, "json": 1.0}
BASELINE_PROBES = 30  # 600 requests of 20 canaries


def _run(
    serve: Callable[[object], RunningServer],
    make_plan: Callable[..., Plan],
    db_url: str,
    phases: list[Phase],
    probes: int,
) -> tuple[list[tuple[int, str]], Session]:
    canaries = load_pack("clinical_knowledge_mcq").canaries
    sim = serve(create_simulator(canaries, phases, seed=5))
    plan = make_plan(
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        }
    )
    engine = make_engine(db_url)
    ctx = load_context(plan, plan.tasks[0])
    t = datetime(2026, 11, 1, tzinfo=UTC)
    rng = random.Random(2)
    fired: list[tuple[int, str]] = []
    for i in range(probes):
        outcome = run_task_probe(engine, plan, ctx, rng=rng, now=lambda t=t: t)
        fired += [(i, s.labels["metric"]) for s in outcome.signals if s.firing]
        t += timedelta(hours=1)
    return fired, Session(engine)


def test_a_style_change_raises_the_format_finding_and_no_accuracy_alert(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str
) -> None:
    readable_from, hedge_from = BASELINE_PROBES * 20, (BASELINE_PROBES + 15) * 20
    phases = [
        Phase(0, accuracy=0.85, label="plain"),
        Phase(readable_from, accuracy=0.85, styles=READABLE, label="markdown, reasoning, JSON"),
        Phase(hedge_from, accuracy=0.85, styles={**READABLE, "hedge": 1.0}, label="a quarter hedged"),
    ]
    fired, session = _run(serve, make_plan, db_url, phases, BASELINE_PROBES + 15 + 15)
    with session:
        before_hedge = {m for i, m in fired if i < BASELINE_PROBES + 15}
        # markdown, reasoning and JSON are read: neither accuracy nor format moved (reasoning makes
        # answers longer, which the verbosity stream reports as the cost matter it is)
        assert before_hedge <= {"verbosity"}, fired
        format_at = [i for i, metric in fired if metric == "format"]
        assert format_at and format_at[0] - (BASELINE_PROBES + 15) < 10, fired
        assert not [m for _, m in fired if m.startswith("score")], fired  # no accuracy alert
        alert = session.exec(select(Alert).where(Alert.rule == "format_drift")).one()
        assert "format drift" in alert.summary or "changed how it answers" in alert.summary
        late = session.exec(select(ProbeResult).where(ProbeResult.parsed == False)).all()  # noqa: E712
        assert late and all(r.score is None and r.correct is None for r in late)
        assert all("two options" in (r.parse_reason or "") for r in late)


def test_an_accuracy_drop_in_a_new_style_still_alerts_on_accuracy_only(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str
) -> None:
    phases = [
        Phase(0, accuracy=0.85, label="plain"),
        Phase(BASELINE_PROBES * 20, accuracy=0.55, styles=READABLE, label="worse, in markdown"),
    ]
    fired, session = _run(serve, make_plan, db_url, phases, BASELINE_PROBES + 15)
    session.close()
    score_at = [i for i, metric in fired if metric == "score"]
    assert score_at and score_at[0] - BASELINE_PROBES < 10, fired
    assert "format" not in {m for _, m in fired}
