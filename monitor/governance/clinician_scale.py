"""What the Jury and Clinician review pages and the committee report show of the clinician scale.

Per reviewed task and rubric criterion (the jury's criteria: accuracy, completeness, clarity by default):
the clinician-scale estimate with its confidence sequence (as that criterion's prediction-powered stream,
``medmon.monitor.alerting.clinician_scale``, stored it at its last pass), the jury's own mean on the
criterion over the last four weeks, the jury-clinician ICC on the criterion beside MedHELM's 0.47, and
what the queue needs next: the ratings a target half-width of the clinician-scale interval needs (the
estimator's variance bound, ``medmon.monitor.governance.selection.labels_for_half_width``) and the
answers an ICC interval of width 0.3 needs (Bonett 2002). Read-only.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session, col, select

from medmon.monitor.governance.clinician_agreement import VALID, latest_agreements
from medmon.monitor.governance.review import reviewed_tasks, rubric
from medmon.monitor.governance.selection import labels_for_half_width, labels_for_icc
from medmon.monitor.models import ClinicianReview, DetectorState, StreamStatus
from medmon.monitor.plan.model import Plan, Task
from medmon.monitor.plan.oversight import MEDHELM_JURY_ICC
from medmon.probes.models import JuryVerdict

METRIC = "clinician_scale"  # the clinician-scale streams' metric (alerts/catalogue.py: one kind)
ICC_WIDTH = 0.3  # the full width of the ICC interval the queue aims for
PERIOD = timedelta(days=28)


def active_tasks(plan: Plan) -> list[Task]:
    """Reviewed tasks whose answers are drawn with known probabilities (answers the jury scored count)."""
    if plan.oversight.review.selection != "active":
        return []
    return reviewed_tasks(plan)


def stream_key(task_id: str, criterion: str) -> str:
    """The ``DetectorState`` key of one task's clinician-scale stream on one rubric criterion."""
    return f"{task_id}:{METRIC}:{criterion}:drop"


def alert_metric(criterion: str) -> str:
    """The alert label naming the criterion, as the agreement alerts do (``jury_icc:accuracy``)."""
    return f"{METRIC}:{criterion}"


def criterion_jury(session: Session, result_ids: Iterable[int]) -> dict[int, dict[str, float]]:
    """Each answer's jury mean per criterion, in rubric points, over the judges' valid verdicts."""
    ids = list(result_ids)
    scores: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for start in range(0, len(ids), 500):
        for result_id, criterion, score in session.exec(
            select(JuryVerdict.result_id, JuryVerdict.criterion, JuryVerdict.score).where(
                col(JuryVerdict.result_id).in_(ids[start : start + 500]),
                col(JuryVerdict.parse_status).in_(VALID),
                col(JuryVerdict.score).is_not(None),
            )
        ).all():
            if score is not None:
                scores[result_id][criterion].append(score)
    return {rid: {c: sum(v) / len(v) for c, v in by.items()} for rid, by in scores.items()}


@dataclass(frozen=True)
class ClinicianScale:
    """One task's clinician-scale figures on one criterion, in the rubric's points (1-5 by default)."""

    task_id: str
    criterion: str
    clinician: float | None  # the clinician-scale estimate since the stream's last alarm or start
    ci_low: float | None
    ci_high: float | None
    answers: int  # answers behind the estimate
    ratings: int  # clinicians' ratings among them
    jury: float | None  # the jury's own mean on the criterion over the last four weeks
    null: float | None  # the criterion's null, in points
    alarm: bool
    icc: float | None  # the latest jury-clinician ICC on the criterion, beside MedHELM's
    medhelm_icc: float
    ratings_needed: int | None  # more ratings for the target half-width (None: unreachable at this volume)
    icc_answers_needed: int  # more rated answers for an ICC interval of width ICC_WIDTH
    target_half_width: float  # in points
    icc_width: float = ICC_WIDTH


