"""Judge drift on a frozen set: clinician-rated answers frozen as judge canaries, re-judged over HTTP by the
judge-canary job; a judge that drifts on these unchanged answers raises ``judge_drift``, honest judges nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from medmon.db import session_scope
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.cli.app import app as cli
from medmon.monitor.governance.frozen_set import freeze_judge_set
from medmon.monitor.governance.review import record_review
from medmon.monitor.models import ReviewItem
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.probes.judge_canaries import load_judge_canaries
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import JudgeBehaviour, create_simulator
from tests.conftest import plan_dict
from tests.monitor.oversight_data import CRITERIA, OVERSIGHT, store_answers
from tests.monitor.test_judging import jury_section, rejudge_days
from tests.probes.simkit import JUDGE_MODELS

NOW = datetime(2026, 2, 25, 12, tzinfo=UTC)


def _rated_answers(engine: Engine, plan: Plan, n: int) -> None:
    """``n`` stored answers (each its canary's reference), all queued and rated 5 by clinicians, as the
    simulated judges score them."""
    pack = load_pack("clinical_knowledge_mcq").canaries
    with session_scope(engine) as s:
        for result_id, canary in zip(store_answers(s, "knowledge-qa", n, NOW - timedelta(hours=1)), pack, strict=False):
            result = s.get(ProbeResult, result_id)
            assert result is not None
            result.canary_id, result.answer = canary.id, canary.references[0]  # answered as the reference
            s.add(result)
        oversight_pass(s, plan, NOW)
    with session_scope(engine) as s:
        for item in s.exec(select(ReviewItem)).all():
            scores = dict.fromkeys(CRITERIA, 5)
            record_review(
                s,
                plan,
                item_id=item.id or 0,
                reviewer=item.reviewer,
                scores=scores,
                note="",
                safety_concern=False,
                actor=item.reviewer,
                now=NOW,
            )


def _plan(url: str, **jury: Any) -> Plan:
    review = {"rate": 1.0, "weekly_quota": 50, "double_rate": 0.0}
    data = plan_dict(jury=jury_section(url, **jury), oversight={**OVERSIGHT, "review": review})
    data["tasks"][0] |= {"human_review_required": True}
    return parse_plan(yaml.safe_dump(data))


def test_a_judge_drifting_on_the_frozen_set_raises_judge_drift_and_honest_judges_nothing(
    engine: Engine, serve: Callable[..., Any], tmp_path: Path
) -> None:
    honest = serve(create_simulator([]))
    plan = _plan(honest.url)
    _rated_answers(engine, plan, 12)
    with session_scope(engine) as s:
        frozen = freeze_judge_set(s, plan, "knowledge-qa")
    path = tmp_path / "frozen.jsonl"
    frozen.write(path)
    canaries = load_judge_canaries(path)  # the judge-canary job's own loader accepts it
    assert len(canaries) == 12 and all(c.gold == {c2: 5.0 for c2 in CRITERIA} for c in canaries)
    assert [c.answer for c in canaries] == [c.references[0] for c in load_pack("clinical_knowledge_mcq").canaries[:12]]
    again = freeze_judge_set_version(engine, plan)
    assert again == frozen.version  # the same ratings freeze to the same version

    quiet = rejudge_days(engine, _plan(honest.url, canary_path=str(path)), honest.url, 6)
    assert not any(s.firing for o in quiet for s in o.signals), [
        (s.summary, o.agreement) for o in quiet for s in o.signals
    ]

    drifting = JudgeBehaviour(drift_after=3 * len(canaries), drift_offset=-2.0)  # judge-b turns severe
    server = serve(create_simulator([], judges={JUDGE_MODELS[1]: drifting}))
    outcomes = rejudge_days(engine, _plan(server.url, canary_path=str(path)), server.url, 10)
    fired = [s for o in outcomes for s in o.signals if s.firing]
    assert fired and {s.labels["rule"] for s in fired} == {"judge_drift"}
    assert {s.labels["task"] for s in fired} == {"judge:judge-b"}


def freeze_judge_set_version(engine: Engine, plan: Plan) -> str:
    with session_scope(engine) as s:
        return freeze_judge_set(s, plan, "knowledge-qa").version


def test_the_cli_freezes_the_set_and_says_its_version(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["oversight", "freeze-judge-set", "--help"])
    assert result.exit_code == 0 and "judge canaries" in result.output
    missing = CliRunner().invoke(
        cli, ["oversight", "freeze-judge-set", str(tmp_path / "none.yaml"), "--task", "t", "-o", "x.jsonl"]
    )
    assert missing.exit_code == 2
