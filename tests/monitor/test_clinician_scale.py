"""Clinician-scale monitoring through the oversight pass: answers stored as the pipeline stores them, the
queue drawing them with known probabilities, clinicians rating what was drawn, and the alerts the pass
raises. A jury that drifts while the answers do not raises judge-bias alerts and no clinician-scale
alarm; answers that get worse for clinicians while the jury stays fooled raise ``clinician_scale_drop``."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import krippendorff
import numpy as np
import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.alerts import Alert, open_alerts
from medmon.db import session_scope
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.governance.clinician_agreement import rated, task_agreement
from medmon.monitor.governance.clinician_scale import stream_key
from medmon.monitor.governance.review import record_review
from medmon.monitor.governance.selection import residual_scale
from medmon.monitor.models import DetectorState, ReviewItem, StreamStatus
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.read.overview import task_overview
from medmon.probes.models import ProbeResult
from tests.conftest import plan_dict
from tests.monitor.oversight_data import CRITERIA, OVERSIGHT, store_answers

MONDAY = datetime(2026, 11, 2, 8, tzinfo=UTC)
TASK = "knowledge-qa"
NULL = 0.7  # the task's null on the 0-1 scale (3.8 of 5)


def _plan() -> Plan:
    review = {"rate": 0.2, "weekly_quota": 1000, "double_rate": 0.0, "selection": "active", "min_probability": 0.05}
    data = plan_dict(oversight={**OVERSIGHT, "review": review})
    data["tasks"][0] |= {"human_review_required": True}
    return parse_plan(yaml.safe_dump(data))


def _score_stream(session: Session) -> None:
    """The task's primary score stream, as the detection streams leave it once its reference is built."""
    session.add(
        DetectorState(
            key=f"{TASK}:score:drop",
            task_id=TASK,
            metric="score",
            direction="drop",
            null_mean=NULL,
            baseline_mean=0.8,
            threshold=2e5,
        )
    )


def _run_weeks(
    engine: Engine,
    plan: Plan,
    weeks: int,
    jury: Callable[[int], int],
    clinician: Callable[[int, random.Random], int],
    worse_on: Callable[[int, random.Random], int] | None = None,
    criterion: str = "",
) -> list[str]:
    """Each week: 150 answers judged by ``jury(week)``, the queue's draw rated by ``clinician(week)`` on every
    criterion (by ``worse_on(week)`` on ``criterion`` if given); the pass run after each week closes. Returns the
    rules of the alerts open at the end."""
    rng = random.Random(7)
    with session_scope(engine) as s:
        _score_stream(s)
    for week in range(weeks):
        start = MONDAY + timedelta(days=7 * week)
        noisy = random.Random(week)
        with session_scope(engine) as s:
            store_answers(
                s,
                TASK,
                150,
                start,
                judge_score=lambda i, j, c, w=week, r=noisy: jury(w) - (r.random() < 0.3),
                seed=week,
            )
            oversight_pass(s, plan, start + timedelta(days=6))  # Sunday: the week's draw is queued
        with session_scope(engine) as s:
            for item in s.exec(select(ReviewItem).where(ReviewItem.status == "open")).all():
                scores = {c: (worse_on if worse_on and c == criterion else clinician)(week, rng) for c in CRITERIA}
                record_review(
                    s,
                    plan,
                    item_id=item.id or 0,
                    reviewer=item.reviewer,
                    scores=scores,
                    note="",
                    safety_concern=False,
                    actor=item.reviewer,
                    now=start + timedelta(days=6, hours=1),
                )
        with session_scope(engine) as s:
            oversight_pass(s, plan, start + timedelta(days=7, minutes=5))  # Monday: the closed week is streamed
    with Session(engine) as s:
        return [a.rule for a in open_alerts(s)]


def _good(week: int, rng: random.Random) -> int:
    return rng.choice((4, 4, 4, 5, 3))


def test_answers_worse_for_clinicians_while_the_jury_stays_fooled_raise_the_clinician_scale_alarm(
    engine: Engine,
) -> None:
    plan = _plan()
    bad = lambda week, rng: _good(week, rng) if week < 2 else rng.choice((2, 2, 3, 3, 1))  # noqa: E731
    rules = _run_weeks(engine, plan, 6, jury=lambda week: 5, clinician=bad)
    assert "clinician_scale_drop" in rules
    with Session(engine) as s:
        alerts = {a.labels["metric"]: a for a in open_alerts(s) if a.rule == "clinician_scale_drop"}
        streams = [s.get(DetectorState, stream_key(TASK, c)) for c in CRITERIA]
        items = s.exec(select(ReviewItem)).all()
    assert set(alerts) == {f"clinician_scale:{c}" for c in CRITERIA}  # one alert per criterion, each named
    for criterion in CRITERIA:
        alert = alerts[f"clinician_scale:{criterion}"]
        assert alert.evidence["scale"] == "clinician" and alert.evidence["criterion"] == criterion
        assert alert.evidence["estimate"] < NULL
        assert f"on the clinician scale, {criterion} now rates" in alert.summary
    assert all(s is not None and s.n > 300 for s in streams)  # the closed weeks' answers, every one of them
    # every queued answer carries the probability it was drawn with, never zero
    assert items and all(i.inclusion_probability is not None and i.inclusion_probability >= 0.05 for i in items)


