"""What the Jury and Clinician review pages and the committee report show of the clinician scale.

Per reviewed task: the clinician-scale estimate with its confidence sequence (as the prediction-powered
stream, ``medmon.monitor.alerting.clinician_scale``, stored it at its last pass), the jury's own
mean over the same weeks, the
jury-clinician ICC beside MedHELM's 0.47, and what the queue needs next: the ratings a target
half-width of the clinician-scale interval needs (the estimator's variance bound,
``medmon.monitor.governance.selection.labels_for_half_width``) and the answers an ICC interval of
width 0.3 needs (Bonett 2002). Read-only.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session, col, select

from medmon.monitor.governance.clinician_agreement import latest_agreements
from medmon.monitor.governance.review import reviewed_tasks, rubric
from medmon.monitor.governance.selection import labels_for_half_width, labels_for_icc
from medmon.monitor.models import ClinicianReview, DetectorState, StreamStatus
from medmon.monitor.plan.model import Plan, Task
from medmon.monitor.plan.oversight import MEDHELM_JURY_ICC
from medmon.probes.models import ProbeResult

METRIC = "clinician_scale"  # the clinician-scale stream's metric (alerts/catalogue.py)
ICC_WIDTH = 0.3  # the full width of the ICC interval the queue aims for
PERIOD = timedelta(days=28)


def active_tasks(plan: Plan) -> list[Task]:
    """Reviewed tasks whose answers are drawn with known probabilities (answers the jury scored count)."""
    if plan.oversight.review.selection != "active":
        return []
    return reviewed_tasks(plan)


def stream_key(task_id: str) -> str:
    """The clinician-scale stream's ``DetectorState`` key."""
    return f"{task_id}:{METRIC}:drop"


@dataclass(frozen=True)
class ClinicianScale:
    """One task's clinician-scale figures, in the rubric's points (1-5 by default)."""

    task_id: str
    clinician: float | None  # the clinician-scale estimate since the stream's last alarm or start
    ci_low: float | None
    ci_high: float | None
    answers: int  # answers behind the estimate
    ratings: int  # clinicians' ratings among them
    jury: float | None  # the jury's own mean over the last four weeks
    null: float | None  # the task's null, in points
    alarm: bool
    icc: float | None  # the latest jury-clinician ICC (first criterion), beside MedHELM's
    medhelm_icc: float
    ratings_needed: int | None  # more ratings for the target half-width (None: unreachable at this volume)
    icc_answers_needed: int  # more rated answers for an ICC interval of width ICC_WIDTH
    target_half_width: float  # in points
    icc_width: float = ICC_WIDTH


def clinician_scale(session: Session, plan: Plan, now: datetime) -> list[ClinicianScale]:
    """The figures of every task under active selection (none when the plan does not select actively)."""
    _, low, high = rubric(plan.jury)
    span = high - low
    out = []
    icc = {
        a.task_id: a.value
        for a in sorted(latest_agreements(session), key=lambda a: a.criterion, reverse=True)
        if a.statistic == "jury_icc"
    }
    for task in active_tasks(plan):
        state = session.get(DetectorState, stream_key(task.id))
        mean = lo = hi = None
        answers = ratings = 0
        stored = state.state.get("estimate") if state is not None else None
        if stored and stored["n"]:
            answers, ratings = int(stored["n"]), int(stored["labels"])
            mean, lo, hi = (low + stored[k] * span for k in ("estimate", "ci_low", "ci_high"))
        since = now - PERIOD
        jury_scores = [
            (v - low) / span
            for v in session.exec(
                select(ProbeResult.jury_mean).where(
                    ProbeResult.task_id == task.id,
                    col(ProbeResult.jury_mean).is_not(None),
                    col(ProbeResult.created_at) >= since,
                )
            ).all()
            if v is not None
        ]
        residuals = _residuals(session, task.id, low, span)
        have = len(residuals)
        target = plan.oversight.review.target_half_width
        needed: int | None = None
        if len(jury_scores) >= 2 and have >= 2:
            total = labels_for_half_width(
                target, statistics.pvariance(residuals), statistics.pvariance(jury_scores), len(jury_scores)
            )
            needed = None if total is None else max(0, total - have)
        task_icc = icc.get(task.id)
        icc_total = labels_for_icc(task_icc if task_icc is not None else MEDHELM_JURY_ICC, ICC_WIDTH)
        out.append(
            ClinicianScale(
                task_id=task.id,
                clinician=mean,
                ci_low=lo,
                ci_high=hi,
                answers=answers,
                ratings=ratings,
                jury=low + statistics.fmean(jury_scores) * span if jury_scores else None,
                null=low + state.null_mean * span if state is not None else None,
                alarm=state is not None and state.status == StreamStatus.degraded,
                icc=task_icc,
                medhelm_icc=MEDHELM_JURY_ICC,
                ratings_needed=needed,
                icc_answers_needed=max(0, icc_total - have),
                target_half_width=target * span,
            )
        )
    return out


def _residuals(session: Session, task_id: str, low: float, span: float) -> list[float]:
    """Clinician minus jury on the 0-1 scale for the task's rated answers."""
    rows = session.exec(
        select(ClinicianReview.scores, ProbeResult.jury_mean)
        .join(ProbeResult, col(ProbeResult.id) == col(ClinicianReview.result_id))
        .where(ClinicianReview.task_id == task_id, col(ProbeResult.jury_mean).is_not(None))
    ).all()
    out = []
    for scores, jury in rows:
        values = [float(v) for v in scores.values()]
        if values and jury is not None:
            out.append((sum(values) / len(values) - low) / span - (jury - low) / span)
    return out
