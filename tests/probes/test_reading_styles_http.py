"""A model that changes how it writes (language, units, no letters) is not mistaken for a worse one.

The simulator answers two tasks over real HTTP on 127.0.0.1: the bundled multiple-choice pack, and
the bundled calculation pack written as a user's canary file whose canaries carry their unit (as
``medmon.baselines.canary`` lets them). After a plain baseline, the model answers in other
languages ("Réponse : B", "答案：B"), names options by their text without the letter, and states
results in another unit ("1.155 mL/s" for 69.3 mL/min): at the same accuracy, no score alert may
fire. The same styles with the accuracy dropped must raise the score alert.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, select

from medmon.baselines.canary import Canary, write_canaries
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.webserver import RunningServer
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator

pytestmark = pytest.mark.slow

BASELINE_PROBES = 30
NEW_STYLES = {"language": 1.0, "letterless": 1.0, "units": 1.0}
_UNIT = re.compile(r"\bin (mL/min|mmHg|kg/m²|mEq/L|mg/dL|mmol/L|ms)\b")


def _with_units(canaries: list[Canary]) -> list[Canary]:
    """The calculation canaries, each carrying the unit its question asks for ("" for a score)."""
    out = []
    for c in canaries:
        m = _UNIT.search(c.prompt)
        out.append(replace(c, unit=m.group(1) if m else ""))
    return out


def _run(
    serve: Callable[[object], RunningServer],
    make_plan: Callable[..., Plan],
    db_url: str,
    tmp_path: Path,
    phases: list[Phase],
    probes: int,
) -> tuple[list[tuple[int, str, str]], Engine]:
    mcq = load_pack("clinical_knowledge_mcq").canaries
    calc = _with_units(load_pack("medical_calculations").canaries)
    assert {c.unit for c in calc} >= {"mL/min", ""}
    calc_file = tmp_path / "calculations.jsonl"
    write_canaries(calc_file, calc)
    sim = serve(create_simulator([*mcq, *calc], phases, seed=5))
    task = {"schedule": "1h", "sample_size": 20, "thresholds": {"min_score": 0.7, "latency_slo_s": 5}}
    plan = make_plan(
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        },
        tasks=[
            {"id": "knowledge-qa", "benchmark": "med_qa", "canaries": {"pack": "clinical_knowledge_mcq"}, **task},
            {
                "id": "calculations",
                "benchmark": "medcalc_bench",
                "canaries": {"path": str(calc_file)},
                "baseline": {"value": 0.85, "n": 500},
                **task,
            },
        ],
    )
    engine = make_engine(db_url)
    contexts = [load_context(plan, t) for t in plan.tasks]
    t = datetime(2026, 11, 1, tzinfo=UTC)
    rng = random.Random(2)
    fired: list[tuple[int, str, str]] = []
    for i in range(probes):
        for ctx in contexts:
            outcome = run_task_probe(engine, plan, ctx, rng=rng, now=lambda t=t: t)
            fired += [(i, ctx.task.id, s.labels["metric"]) for s in outcome.signals if s.firing]
        t += timedelta(hours=1)
    return fired, engine


def test_answers_in_other_languages_units_and_without_letters_raise_no_score_alert(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str, tmp_path: Path
) -> None:
    # 40 requests a probe (two tasks of 20): the new styles start after the baseline probes
    phases = [
        Phase(0, accuracy=0.85, label="plain"),
        Phase(BASELINE_PROBES * 40, accuracy=0.85, styles=NEW_STYLES, label="other languages, units, no letters"),
    ]
    fired, engine = _run(serve, make_plan, db_url, tmp_path, phases, BASELINE_PROBES + 20)
    assert not [f for f in fired if f[2].startswith("score")], fired  # no accuracy alert on either task
    assert {m for _, _, m in fired} <= {"format", "verbosity"}, fired  # at most a format notice
    with Session(engine) as session:
        results = session.exec(select(ProbeResult)).all()
    restyled = [r for r in results if r.answer and ("mL/s" in r.answer or "答案" in r.answer or "Réponse" in r.answer)]
    letterless = [r for r in results if r.task_id == "knowledge-qa" and r.answer and len(r.answer) > 2]
    assert len(restyled) > 50 and len(letterless) > 50
    # each was read: a right answer scored right, never unparsed
    assert all(r.parsed for r in restyled + letterless), [r.answer for r in restyled + letterless if not r.parsed]


def test_the_same_styles_answered_worse_raise_the_score_alert(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str, tmp_path: Path
) -> None:
    phases = [
        Phase(0, accuracy=0.85, label="plain"),
        Phase(BASELINE_PROBES * 40, accuracy=0.45, styles=NEW_STYLES, label="worse, in the new styles"),
    ]
    fired, _ = _run(serve, make_plan, db_url, tmp_path, phases, BASELINE_PROBES + 20)
    for task in ("knowledge-qa", "calculations"):
        score_at = [i for i, t, m in fired if t == task and m == "score"]
        assert score_at and score_at[0] >= BASELINE_PROBES and score_at[0] - BASELINE_PROBES < 15, (task, fired)


def test_replies_cut_off_by_the_token_limit_are_stored_unparsed_not_wrong(
    serve: Callable[[object], RunningServer], make_plan: Callable[..., Plan], db_url: str, tmp_path: Path
) -> None:
    # every reply cut mid-reasoning, after naming the right answer but before committing to it
    phases = [Phase(0, accuracy=1.0, styles={"cut": 1.0}, label="cut off")]
    _, engine = _run(serve, make_plan, db_url, tmp_path, phases, 2)
    with Session(engine) as session:
        results = session.exec(select(ProbeResult)).all()
    assert len(results) == 80 and all(r.finish_reason == "length" for r in results)
    assert all(r.parsed is False and r.score is None and r.correct is None for r in results)
    numbers = [r for r in results if r.task_id == "calculations"]
    # the rules did find the right number: only the cut makes it no answer
    assert numbers and all("token limit" in (r.parse_reason or "") for r in numbers), {r.parse_reason for r in numbers}
