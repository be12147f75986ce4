"""Clinician-scale streams: each reviewed task's jury scores rectified by the clinicians' ratings.

Runs inside the oversight pass, where the ratings arrive. For every task under active selection
(``oversight.review.selection: active``) it feeds the task's prediction-powered e-detector
(``medmon.monitor.detection.drift.prediction_powered``) with every judged answer of a closed ISO
week, in the order they were stored: the jury's mean score, and for an answer drawn for review the
clinicians' mean rating and the probability it was drawn with. An answer still waiting for its
rating holds the stream back (skipping it would bias the estimate towards the jury). The null is
the task's own (that of its primary score stream), now tested on the clinician scale; the threshold
is a share of a family of its own: ``probes_between_false_alarms`` times the number of such tasks,
so the clinician-scale streams together add at most one expected false alarm per that many answers.

The stream raises ``clinician_scale_drop`` on an alarm and clears it once the estimate since the
alarm is back at the null over at least ``RECOVER_AFTER`` answers. A stream held back by drawn answers
whose ratings are past ``oversight.review.rating_due`` is not silent: ``clinician_scale_waiting`` says
how many ratings it waits for and from whom, until they arrive.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon.alerts import Rule, Signal, Subject
from medmon.monitor.alerting.signals import task_subject
from medmon.monitor.detection.drift.prediction_powered import PredictionPoweredSR, PredictionPoweredState
from medmon.monitor.governance.clinician_scale import METRIC, active_tasks, stream_key
from medmon.monitor.governance.review import candidates, rubric, task_null, week_start
from medmon.monitor.models import ClinicianReview, DetectorState, ReviewItem, StreamStatus
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan, Task
from medmon.probes.models import ProbeResult, ProbeRun

SIGMA2 = 0.05  # a clinician's rating's variance on the 0-1 scale, for bet sizes only
RECOVER_AFTER = 30


def _detector(plan: Plan, state: DetectorState) -> PredictionPoweredSR:
    stored = state.state.get("detector")
    return PredictionPoweredSR(
        **state.params, threshold=state.threshold, state=PredictionPoweredState.from_dict(stored) if stored else None
    )


def _open_state(session: Session, plan: Plan, task: Task, now: datetime, tasks: int) -> DetectorState | None:
    key = stream_key(task.id)
    state = session.get(DetectorState, key)
    if state is not None:
        return state
    null = task_null(session, task.id)
    if null is None:
        return None  # no null yet: the task's reference is still being built
    threshold = plan.detection.probes_between_false_alarms * max(tasks, 1)
    params = {"mu0": null, "sigma2": SIGMA2, "pi_min": plan.oversight.review.min_probability}
    state = DetectorState(
        key=key,
        task_id=task.id,
        metric=METRIC,
        direction="drop",
        null_mean=null,
        baseline_mean=null,
        threshold=threshold,
        detector=PredictionPoweredSR.name,
        params=params,
        state={"since": week_start(now).isoformat(), "cursor": 0},
        updated_at=now,
    )
    session.add(state)
    return state


def settled_answers(
    session: Session, plan: Plan, task_id: str, since: datetime, cursor: int, before: datetime
) -> list[tuple[int, tuple[float, float | None, float]]]:
    """The answers after ``cursor`` whose week closed before ``before``, as detector observations, up to
    the first answer still waiting for a rating."""
    _, low, high = rubric(plan.jury)
    joined = col(ProbeRun.id) == col(ProbeResult.run_id)
    rows = session.exec(
        select(ProbeResult)
        .join(ProbeRun, joined)
        .where(*candidates(task_id, since, before), col(ProbeResult.id) > cursor, ProbeResult.created_at < before)
        .order_by(col(ProbeResult.id))
    ).all()
    ids = [r.id for r in rows if r.id is not None]
    items: dict[int, list[ReviewItem]] = defaultdict(list)
    ratings: dict[int, list[float]] = defaultdict(list)
    if ids:
        for item in session.exec(select(ReviewItem).where(col(ReviewItem.result_id).in_(ids))).all():
            items[item.result_id].append(item)
        for review in session.exec(select(ClinicianReview).where(col(ClinicianReview.result_id).in_(ids))).all():
            values = [float(v) for v in review.scores.values()]
            ratings[review.result_id].append((sum(values) / len(values) - low) / (high - low))
    out: list[tuple[int, tuple[float, float | None, float]]] = []
    for r in rows:
        assert r.id is not None
        if r.jury_mean is None:
            out.append((r.id, (float("nan"), None, 1.0)))  # unjudged: no information, but settled
            continue
        jury = (r.jury_mean - low) / (high - low)
        queued = [i for i in items[r.id] if i.inclusion_probability is not None]
        if not queued:
            out.append((r.id, (jury, None, 1.0)))
            continue
        if any(i.status != "done" for i in queued):
            break  # its rating is still to come: the stream waits here
        rated = ratings[r.id]
        out.append((r.id, (jury, sum(rated) / len(rated), queued[0].inclusion_probability or 1.0)))
    return out


def clinician_scale_signals(session: Session, plan: Plan, now: datetime) -> list[Signal]:
    """Advance each active task's clinician-scale stream; an alarm's or a recovery's signal."""
    tasks = active_tasks(plan)
    out: list[Signal] = []
    for task in tasks:
        state = _open_state(session, plan, task, now, len(tasks))
        if state is None:
            continue
        detector = _detector(plan, state)
        since = datetime.fromisoformat(state.state["since"])
        answers = settled_answers(session, plan, task.id, since, int(state.state["cursor"]), week_start(now))
        subject = task_subject(plan, task)
        out.append(_waiting(session, plan, subject, state, now))
        if not answers:
            continue
        signal: Signal | None = None
        for result_id, obs in answers:
            finding = detector.update(obs)
            if finding is not None:
                state.status = StreamStatus.degraded
                signal = _alarm(subject, finding.evidence(), plan)
            elif state.status == StreamStatus.degraded:
                mean, _, _, n = detector.estimate()
                if n >= RECOVER_AFTER and detector.holds(mean):
                    state.status = StreamStatus.ok
                    signal = subject.signal(
                        Rule.clinician_scale_drop,
                        METRIC,
                        firing=False,
                        evidence=_evidence(detector, plan),
                        summary=f"{subject.name}: on the clinician scale the answers are back at the null "
                        f"({_points(mean, plan):.2f} of {_points(detector.mu0, plan):.2f}, n={n})",
                    )
            state.state = {**state.state, "cursor": result_id}
        state.state = {**state.state, "detector": detector.state.to_dict(), "estimate": _evidence(detector, plan)}
        state.evidence, state.n, state.updated_at = detector.evidence, detector.seen, now
        session.add(state)
        if signal is not None:
            out.append(signal)
    session.flush()
    return out


