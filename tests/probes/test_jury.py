"""The LLM jury: verdict parsing, aggregation, judges against the simulator, storage and agreement."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.monitor.errors import PlanError
from medmon.monitor.plan.model import parse_plan
from medmon.probes.agreement import judge_score_series, jury_ledger, window_agreement
from medmon.probes.client import ModelClient
from medmon.probes.jury import (
    JUDGE_MARKER,
    CriterionScore,
    JudgeVerdict,
    Jury,
    JurySettings,
    aggregate,
    judge_messages,
    parse_verdict,
)
from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus, ProbeResult
from medmon.probes.redaction import TextPolicy, keep
from medmon.probes.runner import probe_canaries
from medmon.probes.runs import finish_run, start_run
from medmon.probes.simulator import Fault, JudgeBehaviour, Phase, create_simulator
from tests.conftest import plan_dict
from tests.probes.simkit import JUDGE_MODELS, NOTES, judge_settings, run, settings, sim_state

CRITERIA = ("accuracy", "completeness", "clarity")
GOOD = (
    '{"accuracy": {"score": 4, "explanation": "right"}, "completeness": {"score": 5, "explanation": "all"}, '
    '"clarity": {"score": 3, "explanation": "dense"}}'
)


@pytest.mark.parametrize(
    "text, expected",
    [
        (GOOD, (4, 5, 3)),
        (f"Here is my verdict:\n```json\n{GOOD}\n```\nThanks.", (4, 5, 3)),
        ('{"Accuracy": {"score": "4"}, "COMPLETENESS": {"score": 5.0}, "clarity": 2}', (4, 5, 2)),
        (f'{GOOD} and a second object {{"accuracy": 1}}', (4, 5, 3)),
    ],
    ids=["plain-json", "fenced-with-prose", "case-strings-floats-bare-numbers", "first-object-wins"],
)
def test_parse_verdict_accepts(text: str, expected: tuple[int, ...]) -> None:
    parsed = parse_verdict(text, CRITERIA)
    assert parsed is not None and tuple(s.score for s in parsed) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The response is accurate and complete; I would give it a 4.",
        "",
        '{"accuracy": {"score": 4}, "completeness": {"score": 5}}',
        '{"accuracy": {"score": 6}, "completeness": {"score": 5}, "clarity": {"score": 3}}',
        '{"accuracy": {"score": 0}, "completeness": {"score": 5}, "clarity": {"score": 3}}',
        '{"accuracy": {"score": 4.5}, "completeness": {"score": 5}, "clarity": {"score": 3}}',
        '{"accuracy": {"score": "good"}, "completeness": {"score": 5}, "clarity": {"score": 3}}',
        '{"accuracy": {"score": true}, "completeness": {"score": 5}, "clarity": {"score": 3}}',
        '{"accuracy": {"score": 4, "explanation": "cut off',
        '["accuracy", 4]',
    ],
    ids=[
        "prose",
        "empty",
        "missing-criterion",
        "above-scale",
        "below-scale",
        "half-point",
        "word-score",
        "boolean-score",
        "truncated",
        "not-an-object",
    ],
)
def test_parse_verdict_rejects(text: str) -> None:
    assert parse_verdict(text, CRITERIA) is None


def test_parse_verdict_truncates_long_explanations() -> None:
    parsed = parse_verdict('{"accuracy": {"score": 3, "explanation": "' + "x" * 2000 + '"}}', ["accuracy"])
    assert parsed is not None and len(parsed[0].explanation or "") == 500


def verdict(judge: str, *scores: int | None, status: ParseStatus = ParseStatus.ok) -> JudgeVerdict:
    return JudgeVerdict(judge, "m", status, tuple(CriterionScore(c, s) for c, s in zip(CRITERIA, scores)))


def test_instance_score_is_the_mean_over_valid_judges_and_criteria() -> None:
    outcome = aggregate(
        [
            verdict("a", 5, 5, 4),
            verdict("b", 3, 4, 3),
            verdict("c", status=ParseStatus.failed),
            verdict("d", None, None, None, status=ParseStatus.unparsed),
        ]
    )
    assert outcome.mean == pytest.approx(4.0) and outcome.score == pytest.approx(0.75)
    assert outcome.judges_answered == 2
    # judge means 14/3 and 10/3: 1 - (4/3) / 4
    assert outcome.agreement == pytest.approx(1 - (4 / 3) / 4) and outcome.unanimous is False
    assert outcome.error is None


def test_unanimous_jury() -> None:
    outcome = aggregate([verdict("a", 4, 5, 3), verdict("b", 4, 5, 3), verdict("c", 4, 5, 3)])
    assert outcome.agreement == 1.0 and outcome.unanimous is True and outcome.score == pytest.approx(0.75)


def test_one_valid_judge_scores_but_has_no_agreement() -> None:
    outcome = aggregate([verdict("a", 5, 5, 5), verdict("b", status=ParseStatus.failed)])
    assert outcome.score == 1.0 and outcome.judges_answered == 1
    assert outcome.agreement is None and outcome.unanimous is None


def test_no_valid_judge_means_no_score_not_the_bottom_of_the_scale() -> None:
    outcome = aggregate(
        [verdict("a", status=ParseStatus.failed), verdict("b", None, None, None, status=ParseStatus.unparsed)]
    )
    assert outcome.score is None and outcome.mean is None and outcome.judges_answered == 0
    assert outcome.error == "no valid judge"


def test_judge_prompt_carries_request_response_gold_and_format() -> None:
    messages = judge_messages(NOTES[0], "Rest the ankle.", CRITERIA)
    system, user = messages[0]["content"], messages[1]["content"]
    assert JUDGE_MARKER in system
    assert NOTES[0].prompt in user and "<response>\nRest the ankle.\n</response>" in user
    assert f"<gold_response>\n{NOTES[0].references[0]}\n</gold_response>" in user
    assert '"accuracy": {"score": <1-5>' in user and '"clarity"' in user
    no_gold = judge_messages(NOTES[0].__class__(id="x", messages=NOTES[0].messages), "a", CRITERIA)
    assert "<gold_response>" not in no_gold[1]["content"]


def test_jury_settings_validate() -> None:
    judge = settings("http://127.0.0.1:9", name="same")
    with pytest.raises(ValueError, match="unique"):
        JurySettings((judge, judge))
    with pytest.raises(ValueError, match="scale_max"):
        JurySettings((judge,), scale_min=5, scale_max=5)


@pytest.fixture
def jury_sim(serve: Callable) -> tuple[Any, str]:
    app = create_simulator(NOTES, [Phase(accuracy=1.0)], seed=4)
    return app, serve(app).url


def judge_once(url: str, answer: str, **jury_kw: Any) -> Any:
    async def go() -> Any:
        async with Jury(JurySettings(judge_settings(url), **jury_kw)) as jury:
            return await jury.judge(NOTES[0], answer)

    return run(go())


def test_three_judges_score_a_good_answer_high(jury_sim: tuple[Any, str]) -> None:
    app, url = jury_sim
    outcome = judge_once(url, NOTES[0].references[0])
    assert [v.parse_status for v in outcome.verdicts] == [ParseStatus.ok] * 3
    assert outcome.mean == 5 and outcome.score == 1.0 and outcome.judges_answered == 3 and outcome.unanimous
    assert all(v.prompt_tokens and v.completion_tokens and v.cost_usd for v in outcome.verdicts)
    assert sorted(sim_state(app).by_model) == sorted(JUDGE_MODELS)
    assert judge_once(url, "Take two aspirin.").score == pytest.approx(0.25)  # all 2s


def test_prose_judge_is_retried_once_then_unparsed_and_does_not_block_others(jury_sim: tuple[Any, str]) -> None:
    app, url = jury_sim
    state = sim_state(app)
    state.judges.update(
        {JUDGE_MODELS[1]: JudgeBehaviour(mode="prose_once"), JUDGE_MODELS[2]: JudgeBehaviour(mode="prose")}
    )
    outcome = judge_once(url, NOTES[0].references[0])
    by = {v.judge: v for v in outcome.verdicts}
    assert by["judge-a"].parse_status == ParseStatus.ok and by["judge-a"].asks == 1
    assert by["judge-b"].parse_status == ParseStatus.retried_ok and by["judge-b"].asks == 2
    assert by["judge-c"].parse_status == ParseStatus.unparsed and by["judge-c"].asks == 2
    assert all(s.score is None for s in by["judge-c"].scores)
    assert state.by_model[JUDGE_MODELS[2]] == 2  # retried once, not more
    assert by["judge-c"].cost_usd and by["judge-c"].cost_usd > by["judge-a"].cost_usd  # two asks were paid for
    assert outcome.judges_answered == 2 and outcome.score == 1.0


def test_a_failing_judge_is_recorded_and_the_others_still_score(jury_sim: tuple[Any, str]) -> None:
    app, url = jury_sim
    sim_state(app).inject(Fault("status", status=500, count=5, model=JUDGE_MODELS[0]))
    outcome = judge_once(url, NOTES[0].references[0])
    failed = outcome.verdicts[0]
    assert failed.parse_status == ParseStatus.failed and failed.error_type == "unavailable"
    assert failed.scores == () and failed.cost_usd is None
    assert outcome.judges_answered == 2 and outcome.score == 1.0


def test_a_judge_that_hangs_times_out_without_holding_up_the_verdict(jury_sim: tuple[Any, str]) -> None:
    app, url = jury_sim
    sim_state(app).inject(Fault("hang", delay_s=10, model=JUDGE_MODELS[2]))

    async def go() -> Any:
        judges = judge_settings(url, timeout_s=0.3)
        async with Jury(JurySettings(judges)) as jury:
            return await jury.judge(NOTES[0], NOTES[0].references[0])

    outcome = run(go())
    assert outcome.verdicts[2].parse_status == ParseStatus.failed and outcome.verdicts[2].error_type == "timeout"
    assert outcome.judges_answered == 2


def test_no_judge_answers_gives_no_score(jury_sim: tuple[Any, str]) -> None:
    app, url = jury_sim
    sim_state(app).judges.update({m: JudgeBehaviour(mode="fail") for m in JUDGE_MODELS})
    outcome = judge_once(url, NOTES[0].references[0])
    assert outcome.score is None and outcome.error == "no valid judge" and outcome.judges_answered == 0


def test_empty_judge_output_counts_as_malformed_and_is_asked_again(jury_sim: tuple[Any, str]) -> None:
    app, url = jury_sim
    sim_state(app).inject(Fault("empty", model=JUDGE_MODELS[0]))
    outcome = judge_once(url, NOTES[0].references[0])
    assert outcome.verdicts[0].parse_status == ParseStatus.retried_ok and outcome.judges_answered == 3


def probe_and_store(engine: Engine, url: str, canaries: Any, *, stamp: datetime | None = None) -> list[ProbeResult]:
    async def go() -> Any:
        async with ModelClient(settings(url)) as client, Jury(JurySettings(judge_settings(url))) as jury:
            return await probe_canaries(client, canaries, "notes", "jury", jury=jury)

    results = run(go())
    stamp = stamp or datetime(2026, 11, 1, tzinfo=UTC)
    with Session(engine, expire_on_commit=False) as session:
        probe_run = start_run(session, "notes", started_at=stamp)
        rows = finish_run(session, probe_run, results, stamp, policy=TextPolicy(keep))
        session.commit()
    return rows


def test_verdicts_and_the_judges_ledger_are_stored_apart_from_production_cost(
    engine: Engine, jury_sim: tuple[Any, str]
) -> None:
    app, url = jury_sim
    sim_state(app).judges[JUDGE_MODELS[2]] = JudgeBehaviour(mode="prose")
    rows = probe_and_store(engine, url, NOTES[:4])
    with Session(engine) as s:
        calls = s.exec(select(JudgeCall)).all()
        verdicts = s.exec(select(JuryVerdict)).all()
        stored = s.exec(select(ProbeResult)).all()
    assert len(calls) == 4 * 3 and len(verdicts) == 4 * 3 * 3
    assert {c.parse_status for c in calls if c.judge == "judge-c"} == {ParseStatus.unparsed}
    assert all(v.score is None for v in verdicts if v.judge == "judge-c")
    assert all(r.jury_judges == 2 and r.score == 1.0 and r.jury_mean == 5 for r in stored)
    # Production cost is what the production call cost, at production prices; judges have their own ledger.
    for r in stored:
        assert r.cost_usd == pytest.approx((r.prompt_tokens * 5 + r.completion_tokens * 15) / 1e6)
    with Session(engine) as s:
        ledger = jury_ledger(s, "notes")
    assert ledger.calls == 12 and ledger.by_status == {"ok": 8, "unparsed": 4}
    assert ledger.cost_usd == pytest.approx(sum(c.cost_usd or 0 for c in calls))
    assert ledger.cost_usd == pytest.approx((ledger.prompt_tokens * 1 + ledger.completion_tokens * 2) / 1e6)
    assert len(rows) == 4


def _store_table(s: Session, table: dict[str, list[int | None]]) -> None:
    stamp = datetime(2026, 11, 1, tzinfo=UTC)
    probe_run = start_run(s, "t", started_at=stamp)
    results = []
    for i in range(len(next(iter(table.values()))) // 2):
        r = ProbeResult(run_id=probe_run.id, task_id="t", canary_id=f"c{i}")
        s.add(r)
        results.append(r)
    s.flush()
    for judge, scores in table.items():
        for i, result in enumerate(results):
            call = JudgeCall(result_id=result.id, task_id="t", judge=judge, parse_status=ParseStatus.ok)
            s.add(call)
            s.flush()
            for j, criterion in enumerate(("accuracy", "clarity")):
                score = scores[i * 2 + j]
                s.add(
                    JuryVerdict(
                        result_id=result.id,
                        call_id=call.id,
                        task_id="t",
                        judge=judge,
                        criterion=criterion,
                        score=score,
                        parse_status=ParseStatus.ok if score is not None else ParseStatus.unparsed,
                    )
                )
    s.commit()


def test_scores_outside_the_scale_are_excluded_and_counted_not_a_crash(engine: Engine) -> None:
    """A stored 0 or 7 on a 1-5 scale made krippendorff raise 'out-of-domain values' (and the Jury page with it)."""
    table = {"judge-a": [5, 4, 2, 3, 1, 4], "judge-b": [5, 3, 7, 3, 2, 4], "judge-c": [4, 0, 1, 3, None, 5]}
    with Session(engine) as s:
        _store_table(s, table)
        got = window_agreement(s, "t", window=10)
    clean = {j: [v if v is not None and 1 <= v <= 5 else None for v in row] for j, row in table.items()}
    matrix = np.array([[np.nan if v is None else v for v in row] for row in clean.values()], dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert got.out_of_scale == 2
    assert got.alpha is not None and math.isclose(got.alpha, expected, rel_tol=1e-9)
    with pytest.raises(ValueError, match="out-of-domain"):  # what the page used to meet
        raw = np.array([[np.nan if v is None else v for v in row] for row in table.values()], dtype=float)
        krippendorff.alpha(reliability_data=raw, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])


def test_window_agreement_matches_krippendorff_on_the_same_matrix(engine: Engine) -> None:
    table = {"judge-a": [5, 4, 2, 3, 1, 4], "judge-b": [5, 3, 2, 3, 2, 4], "judge-c": [4, 4, 1, 3, None, 5]}
    with Session(engine) as s:
        _store_table(s, table)
        got = window_agreement(s, "t", window=10)
    matrix = np.array([[np.nan if v is None else v for v in row] for row in table.values()], dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert got.alpha is not None and math.isclose(got.alpha, expected, rel_tol=1e-9)
    assert got.results == 3 and got.judges == 3 and got.units == 6


def test_window_agreement_is_undefined_without_two_judges_or_variation(
    engine: Engine, jury_sim: tuple[Any, str]
) -> None:
    app, url = jury_sim
    with Session(engine) as s:
        assert window_agreement(s, "notes").alpha is None
    probe_and_store(engine, url, NOTES[:3])  # every judge gives 5 everywhere
    with Session(engine) as s:
        flat = window_agreement(s, "notes")
    assert flat.alpha is None and flat.reason == "every score is the same value" and flat.units == 9
    with pytest.raises(ValueError, match="window"):
        window_agreement(Session(engine), "notes", window=0)


def test_a_drifting_judge_is_visible_in_its_own_stream(engine: Engine, serve: Callable) -> None:
    app = create_simulator(
        NOTES, [Phase(accuracy=1.0)], seed=4, judges={JUDGE_MODELS[2]: JudgeBehaviour(drift_after=8, drift_offset=-2)}
    )
    url = serve(app).url
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for k in range(2):
        probe_and_store(engine, url, NOTES, stamp=start + timedelta(hours=k))
    with Session(engine) as s:
        series = judge_score_series(s, "notes")
        items = s.exec(
            select(ProbeResult.jury_agreement)
            .where(ProbeResult.task_id == "notes", col(ProbeResult.jury_agreement).is_not(None))
            .order_by(col(ProbeResult.id))
        ).all()
        alpha = window_agreement(s, "notes", window=8)
    assert set(series) == {"judge-a", "judge-b", "judge-c"}
    assert [p.score for p in series["judge-a"]] == [5.0] * 16
    drifting = series["judge-c"]
    assert [p.score for p in drifting[:8]] == [5.0] * 8 and [p.score for p in drifting[8:]] == [3.0] * 8
    assert all(p.deviation == -2.0 for p in drifting[8:]) and all(p.deviation == 0 for p in drifting[:8])
    assert [round(a, 3) for a in items] == [1.0] * 8 + [round(1 - (2 + 2 + 0) / 3 / 4, 3)] * 8
    assert alpha.alpha is not None and alpha.alpha < 0  # systematic disagreement: worse than chance


def test_plan_jury_names_judges_and_rejects_duplicates() -> None:
    judge = {"base_url": "http://127.0.0.1:9/v1", "model": "j"}
    plan = parse_plan(yaml.safe_dump(plan_dict(jury={"judges": [judge, judge, {**judge, "name": "senior"}]})))
    assert plan.jury is not None and [j.name for j in plan.jury.judges] == ["judge-1", "judge-2", "senior"]
    settings_ = JurySettings.from_plan(plan.jury, environ={})
    assert [j.name for j in settings_.judges] == ["judge-1", "judge-2", "senior"]
    with pytest.raises(PlanError, match="judge names must be unique"):
        parse_plan(yaml.safe_dump(plan_dict(jury={"judges": [{**judge, "name": "x"}, {**judge, "name": "x"}]})))


def test_check_reports_a_jury_task_without_a_jury(tmp_path: Path) -> None:
    from medmon.monitor.governance.checks import check_plan

    canaries = tmp_path / "notes.jsonl"
    canaries.write_text("\n".join(c.to_json() for c in NOTES))
    task = {
        "id": "notes",
        "benchmark": "aci_bench",
        "canaries": {"path": str(canaries)},
        "scorer": "jury",
        "baseline": {"value": 0.8, "n": 100},
        "thresholds": {"min_score": 0.6},
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(tasks=[task])))
    with pytest.raises(PlanError, match=r"tasks\[0\]\.scorer: task is scored by the LLM jury"):
        check_plan(path)
    judge = {"base_url": "http://127.0.0.1:9/v1", "model": "j"}
    path.write_text(yaml.safe_dump(plan_dict(tasks=[task], jury={"judges": [judge]})))
    assert check_plan(path).jury is not None


def test_judges_explanations_pass_through_the_redactor(engine: Engine, jury_sim: tuple[Any, str]) -> None:
    _, url = jury_sim

    async def go() -> Any:
        async with ModelClient(settings(url)) as client, Jury(JurySettings(judge_settings(url))) as jury:
            return await probe_canaries(client, NOTES[:1], "notes", "jury", jury=jury)

    results = run(go())
    with Session(engine) as s:
        probe_run = start_run(s, "notes", started_at=datetime(2026, 11, 1, tzinfo=UTC))
        finish_run(
            s,
            probe_run,
            results,
            datetime(2026, 11, 1, tzinfo=UTC),
            policy=TextPolicy(lambda text: text.replace("scored", "[REDACTED]")),
        )
        s.commit()
        explanations = s.exec(select(JuryVerdict.explanation)).all()
    assert len(explanations) == 9 and all("[REDACTED]" in (e or "") and "scored" not in (e or "") for e in explanations)
