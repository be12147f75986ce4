"""The clinician scale through the real pipeline: probe runs of an open-ended task (the discharge-instructions
pack) against the simulator over HTTP, judged by the simulator's three judges, the review queue filled by the
oversight pass under active selection, simulated clinicians rating what was drawn through ``record_review``
(the function the Clinician review page and ``medmon oversight`` use), a clock that moves and the task's null
as the detection streams set it from its baseline.

(a) The judges turn severe while the model answers as before: a judge incident (``judge_bias``), no
    clinician-scale alarm on any rubric criterion.
(b) The model's answers get worse (non-answers) while the judges turn lenient enough to keep scoring them 5:
    the jury-only score stream stays quiet and ``clinician_scale_drop`` opens an incident, on every criterion
    the clinicians rate lower, each alert naming its criterion and the clinician scale.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from medmon.alerts import Alert, AlertStatus, incident_members
from medmon.alerts.incidents import open_incidents
from medmon.db import session_scope
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.governance.clinician_scale import stream_key
from medmon.monitor.governance.review import record_review, task_null
from medmon.monitor.models import DetectorState, ReviewItem
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import CANNOT, Phase, create_simulator
from tests.probes.simkit import JUDGE_MODELS

pytestmark = pytest.mark.slow  # about 4,000 HTTP calls per case

TASK = "discharge"
REVIEWER = "dr.ana@hospital.example"
START = datetime(2026, 11, 2, 6, tzinfo=UTC)  # a Monday
PROBES_PER_WEEK = 8
STEP = timedelta(hours=21)  # 8 probes a week, at moving hours of the day
WEEKS, CHANGE_WEEK = 6, 2


def _plan(make_plan: Callable[..., Plan], url: str) -> Plan:
    endpoint = {"base_url": f"{url}/v1", "api_key_env": "MEDMON_TEST_KEY", "timeout_s": 5, "max_retries": 1}
    judges = [endpoint | {"name": f"judge-{m[-1]}", "model": m} for m in JUDGE_MODELS]
    return make_plan(
        deployment=endpoint | {"model": "medmon-simulator/clinical-v1"},
        jury={"judges": judges},
        tasks=[
            {
                "id": TASK,
                "benchmark": "starr_patient_instructions",
                "canaries": {"pack": "discharge_instructions"},
                "schedule": "1h",
                "sample_size": 20,
                "thresholds": {"min_score": 0.5, "tolerated_drop": 0.1},
                "human_review_required": True,
            }
        ],
        detection={"reference": {"repeats": 0}},
        oversight={
            "reviewers": [{"name": "Dr. Ana", "email": REVIEWER, "tasks": [TASK]}],
            "review": {"rate": 0.2, "weekly_quota": 1000, "double_rate": 0.0, "selection": "active"},
            "agreement": {"min_items": 10, "min_icc": None, "max_judge_bias": 1.0},
        },
    )


def clinician_rating(answer: str | None, rng: random.Random) -> int:
    """A simulated clinician: a real answer rates 4-5, the model's non-answer 1-2."""
    if answer is None or answer.startswith(CANNOT[:20]):
        return rng.choice((1, 2, 2))
    return rng.choice((4, 5, 5))


@dataclass
class Run:
    rules: set[str]  # the rules of the alerts firing at the end
    incidents: dict[int, set[str]]  # open incidents: id -> member rules
    null: float | None
    streams: dict[str, DetectorState | None]  # criterion -> its clinician-scale stream
    items: list[ReviewItem]
    answers: int
    first_fired: dict[str, int]  # rule -> answers stored after the change when it first fired
    evidence: dict[str, dict[str, Any]]  # alert metric (or rule) -> the evidence of its first alert
    metrics: set[str]  # the metrics of the firing clinician-scale alerts

    def figures(self) -> str:
        parts = []
        for criterion, stream in self.streams.items():
            est = stream.state["estimate"] if stream is not None else {}
            parts.append(
                f"{criterion} (null {stream.null_mean if stream else float('nan'):.3f}): "
                f"{est.get('estimate', float('nan')):.3f} (95% {est.get('ci_low', float('nan')):.3f} to "
                f"{est.get('ci_high', float('nan')):.3f}, n={est.get('n')}, ratings={est.get('labels')})"
            )
        return (
            f"task null {self.null:.3f}; clinician-scale estimates {'; '.join(parts)}; answers {self.answers}, "
            f"drawn {len(self.items)}; first fired (answers after the change): {dict(sorted(self.first_fired.items()))}"
        )