def clinician_scale(session: Session, plan: Plan, now: datetime) -> list[ClinicianScale]:
    """The figures of every task under active selection, one per criterion (none when the plan does not
    select actively)."""
    criteria, low, high = rubric(plan.jury)
    span = high - low
    out = []
    icc = {(a.task_id, a.criterion): a.value for a in latest_agreements(session) if a.statistic == "jury_icc"}
    for task in active_tasks(plan):
        if not _jury_scored(session, plan, task.id):
            continue  # a task the jury never scored (multiple choice, say) has no clinician-scale stream
        jury = _recent_jury(session, task.id, now - PERIOD)
        residuals = _residuals(session, task.id, low, span)
        for criterion in criteria:
            state = session.get(DetectorState, stream_key(task.id, criterion))
            mean = lo = hi = None
            answers = ratings = 0
            stored = state.state.get("estimate") if state is not None else None
            if stored and stored["n"]:
                answers, ratings = int(stored["n"]), int(stored["labels"])
                mean, lo, hi = (low + stored[k] * span for k in ("estimate", "ci_low", "ci_high"))
            jury_scores = [(v - low) / span for v in jury.get(criterion, [])]
            have = residuals.get(criterion, [])
            target = plan.oversight.review.target_half_width
            needed: int | None = None
            if len(jury_scores) >= 2 and len(have) >= 2:
                total = labels_for_half_width(
                    target, statistics.pvariance(have), statistics.pvariance(jury_scores), len(jury_scores)
                )
                needed = None if total is None else max(0, total - len(have))
            value = icc.get((task.id, criterion))
            icc_total = labels_for_icc(value if value is not None else MEDHELM_JURY_ICC, ICC_WIDTH)
            out.append(
                ClinicianScale(
                    task_id=task.id,
                    criterion=criterion,
                    clinician=mean,
                    ci_low=lo,
                    ci_high=hi,
                    answers=answers,
                    ratings=ratings,
                    jury=low + statistics.fmean(jury_scores) * span if jury_scores else None,
                    null=low + state.null_mean * span if state is not None else None,
                    alarm=state is not None and state.status == StreamStatus.degraded,
                    icc=value,
                    medhelm_icc=MEDHELM_JURY_ICC,
                    ratings_needed=needed,
                    icc_answers_needed=max(0, icc_total - len(have)),
                    target_half_width=target * span,
                )
            )
    return out


def _jury_scored(session: Session, plan: Plan, task_id: str) -> bool:
    """Whether the task has a clinician-scale stream or an answer the jury scored."""
    criteria = rubric(plan.jury)[0]
    if any(session.get(DetectorState, stream_key(task_id, c)) is not None for c in criteria):
        return True
    return session.exec(select(JuryVerdict.id).where(JuryVerdict.task_id == task_id).limit(1)).first() is not None


def _recent_jury(session: Session, task_id: str, since: datetime) -> dict[str, list[float]]:
    """Each answer's jury mean per criterion, in points, for the task's answers judged since ``since``."""
    ids = session.exec(
        select(JuryVerdict.result_id)
        .where(JuryVerdict.task_id == task_id, col(JuryVerdict.created_at) >= since)
        .distinct()
    ).all()
    out: dict[str, list[float]] = defaultdict(list)
    for by in criterion_jury(session, ids).values():
        for criterion, value in by.items():
            out[criterion].append(value)
    return out


def _residuals(session: Session, task_id: str, low: float, span: float) -> dict[str, list[float]]:
    """Clinician minus jury on the 0-1 scale, per criterion, for the task's rated answers."""
    reviews = session.exec(select(ClinicianReview).where(ClinicianReview.task_id == task_id)).all()
    jury = criterion_jury(session, {r.result_id for r in reviews})
    out: dict[str, list[float]] = defaultdict(list)
    for review in reviews:
        for criterion, value in review.scores.items():
            judged = jury.get(review.result_id, {}).get(criterion)
            if judged is not None:
                out[criterion].append((float(value) - judged) / span)
    return out
