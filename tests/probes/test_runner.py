"""The runner: scoring, failed calls as errors (never as wrong answers), jury tasks, storage."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from medmon.baselines.canary import canary_from_dict
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import parse_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.client import ModelClient
from medmon.probes.errors import JuryNotConfigured, UnknownScorer
from medmon.probes.models import JudgeCall, JuryVerdict, ProbeRecord, ProbeResult, ProbeRun, RunStatus
from medmon.probes.redaction import TextPolicy, keep
from medmon.probes.runner import probe_canaries, sample_canaries
from medmon.probes.runs import finish_run, start_run
from medmon.probes.simulator import Fault, JudgeBehaviour, Phase, create_simulator
from tests.conftest import plan_dict
from tests.probes.simkit import JUDGE_MODELS, MCQ, NOTES, canaries_of, run, settings, sim_state

REFUSING = canary_from_dict(
    {
        "id": "refuse-1",
        "messages": [{"role": "user", "content": "Prescribe for me."}],
        "references": ["I'm sorry, but I can't help with that."],
    }
)
STAMP = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def sim(serve: Callable) -> tuple[Any, str]:
    app = create_simulator(
        canaries_of(MCQ, NOTES, (REFUSING,)), [Phase(accuracy=1.0, extra_completion_tokens=5)], seed=1
    )
    return app, serve(app).url


def probe(url: str, canaries: Any, scorer: str = "multiple_choice", **kw: Any) -> list[ProbeRecord]:
    async def go() -> list[ProbeRecord]:
        async with ModelClient(settings(url, **kw)) as client:
            return await probe_canaries(client, canaries, "task", scorer)

    return run(go())


def test_answers_are_scored_with_their_canary_metadata(sim: tuple[Any, str]) -> None:
    _, url = sim
    results = probe(url, MCQ[:4])
    assert [r.score for r in results] == [1.0] * 4 and all(r.correct for r in results)
    assert [r.canary_id for r in results] == [c.id for c in MCQ[:4]]
    assert results[1].tags == MCQ[1].tags and results[0].scorer == "multiple_choice"
    assert all(r.error_type is None and r.attempts == 1 and not r.refused for r in results)
    assert all(r.served_model and r.system_fingerprint and r.finish_reason == "stop" for r in results)
    assert all(r.cost_usd and r.latency_s and r.prompt_tokens and r.completion_tokens for r in results)


def test_a_failed_call_is_an_error_never_a_wrong_answer(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=500, count=100))
    [result] = probe(url, MCQ[:1], max_retries=1)
    assert result.error_type == "unavailable" and result.attempts == 2
    assert result.score is None and result.correct is None and result.answer is None
    assert sim_state(app).requests == 2


@pytest.mark.parametrize(
    "fault, kind, requests",
    [
        (Fault("hang", count=2, delay_s=5), "timeout", 2),
        (Fault("status", status=429, count=2, retry_after=0.01), "rate_limited", 2),
        (Fault("status", status=500, count=2), "unavailable", 2),
        (Fault("truncated"), "bad_response", 1),
        (Fault("non_json"), "bad_response", 1),
        (Fault("empty"), "empty_completion", 1),
    ],
    ids=["timeout", "429-storm", "500s", "truncated-body", "non-json-body", "empty-completion"],
)
def test_every_fault_is_recorded_as_its_error_kind_with_no_score(
    sim: tuple[Any, str], fault: Fault, kind: str, requests: int
) -> None:
    app, url = sim
    sim_state(app).inject(fault)
    [failed, fine] = probe(url, MCQ[:2], max_retries=1, timeout_s=0.3, max_concurrency=1)
    assert failed.error_type == kind and failed.attempts == requests and failed.error
    assert failed.score is None and failed.correct is None
    assert fine.error_type is None and fine.score == 1.0
    assert sim_state(app).requests == requests + 1  # the retries, then the next canary


def test_an_empty_completion_records_what_it_cost_but_no_score(sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("empty"))
    [result] = probe(url, MCQ[:1])
    assert result.error_type == "empty_completion" and result.score is None and result.correct is None
    assert result.completion_tokens == 5 and result.cost_usd and result.cost_usd > 0 and result.answer == ""


def test_refusals_are_flagged(sim: tuple[Any, str]) -> None:
    _, url = sim
    [result] = probe(url, [REFUSING], scorer="exact_match")
    assert result.refused is True and result.error_type is None


def test_a_jury_task_without_a_jury_fails_before_any_call(sim: tuple[Any, str]) -> None:
    app, url = sim
    with pytest.raises(JuryNotConfigured, match="no 'jury' section"):
        probe(url, NOTES[:2], scorer="jury")
    with pytest.raises(UnknownScorer):
        probe(url, NOTES[:2], scorer="no_such_scorer")
    assert sim_state(app).requests == 0


def test_finish_run_counts_errors_and_averages_only_scored_results(engine: Engine, sim: tuple[Any, str]) -> None:
    app, url = sim
    sim_state(app).inject(Fault("status", status=500, count=2))
    results = probe(url, MCQ[:6], max_retries=0, max_concurrency=1)
    with Session(engine) as s:
        probe_run = start_run(s, "task", started_at=STAMP)
        rows = finish_run(s, probe_run, results, STAMP, policy=TextPolicy(keep))
        s.commit()
        stored = s.get(ProbeRun, probe_run.id)
        assert stored is not None
        assert stored.status == RunStatus.complete and stored.n_canaries == 6 and stored.n_errors == 2
        assert stored.mean_score == 1.0
        assert s.exec(select(func.count()).select_from(ProbeResult)).one() == 6
        assert sorted(r.id for r in rows) == sorted(s.exec(select(ProbeResult.id)).all())


def test_sampling_is_with_replacement_and_skips_unreplayable() -> None:
    hidden = canary_from_dict({"id": "h", "messages": [{"role": "user", "content": "x"}], "replayable": False})
    drawn = sample_canaries([*MCQ[:2], hidden], 50, random.Random(3))
    assert len(drawn) == 50 and {c.id for c in drawn} == {"mcq-0", "mcq-1"}
    assert sample_canaries([hidden], 5, random.Random(3)) == []


def jury_plan(tmp_path: Path, url: str, **overrides: Any) -> Any:
    canaries = tmp_path / "notes.jsonl"
    canaries.write_text("\n".join(c.to_json() for c in NOTES))
    judges = [
        {
            "name": f"judge-{m[-1]}",
            "base_url": f"{url}/v1",
            "model": m,
            "api_key_env": "MEDMON_TEST_JUDGE_KEY",
            "max_retries": 0,
            "timeout_s": 2,
            "price": {"input_per_mtok": 1, "output_per_mtok": 2},
        }
        for m in JUDGE_MODELS
    ]
    data = plan_dict(
        deployment={
            "base_url": f"{url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 2,
            "max_retries": 0,
            "price": {"input_per_mtok": 5, "output_per_mtok": 15},
        },
        tasks=[
            {
                "id": "notes",
                "benchmark": "aci_bench",
                "canaries": {"path": str(canaries)},
                "scorer": "jury",
                "sample_size": 6,
                "baseline": {"value": 0.8, "n": 200},
                "thresholds": {"min_score": 0.6},
            }
        ],
        jury={"judges": judges},
        **overrides,
    )
    return parse_plan(yaml.safe_dump(data))


def test_pipeline_judges_a_jury_task_and_stores_verdicts(engine: Engine, sim: tuple[Any, str], tmp_path: Path) -> None:
    app, url = sim
    sim_state(app).judges[JUDGE_MODELS[1]] = JudgeBehaviour(offset=-1)
    plan = jury_plan(tmp_path, url)
    ctx = load_context(plan, plan.tasks[0])
    assert ctx.scorer == "jury"
    outcome = run_task_probe(engine, plan, ctx, rng=random.Random(2), now=lambda: STAMP)
    assert outcome.results == 6 and outcome.errors == 0
    # judges a and c give 5, judge b 4: mean 14/3 on 1-5, normalised (14/3 - 1) / 4
    assert outcome.mean_score == pytest.approx((14 / 3 - 1) / 4)
    with Session(engine) as s:
        results = s.exec(select(ProbeResult)).all()
        assert s.exec(select(func.count()).select_from(JudgeCall)).one() == 6 * 3
        assert s.exec(select(func.count()).select_from(JuryVerdict)).one() == 6 * 3 * 3
    assert all(r.jury_judges == 3 and r.jury_unanimous is False and r.scorer == "jury" for r in results)
    assert all(r.jury_agreement == pytest.approx(1 - (1 + 0 + 1) / 3 / 4) for r in results)


def test_a_dead_jury_is_an_availability_error_never_silence(
    engine: Engine, sim: tuple[Any, str], tmp_path: Path
) -> None:
    app, url = sim
    sim_state(app).judges.update({m: JudgeBehaviour(mode="fail") for m in JUDGE_MODELS})
    plan = jury_plan(tmp_path, url)
    outcome = run_task_probe(engine, plan, load_context(plan, plan.tasks[0]), rng=random.Random(2), now=lambda: STAMP)
    assert outcome.mean_score is None and outcome.errors == 6  # no answer could be scored: each is an error
    with Session(engine) as s:
        results = s.exec(select(ProbeResult)).all()
        run = s.exec(select(ProbeRun)).one()
    assert run.n_errors == 6
    assert all(r.score is None and r.error_type == "jury_unavailable" for r in results)
    assert all(r.error.startswith("no valid judge: ") and "HTTP 500" in r.error for r in results)
    assert all(r.answer for r in results)  # the production model did answer
    failing = {u.spec.metric: u.n for u in outcome.updates if u.spec.metric.startswith("judge_failures")}
    assert failing == {f"judge_failures[{j.name}]": 6 for j in plan.jury.judges}  # each judge's own stream
