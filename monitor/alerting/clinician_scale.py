"""Clinician-scale streams: each reviewed task's jury scores rectified by the clinicians' ratings, per criterion.

Runs inside the oversight pass, where the ratings arrive. For every task under active selection
(``oversight.review.selection: active``) and every criterion of the jury's rubric (accuracy,
completeness, clarity by default) it feeds that criterion's prediction-powered e-detector
(``medmon.monitor.detection.drift.prediction_powered``) with every judged answer of a closed ISO
week, in the order they were stored: the judges' mean score on the criterion, and for an answer
drawn for review the clinicians' mean rating on it and the probability it was drawn with. An answer
still waiting for its rating holds the task's streams back (skipping it would bias the estimate
towards the jury).

The null of a criterion is the task's own (that of its primary score stream) shifted by how far the
jury scored that criterion from its overall mean on the task's judged answers stored before the
stream opened (at least ``NULL_ANSWERS`` of them), so a criterion that always reads lower than the
others is not a drop; it is then tested on the clinician scale. The threshold is a share of a family
of its own: ``probes_between_false_alarms`` times the number of such streams (tasks x criteria), so
the clinician-scale streams together add at most one expected false alarm per that many answers.

A stream raises ``clinician_scale_drop`` (its alert's metric ``clinician_scale:<criterion>``, its
summary naming the criterion and the scale) on an alarm and clears it once the estimate since the
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
from medmon.monitor.governance.clinician_scale import METRIC, active_tasks, alert_metric, criterion_jury, stream_key
from medmon.monitor.governance.review import candidates, rubric, task_null, week_start
from medmon.monitor.models import ClinicianReview, DetectorState, ReviewItem, StreamStatus
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan, Task
from medmon.probes.models import ProbeResult, ProbeRun

SIGMA2 = 0.05  # a clinician's rating's variance on the 0-1 scale, for bet sizes only
RECOVER_AFTER = 30
NULL_ANSWERS = 20  # judged answers a criterion's offset from the task's null is measured on


def _detector(plan: Plan, state: DetectorState) -> PredictionPoweredSR:
    stored = state.state.get("detector")
    return PredictionPoweredSR(
        **state.params, threshold=state.threshold, state=PredictionPoweredState.from_dict(stored) if stored else None
    )


def criterion_null(session: Session, plan: Plan, task_id: str, criterion: str, before: datetime) -> float | None:
    """The criterion's null on the 0-1 scale: the task's, shifted by the jury's offset on the criterion from its
    overall mean over the task's judged answers stored before ``before`` (None while fewer than ``NULL_ANSWERS``)."""
    null = task_null(session, task_id)
    if null is None:
        return None  # no null yet: the task's reference is still being built
    _, low, high = rubric(plan.jury)
    ids = session.exec(
        select(ProbeResult.id).where(
            ProbeResult.task_id == task_id, col(ProbeResult.jury_mean).is_not(None), ProbeResult.created_at < before
        )
    ).all()
    judged = [by for by in criterion_jury(session, [i for i in ids if i is not None]).values() if criterion in by]
    if len(judged) < NULL_ANSWERS:
        return None
    own = sum(by[criterion] for by in judged) / len(judged)
    overall = sum(sum(by.values()) / len(by) for by in judged) / len(judged)
    return min(max(null + (own - overall) / (high - low), 0.01), 0.99)


def _open_state(
    session: Session, plan: Plan, task: Task, criterion: str, now: datetime, streams: int
) -> DetectorState | None:
    key = stream_key(task.id, criterion)
    state = session.get(DetectorState, key)
    if state is not None:
        return state
    null = criterion_null(session, plan, task.id, criterion, now)
    if null is None:
        return None
    threshold = plan.detection.probes_between_false_alarms * max(streams, 1)
    params = {"mu0": null, "sigma2": SIGMA2, "pi_min": plan.oversight.review.min_probability}
    state = DetectorState(
        key=key,
        task_id=task.id,
        metric=METRIC,
        direction="drop",
        null_mean=null,
        baseline_mean=task_null(session, task.id) or null,
        threshold=threshold,
        detector=PredictionPoweredSR.name,
        params=params,
        state={"criterion": criterion, "since": week_start(now).isoformat(), "cursor": 0},
        updated_at=now,
    )
    session.add(state)
    return state