def test_a_jury_that_drifts_while_the_answers_do_not_raises_judge_alerts_and_no_clinician_scale_alarm(
    engine: Engine,
) -> None:
    plan = _plan()
    drifting_jury = lambda week: 5 if week < 2 else 2  # noqa: E731  (the judges turn severe; the answers are as good)
    rules = _run_weeks(engine, plan, 6, jury=drifting_jury, clinician=_good)
    assert "clinician_scale_drop" not in rules
    assert "judge_bias" in rules  # the judges, not the answers, moved: a judge incident
    with Session(engine) as s:
        streams = [s.get(DetectorState, stream_key(TASK, c)) for c in CRITERIA]
    assert all(s is not None and s.n > 600 for s in streams)


def test_a_drop_on_one_criterion_alarms_that_criterion_only(engine: Engine) -> None:
    plan = _plan()
    bad = lambda week, rng: _good(week, rng) if week < 2 else rng.choice((2, 2, 3, 3, 1))  # noqa: E731
    _run_weeks(engine, plan, 6, jury=lambda week: 5, clinician=_good, worse_on=bad, criterion="completeness")
    with Session(engine) as s:
        fired = {a.labels["metric"] for a in open_alerts(s) if a.rule == "clinician_scale_drop"}
        streams = {c: s.get(DetectorState, stream_key(TASK, c)) for c in CRITERIA}
    assert fired == {"clinician_scale:completeness"}  # the criterion clinicians rate lower, not the others
    with Session(engine) as s:
        [row] = [r for r in task_overview(s, plan) if r.task == TASK]
    assert "Clinicians would rate the answers lower than the task's null on completeness" in row.reasons
    assert all(st is not None for st in streams.values())
    estimates = {c: st.state["estimate"]["estimate"] for c, st in streams.items() if st is not None}
    assert estimates["completeness"] < NULL < min(estimates["accuracy"], estimates["clarity"])


def test_active_selection_draws_more_where_the_judges_disagree(engine: Engine) -> None:
    plan = _plan()
    split = lambda i, judge, criterion: 5 if i % 2 == 0 else (1 if judge == "judge-a" else 5)  # noqa: E731
    with session_scope(engine) as s:
        _score_stream(s)
        store_answers(s, TASK, 600, MONDAY, judge_score=split)
        oversight_pass(s, plan, MONDAY + timedelta(hours=2))
    with Session(engine) as s:
        items = s.exec(select(ReviewItem)).all()
        answers = {r.id: r for r in s.exec(select(ProbeResult)).all()}
    disagreed = [i for i in items if int(answers[i.result_id].canary_id[1:]) % 2 == 1]
    agreed = [i for i in items if int(answers[i.result_id].canary_id[1:]) % 2 == 0]
    assert len(disagreed) > 1.5 * len(agreed) > 0
    low = residual_scale(1.0, 1.0, NULL)
    assert all(i.inclusion_probability == pytest.approx(0.2 * low) for i in agreed)  # no week before: mean scale 1