def run_weeks(engine: Engine, plan: Plan, sim: Any, url: str, change: Callable[[Any, httpx.Client], None]) -> Run:
    """Probe ``WEEKS`` weeks on a moving clock; the oversight pass after each probe, the clinician rating
    what it drew the same day; ``change`` applied to the simulator at the start of week ``CHANGE_WEEK``."""
    ctx = load_context(plan, plan.tasks[0])
    rng, ratings = random.Random(1), random.Random(2)
    now = START
    with httpx.Client() as client:
        for probe in range(WEEKS * PROBES_PER_WEEK):
            if probe == CHANGE_WEEK * PROBES_PER_WEEK:
                change(sim, client)
            run_task_probe(engine, plan, ctx, rng=rng, now=lambda t=now: t)
            with session_scope(engine) as s:
                oversight_pass(s, plan, now + timedelta(minutes=1))
            with session_scope(engine) as s:
                for item in s.exec(select(ReviewItem).where(ReviewItem.status == "open")).all():
                    result = s.get(ProbeResult, item.result_id)
                    score = clinician_rating(result.answer if result else None, ratings)
                    record_review(
                        s,
                        plan,
                        item_id=item.id or 0,
                        reviewer=REVIEWER,
                        scores={c: max(1, min(5, score + ratings.choice((0, 0, -1, 1)))) for c in plan.jury.criteria}
                        if plan.jury
                        else {},
                        note="",
                        safety_concern=False,
                        actor=REVIEWER,
                        now=now + timedelta(hours=3),
                    )
            now += STEP
    with session_scope(engine) as s:
        oversight_pass(s, plan, now + timedelta(days=7))  # the last week closes and is streamed
    with Session(engine) as s:
        firing = s.exec(select(Alert).where(Alert.status == AlertStatus.firing)).all()
        changed = START + CHANGE_WEEK * PROBES_PER_WEEK * STEP
        first: dict[str, int] = {}
        evidence: dict[str, dict[str, Any]] = {}
        for alert in s.exec(select(Alert).order_by(col(Alert.starts_at))).all():
            evidence.setdefault(alert.rule, dict(alert.evidence))
            evidence.setdefault(alert.labels["metric"], dict(alert.evidence))
            before = s.exec(
                select(func.count())
                .select_from(ProbeResult)
                .where(ProbeResult.created_at >= changed, ProbeResult.created_at < alert.starts_at)
            ).one()
            first[alert.rule] = min(first.get(alert.rule, before), before)
        incidents = {i.id or 0: {a.rule for a in incident_members(s, i.id or 0)} for i in open_incidents(s)}
        return Run(
            rules={a.rule for a in firing},
            incidents=incidents,
            null=task_null(s, TASK),
            streams={c: s.get(DetectorState, stream_key(TASK, c)) for c in plan.jury.criteria} if plan.jury else {},
            items=list(s.exec(select(ReviewItem)).all()),
            answers=len(s.exec(select(ProbeResult.id).where(ProbeResult.task_id == TASK)).all()),
            first_fired=first,
            evidence=evidence,
            metrics={a.labels["metric"] for a in firing if a.rule == "clinician_scale_drop"},
        )


def _simulator(serve: Callable[..., Any]) -> tuple[Any, str]:
    app = create_simulator(load_pack("discharge_instructions").canaries, [Phase(0, accuracy=0.95)], seed=5)
    return app, serve(app).url