Observation = tuple[float, float | None, float]  # jury (0-1), clinicians' mean (0-1) if drawn, probability


def settled_answers(
    session: Session, plan: Plan, task_id: str, criterion: str, since: datetime, cursor: int, before: datetime
) -> list[tuple[int, Observation]]:
    """The answers after ``cursor`` whose week closed before ``before``, as observations of ``criterion``'s
    detector, up to the first answer still waiting for a rating."""
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
    jury = criterion_jury(session, ids)
    if ids:
        for item in session.exec(select(ReviewItem).where(col(ReviewItem.result_id).in_(ids))).all():
            items[item.result_id].append(item)
        for review in session.exec(select(ClinicianReview).where(col(ClinicianReview.result_id).in_(ids))).all():
            if criterion in review.scores:
                ratings[review.result_id].append((float(review.scores[criterion]) - low) / (high - low))
    out: list[tuple[int, Observation]] = []
    for r in rows:
        assert r.id is not None
        judged = jury.get(r.id, {}).get(criterion)
        if judged is None:
            out.append((r.id, (float("nan"), None, 1.0)))  # unjudged on this criterion: no information, but settled
            continue
        score = (judged - low) / (high - low)
        queued = [i for i in items[r.id] if i.inclusion_probability is not None]
        if not queued:
            out.append((r.id, (score, None, 1.0)))
            continue
        if any(i.status != "done" for i in queued):
            break  # its rating is still to come: the stream waits here
        rated = ratings[r.id]
        mean = sum(rated) / len(rated) if rated else None  # a rating that skipped the criterion: the jury's only
        out.append(
            (r.id, (score, mean, queued[0].inclusion_probability or 1.0) if mean is not None else (score, None, 1.0))
        )
    return out


def clinician_scale_signals(session: Session, plan: Plan, now: datetime) -> list[Signal]:
    """Advance each active task's clinician-scale stream on every criterion; an alarm's or a recovery's signal."""
    tasks = active_tasks(plan)
    criteria = rubric(plan.jury)[0]
    out: list[Signal] = []
    for task in tasks:
        subject = task_subject(plan, task)
        out += _retire_overall(session, subject, task.id)
        cursor: int | None = None
        for criterion in criteria:
            state = _open_state(session, plan, task, criterion, now, len(tasks) * len(criteria))
            if state is None:
                continue
            signal = _advance(session, plan, subject, state, criterion, now)
            if signal is not None:
                out.append(signal)
            cursor = int(state.state["cursor"]) if cursor is None else min(cursor, int(state.state["cursor"]))
        if cursor is not None:
            out.append(_waiting(session, plan, subject, task.id, cursor, now))
    session.flush()
    return out


def _retire_overall(session: Session, subject: Subject, task_id: str) -> list[Signal]:
    """The task's one overall clinician-scale stream of earlier versions (``TASK:clinician_scale:drop``), replaced by
    the streams per criterion: its row removed and its alert, if any, cleared."""
    old = session.get(DetectorState, f"{task_id}:{METRIC}:drop")
    if old is None:
        return []
    session.delete(old)
    summary = f"{subject.name}: the overall clinician-scale stream is replaced by one stream per rubric criterion"
    return [subject.signal(Rule.clinician_scale_drop, METRIC, firing=False, summary=summary)]