def test_agreement_figures_on_actively_drawn_answers_are_krippendorffs(engine: Engine) -> None:
    plan = _plan()
    _run_weeks(engine, plan, 1, jury=lambda week: 5, clinician=_good)
    with Session(engine) as s:
        stats = {(a.statistic, a.criterion): a for a in task_agreement(s, TASK, window=500, min_items=3)}
        rows = [r for r in rated(s, TASK, 500) if r.criterion == "accuracy" and r.judges]
    matrix: Any = np.array([[r.jury_mean for r in rows], [r.clinician_mean for r in rows]], dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert stats[("jury_alpha", "accuracy")].value == pytest.approx(expected)


def _fooled(engine: Engine, plan: Plan) -> None:
    bad = lambda week, rng: _good(week, rng) if week < 2 else rng.choice((2, 2, 3, 3, 1))  # noqa: E731
    _run_weeks(engine, plan, 6, jury=lambda week: 5, clinician=bad)


def test_the_committee_report_shows_the_clinician_scale_beside_the_jury_and_medhelm(
    engine: Engine, tmp_path: Any
) -> None:
    from medmon.monitor.governance.reports.committee import build_committee_report
    from medmon.monitor.governance.reports.period import parse_period
    from medmon.monitor.governance.reports.render import render_committee

    plan = _plan()
    _fooled(engine, plan)
    with Session(engine) as s:
        report = build_committee_report(s, plan, parse_period("2026-11"), now=MONDAY + timedelta(days=43))
    section = report.summary()["human_oversight"]["clinician_scale"]
    assert section["active"] and [r["criterion"] for r in section["rows"]] == list(CRITERIA)  # one row per criterion
    for row in section["rows"]:
        assert row["task_id"] == TASK and row["alarm"] is True
        assert row["clinician"] < row["null"] < row["jury"]  # the jury is fooled; the clinician scale is not
        assert row["ratings"] > 0 and row["ratings_needed"] is not None and row["medhelm_icc"] == 0.47
    page = render_committee(report)
    assert "On the clinician scale" in page and 'id="clinician-scale"' in page and "below the null" in page
    assert all(f"<td>{c}</td>" in page for c in CRITERIA)
    (tmp_path / "report.html").write_text(page)


def test_a_stream_held_back_by_a_rating_past_its_due_date_says_how_many_it_waits_for(engine: Engine) -> None:
    plan = _plan()  # rating_due: 7d, the default
    with session_scope(engine) as s:
        _score_stream(s)
        store_answers(s, TASK, 150, MONDAY, judge_score=lambda i, j, c: 5)
        oversight_pass(s, plan, MONDAY + timedelta(days=6))  # Sunday: the week's draw is queued
    with session_scope(engine) as s:
        items = s.exec(select(ReviewItem).order_by(col(ReviewItem.result_id))).all()
        assert len(items) > 3
        for item in items[2:]:  # the first two drawn answers are never rated
            scores = {c: 4 for c in CRITERIA}
            record_review(
                s, plan, item_id=item.id or 0, reviewer=item.reviewer, scores=scores, note="",
                safety_concern=False, actor=item.reviewer, now=MONDAY + timedelta(days=6, hours=1),
            )  # fmt: skip
        unrated = [i.id or 0 for i in items[:2]]

    def waiting(at: datetime) -> list[Alert]:
        with session_scope(engine) as s:
            oversight_pass(s, plan, at)
        with Session(engine) as s:
            return [a for a in open_alerts(s) if a.rule == "clinician_scale_waiting"]

    assert waiting(MONDAY + timedelta(days=7, minutes=5)) == []  # not due yet: the stream just waits
    [notice] = waiting(MONDAY + timedelta(days=13, hours=1))  # a week after it was queued: due
    assert notice.evidence["n"] == 2 and "wait for 2 ratings past their due date" in notice.summary
    assert notice.severity != "critical"  # operational: at most a warning
    with Session(engine) as s:
        streams = [s.get(DetectorState, stream_key(TASK, c)) for c in CRITERIA]
        assert all(st is not None and st.n < 150 for st in streams)  # held at the first unrated answer
    with session_scope(engine) as s:
        for item_id in unrated:
            item = s.get(ReviewItem, item_id)
            assert item is not None
            record_review(
                s, plan, item_id=item_id, reviewer=item.reviewer, scores={c: 4 for c in CRITERIA}, note="",
                safety_concern=False, actor=item.reviewer, now=MONDAY + timedelta(days=13, hours=2),
            )  # fmt: skip
    assert waiting(MONDAY + timedelta(days=13, hours=3)) == []  # the ratings arrived: the notice clears
    with Session(engine) as s:
        streams = [s.get(DetectorState, stream_key(TASK, c)) for c in CRITERIA]
        assert all(st is not None and st.n == 150 for st in streams)  # and the streams caught up with the week


def test_the_overall_stream_of_earlier_versions_gives_way_to_the_streams_per_criterion(engine: Engine) -> None:
    plan = _plan()
    with session_scope(engine) as s:
        _score_stream(s)
        old = DetectorState(
            key=f"{TASK}:clinician_scale:drop", task_id=TASK, metric="clinician_scale", direction="drop",
            null_mean=NULL, baseline_mean=NULL, threshold=2e5, status=StreamStatus.degraded,
        )  # fmt: skip
        s.add(old)
        store_answers(s, TASK, 30, MONDAY, judge_score=lambda i, j, c: 5)
        oversight_pass(s, plan, MONDAY + timedelta(days=6))
    with Session(engine) as s:
        assert s.get(DetectorState, f"{TASK}:clinician_scale:drop") is None
        assert all(s.get(DetectorState, stream_key(TASK, c)) is not None for c in CRITERIA)