def _judges(client: httpx.Client, url: str, offset: float) -> None:
    response = client.post(f"{url}/_simulator/judges", json={m: {"offset": offset} for m in JUDGE_MODELS})
    response.raise_for_status()


def test_a_jury_that_turns_severe_on_unchanged_answers_is_a_judge_incident_not_a_clinician_scale_alarm(
    engine: Engine, make_plan: Callable[..., Plan], serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", "sk-test")
    app, url = _simulator(serve)
    plan = _plan(make_plan, url)
    run = run_weeks(engine, plan, app, url, lambda sim, client: _judges(client, url, -3.0))
    print(f"\n(a) jury turns severe: {run.figures()}")
    assert run.answers == WEEKS * PROBES_PER_WEEK * 20
    assert run.null is not None and plan.jury is not None
    assert list(run.streams) == list(plan.jury.criteria) == ["accuracy", "completeness", "clarity"]
    for stream in run.streams.values():  # one stream per rubric criterion, each fed every closed week's answers
        assert stream is not None and stream.n > 0.8 * run.answers
        # the task's null, shifted by the jury's offset on the criterion before the change (small here)
        assert abs(stream.null_mean - run.null) < 0.1
    assert "clinician_scale_drop" not in run.rules
    assert "judge_bias" in run.rules  # the judges, not the answers, moved
    assert "drift_drop" in run.rules  # the jury-only stream alarms: it reports the jury's opinion, as labelled
    judge_incidents = [t for t, rules in run.incidents.items() if "judge_bias" in rules]
    assert judge_incidents and not any("clinician_scale_drop" in r for r in run.incidents.values())
    for criterion, stream in run.streams.items():
        assert stream is not None
        estimate = stream.state["estimate"]
        assert estimate["scale"] == "clinician" and estimate["criterion"] == criterion
        assert estimate["estimate"] > stream.null_mean  # clinicians still rate it well on every criterion
    assert all(i.inclusion_probability is not None and i.inclusion_probability >= 0.05 for i in run.items)


def test_answers_worse_for_clinicians_with_the_jury_fooled_raise_the_clinician_scale_incident(
    engine: Engine, make_plan: Callable[..., Plan], serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", "sk-test")
    app, url = _simulator(serve)
    plan = _plan(make_plan, url)

    def worse(sim: Any, client: httpx.Client) -> None:
        # the model now gives non-answers to 60% of the cases, and the judges turn lenient enough (+3) to
        # score them 5 like the good ones: the jury is fooled
        state = sim.state.sim
        state.phases = [*state.phases, Phase(state.requests, accuracy=0.4, label="worse")]
        _judges(client, url, 3.0)

    run = run_weeks(engine, plan, app, url, worse)
    assert run.null is not None and plan.jury is not None
    print(f"\n(b) answers worse, jury fooled: {run.figures()}")
    assert "clinician_scale_drop" in run.rules
    assert "drift_drop" not in run.rules and "below_minimum" not in run.rules  # the jury's own stream is fooled
    assert any("clinician_scale_drop" in rules for rules in run.incidents.values())
    # a non-answer is worse on every criterion: each criterion's stream alarms, each alert naming it
    assert run.metrics == {f"clinician_scale:{c}" for c in plan.jury.criteria}
    for criterion, stream in run.streams.items():
        assert stream is not None
        alarm = run.evidence[f"clinician_scale:{criterion}"]  # what the alarm said when it fired
        assert alarm["scale"] == "clinician" and alarm["criterion"] == criterion
        assert alarm["null_mean"] == pytest.approx(stream.null_mean)
        assert alarm["estimate"] < stream.null_mean  # on the clinician scale the answers fell below the null
    assert run.first_fired["clinician_scale_drop"] <= 3 * PROBES_PER_WEEK * 20  # within three weeks of answers