def _advance(
    session: Session, plan: Plan, subject: Subject, state: DetectorState, criterion: str, now: datetime
) -> Signal | None:
    detector = _detector(plan, state)
    since = datetime.fromisoformat(state.state["since"])
    answers = settled_answers(
        session, plan, state.task_id, criterion, since, int(state.state["cursor"]), week_start(now)
    )
    if not answers:
        return None
    signal: Signal | None = None
    for result_id, obs in answers:
        finding = detector.update(obs)
        if finding is not None:
            state.status = StreamStatus.degraded
            signal = _alarm(subject, criterion, finding.evidence(), plan)
        elif state.status == StreamStatus.degraded:
            mean, _, _, n = detector.estimate()
            if n >= RECOVER_AFTER and detector.holds(mean):
                state.status = StreamStatus.ok
                signal = subject.signal(
                    Rule.clinician_scale_drop,
                    alert_metric(criterion),
                    firing=False,
                    evidence=_evidence(detector, plan, criterion),
                    summary=f"{subject.name}: on the clinician scale, {criterion} is back at its null "
                    f"({_points(mean, plan):.2f} of {_points(detector.mu0, plan):.2f}, n={n})",
                )
        state.state = {**state.state, "cursor": result_id}
    state.state = {
        **state.state,
        "detector": detector.state.to_dict(),
        "estimate": _evidence(detector, plan, criterion),
    }
    state.evidence, state.n, state.updated_at = detector.evidence, detector.seen, now
    session.add(state)
    return signal


def _waiting(session: Session, plan: Plan, subject: Subject, task_id: str, cursor: int, now: datetime) -> Signal:
    """``clinician_scale_waiting``: firing while drawn answers the task's streams have not passed are unrated past
    their due date (``oversight.review.rating_due`` after they were queued); cleared once none is."""
    due = parse_interval(plan.oversight.review.rating_due)
    late = session.exec(
        select(ReviewItem)
        .where(
            ReviewItem.task_id == task_id,
            ReviewItem.status == "open",
            col(ReviewItem.inclusion_probability).is_not(None),
            col(ReviewItem.result_id) > cursor,
            col(ReviewItem.queued_at) < now - due,
        )
        .order_by(col(ReviewItem.queued_at))
    ).all()
    metric = "clinician_scale_waiting"
    if not late:
        summary = f"{subject.name}: the clinician-scale streams have every rating they waited for"
        return subject.signal(Rule.clinician_scale_waiting, metric, firing=False, summary=summary, evidence={"n": 0})
    reviewers = sorted({i.reviewer for i in late})
    oldest = late[0].queued_at
    evidence = {
        "n": len(late),
        "reviewers": reviewers,
        "oldest_queued_at": oldest.isoformat(),
        "due_after": plan.oversight.review.rating_due,
        "stopped_after_result": cursor,
    }
    return subject.signal(
        Rule.clinician_scale_waiting,
        metric,
        firing=True,
        evidence=evidence,
        summary=f"{subject.name}: the clinician-scale streams wait for {len(late)} ratings past their due date "
        f"(queued since {oldest:%Y-%m-%d}, due within {plan.oversight.review.rating_due}; "
        f"{', '.join(reviewers)}): until they arrive the clinician scale is not watched",
    )


def _points(value: float, plan: Plan) -> float:
    """A 0-1 value in the rubric's own points (1-5 by default)."""
    _, low, high = rubric(plan.jury)
    return low + value * (high - low)


def _evidence(detector: PredictionPoweredSR, plan: Plan, criterion: str) -> dict[str, Any]:
    mean, low, high, n = detector.estimate()
    return {
        "scale": "clinician",
        "criterion": criterion,
        "estimate": mean,
        "ci_low": low,
        "ci_high": high,
        "n": n,
        "labels": detector.state.labels,
        "null_mean": detector.mu0,
        "points": [_points(v, plan) for v in (mean, low, high)],
    }


def _alarm(subject: Subject, criterion: str, evidence: dict[str, Any], plan: Plan) -> Signal:
    est, low, high = (_points(evidence[k], plan) for k in ("estimate", "ci_low", "ci_high"))
    null = _points(evidence["null_mean"], plan)
    return subject.signal(
        Rule.clinician_scale_drop,
        alert_metric(criterion),
        firing=True,
        evidence={**evidence, "scale": "clinician", "criterion": criterion},
        summary=f"{subject.name}: on the clinician scale, {criterion} now rates {est:.2f} (95% {low:.2f} to "
        f"{high:.2f}, n={evidence['n']}) against its null {null:.2f}: clinicians, not only the jury, "
        "would see the drop",
    )