def _waiting(session: Session, plan: Plan, subject: Subject, state: DetectorState, now: datetime) -> Signal:
    """``clinician_scale_waiting``: firing while drawn answers the stream has not passed are unrated past their
    due date (``oversight.review.rating_due`` after they were queued); cleared once none is."""
    due = parse_interval(plan.oversight.review.rating_due)
    late = session.exec(
        select(ReviewItem)
        .where(
            ReviewItem.task_id == state.task_id,
            ReviewItem.status == "open",
            col(ReviewItem.inclusion_probability).is_not(None),
            col(ReviewItem.result_id) > int(state.state.get("cursor", 0)),
            col(ReviewItem.queued_at) < now - due,
        )
        .order_by(col(ReviewItem.queued_at))
    ).all()
    metric = "clinician_scale_waiting"
    if not late:
        summary = f"{subject.name}: the clinician-scale stream has every rating it waited for"
        return subject.signal(Rule.clinician_scale_waiting, metric, firing=False, summary=summary, evidence={"n": 0})
    reviewers = sorted({i.reviewer for i in late})
    oldest = late[0].queued_at
    evidence = {
        "n": len(late),
        "reviewers": reviewers,
        "oldest_queued_at": oldest.isoformat(),
        "due_after": plan.oversight.review.rating_due,
        "stopped_after_result": int(state.state.get("cursor", 0)),
    }
    return subject.signal(
        Rule.clinician_scale_waiting,
        metric,
        firing=True,
        evidence=evidence,
        summary=f"{subject.name}: the clinician-scale stream waits for {len(late)} ratings past their due date "
        f"(queued since {oldest:%Y-%m-%d}, due within {plan.oversight.review.rating_due}; "
        f"{', '.join(reviewers)}): until they arrive the clinician scale is not watched",
    )


def _points(value: float, plan: Plan) -> float:
    """A 0-1 value in the rubric's own points (1-5 by default)."""
    _, low, high = rubric(plan.jury)
    return low + value * (high - low)


def _evidence(detector: PredictionPoweredSR, plan: Plan) -> dict[str, Any]:
    mean, low, high, n = detector.estimate()
    return {
        "scale": "clinician",
        "estimate": mean,
        "ci_low": low,
        "ci_high": high,
        "n": n,
        "labels": detector.state.labels,
        "null_mean": detector.mu0,
        "points": [_points(v, plan) for v in (mean, low, high)],
    }


def _alarm(subject: Subject, evidence: dict[str, Any], plan: Plan) -> Signal:
    est, low, high = (_points(evidence[k], plan) for k in ("estimate", "ci_low", "ci_high"))
    null = _points(evidence["null_mean"], plan)
    return subject.signal(
        Rule.clinician_scale_drop,
        METRIC,
        firing=True,
        evidence={**evidence, "scale": "clinician"},
        summary=f"{subject.name}: on the clinician scale the answers now rate {est:.2f} (95% {low:.2f} to "
        f"{high:.2f}, n={evidence['n']}) against the null {null:.2f}: clinicians, not only the jury, "
        "would see the drop",
    )
