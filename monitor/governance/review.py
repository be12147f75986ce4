"""The clinician review queue: stored answers sampled for named reviewers, and their ratings.

Each pass (the service runs one with every alert pass) looks at the answers stored this ISO week
for each task under review and queues up to ``min(weekly_quota, ceil(rate x answers))`` of them,
drawn evenly across strata so that rare subgroups, low jury scores and answers the judges
disagreed on are seen, not only the common case. A share (``double_rate``) goes to two reviewers
so reviewer-reviewer agreement can be measured. A reviewer rates an answer on the jury's own
rubric (same criteria, same scale), may add a note and may flag a safety concern; the rating is
recorded in the audit log in the same transaction.

With ``selection: active`` each answer is instead drawn with its own known probability
(``medmon.monitor.governance.selection``), stored with the queued item, so the clinician-scale
estimators can weight every rating by it; double review is drawn the same reproducible way.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, func, select

from medmon.db import as_utc
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, record
from medmon.monitor.governance.selection import active_draw, residual_scale, uniform
from medmon.monitor.models import ClinicianReview, DetectorState, ReviewItem
from medmon.monitor.plan.model import Jury, Plan, Task
from medmon.monitor.plan.oversight import Oversight
from medmon.probes.models import ProbeResult, ProbeRun

DEFAULT_CRITERIA = ("accuracy", "completeness", "clarity")


def rubric(jury: Jury | None) -> tuple[tuple[str, ...], int, int]:
    """The jury's criteria and scale, which reviewers rate on too (MedHELM's when there is no jury)."""
    if jury is None:
        return DEFAULT_CRITERIA, 1, 5
    return tuple(jury.criteria), jury.scale_min, jury.scale_max


def reviewed_tasks(plan: Plan) -> list[Task]:
    """Tasks whose answers are sampled: ``human_review_required`` ones and those named in ``review.tasks``."""
    named = set(plan.oversight.review.tasks)
    return [t for t in plan.tasks if t.human_review_required or t.id in named]


def reviewer_tasks(oversight: Oversight, email: str | None) -> list[str]:
    """The tasks ``email`` may review (and see in the queue); none for anyone the plan does not name."""
    address = (email or "").strip().lower()
    for reviewer in oversight.reviewers:
        if reviewer.email.lower() == address:
            return list(reviewer.tasks)
    return []


def iso_week(at: datetime) -> str:
    year, week, _ = as_utc(at).isocalendar()
    return f"{year}-W{week:02d}"


def week_start(at: datetime) -> datetime:
    at = as_utc(at)
    return (at - timedelta(days=at.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)


def stratum_of(result: ProbeResult, task: Task, plan: Plan) -> str:
    """Subgroup x jury-score band x whether the judges agreed, as one readable key."""
    tags = result.tags or {}
    parts = [f"{name}={tags.get(name, '?')}" for name in task.subgroups]
    if result.jury_mean is None:
        parts.append("jury=unjudged")
    else:
        _, low, high = rubric(plan.jury)
        position = (result.jury_mean - low) / (high - low)
        parts.append("jury=" + ("low" if position < 1 / 3 else "mid" if position < 2 / 3 else "high"))
    if result.jury_agreement is not None:
        disagree = result.jury_agreement < plan.oversight.review.disagreement_below
        parts.append("judges=" + ("disagree" if disagree else "agree"))
    return " · ".join(parts)


def _draw(strata: Mapping[str, list[ProbeResult]], k: int, rng: random.Random) -> list[tuple[str, ProbeResult]]:
    """``k`` answers spread evenly over the strata: one from each in turn, random within each."""
    pools = {key: rng.sample(rows, len(rows)) for key, rows in sorted(strata.items())}
    picked: list[tuple[str, ProbeResult]] = []
    while len(picked) < k and any(pools.values()):
        for key in list(pools):
            if pools[key] and len(picked) < k:
                picked.append((key, pools[key].pop()))
    return picked


def _load(session: Session, reviewers: list[str]) -> dict[str, int]:
    rows = session.exec(
        select(ReviewItem.reviewer, func.count())
        .where(ReviewItem.status == "open", col(ReviewItem.reviewer).in_(reviewers))
        .group_by(ReviewItem.reviewer)
    ).all()
    counts = {r: 0 for r in reviewers}
    counts.update({r: int(n) for r, n in rows})
    return counts


def candidates(task_id: str, start: datetime, end: datetime) -> tuple[Any, ...]:
    """The conditions on a stored answer of ``task_id`` that may go to a reviewer (with ProbeRun joined)."""
    return (
        ProbeResult.task_id == task_id,
        col(ProbeResult.created_at) >= start,
        col(ProbeResult.created_at) <= end,
        col(ProbeResult.answer).is_not(None),
        col(ProbeResult.error).is_(None),
        ProbeRun.purpose != "reevaluation",
    )


def _assign(reviewers: list[str], load: dict[str, int], double: bool) -> list[str]:
    chosen = sorted(reviewers, key=lambda r: (load[r], reviewers.index(r)))[: 2 if double else 1]
    for reviewer in chosen:
        load[reviewer] += 1
    return chosen


def task_null(session: Session, task_id: str) -> float | None:
    """The task's null on the 0-1 score scale: that of its primary score stream, once it has one."""
    state = session.get(DetectorState, f"{task_id}:score:drop")
    return state.null_mean if state is not None else None


def _week_answers(session: Session, task_id: str, start: datetime, end: datetime) -> list[ProbeResult]:
    joined = col(ProbeRun.id) == col(ProbeResult.run_id)
    query = select(ProbeResult).join(ProbeRun, joined).where(*candidates(task_id, start, end))
    return list(session.exec(query.order_by(col(ProbeResult.id))).all())


def queue_active(
    session: Session, plan: Plan, task: Task, reviewers: list[str], now: datetime, queued: set[int]
) -> list[ReviewItem]:
    """Active selection: this week's answers each drawn with its known probability; the drawn ones queued."""
    config = plan.oversight.review
    override = config.tasks.get(task.id)
    rate = override.rate if override and override.rate is not None else config.rate
    start, week = week_start(now), iso_week(now)
    null = task_null(session, task.id)

    def scale(r: ProbeResult) -> float:
        return residual_scale(r.jury_agreement, r.score, null)

    last_week = [scale(r) for r in _week_answers(session, task.id, start - timedelta(days=7), start)]
    mean_scale = sum(last_week) / len(last_week) if last_week else 1.0
    answers = {r.id: r for r in _week_answers(session, task.id, start, now) if r.id is not None}
    draws = active_draw(
        task.id,
        [(i, scale(r)) for i, r in answers.items()],
        rate=rate,
        quota=config.quota(task.id),
        floor=config.min_probability,
        mean_scale=mean_scale,
    )
    load = _load(session, reviewers)
    created: list[ReviewItem] = []
    for draw in draws:
        if not draw.drawn or draw.result_id in queued:
            continue
        result = answers[draw.result_id]
        double = len(reviewers) > 1 and uniform(f"double:{task.id}", draw.result_id) < config.double_rate
        for reviewer in _assign(reviewers, load, double):
            item = ReviewItem(
                task_id=task.id,
                result_id=draw.result_id,
                reviewer=reviewer,
                week=week,
                stratum=stratum_of(result, task, plan),
                stratum_size=len(answers),
                double=double,
                queued_at=now,
                inclusion_probability=draw.probability,
            )
            session.add(item)
            created.append(item)
    session.flush()
    return created


def queue_reviews(session: Session, plan: Plan, now: datetime, rng: random.Random | None = None) -> list[ReviewItem]:
    """Queue this week's sample of every reviewed task's answers; returns the new items."""
    config = plan.oversight.review
    week, start = iso_week(now), week_start(now)
    created: list[ReviewItem] = []
    for task in reviewed_tasks(plan):
        reviewers = [r.email.lower() for r in plan.oversight.reviewers if task.id in r.tasks]
        if not reviewers:
            continue
        override = config.tasks.get(task.id)
        rate = override.rate if override and override.rate is not None else config.rate
        quota = config.quota(task.id)
        queued = set(
            session.exec(
                select(ReviewItem.result_id).where(ReviewItem.task_id == task.id, ReviewItem.week == week)
            ).all()
        )
        if config.selection == "active":
            created += queue_active(session, plan, task, reviewers, now, queued)
            continue
        if len(queued) >= quota:
            continue  # the usual case once the week's sample is drawn: no answer is read
        eligible = candidates(task.id, start, now)
        joined = col(ProbeRun.id) == col(ProbeResult.run_id)
        total = session.exec(
            select(func.count()).select_from(ProbeResult).join(ProbeRun, joined).where(*eligible)
        ).one()
        room = min(quota, math.ceil(rate * total)) - len(queued)
        if room <= 0:
            continue
        answers = session.exec(select(ProbeResult).join(ProbeRun, joined).where(*eligible)).all()
        strata: dict[str, list[ProbeResult]] = defaultdict(list)
        for r in answers:
            if r.id not in queued:
                strata[stratum_of(r, task, plan)].append(r)
        draw_rng = rng or random.Random(f"{week}:{task.id}:{len(queued)}")
        load = _load(session, reviewers)
        for key, result in _draw(strata, room, draw_rng):
            assert result.id is not None  # a stored answer
            double = len(reviewers) > 1 and draw_rng.random() < config.double_rate
            chosen = sorted(reviewers, key=lambda r: (load[r], reviewers.index(r)))[: 2 if double else 1]
            for reviewer in chosen:
                load[reviewer] += 1
                item = ReviewItem(
                    task_id=task.id,
                    result_id=result.id,
                    reviewer=reviewer,
                    week=week,
                    stratum=key,
                    stratum_size=len(strata[key]),
                    double=double,
                    queued_at=now,
                )
                session.add(item)
                created.append(item)
    session.flush()
    return created


def check_scores(jury: Jury | None, scores: Mapping[str, Any]) -> dict[str, int]:
    """Scores for every criterion of the rubric, each an integer on its scale; ValueError names what is wrong."""
    criteria, low, high = rubric(jury)
    missing = [c for c in criteria if c not in scores]
    extra = sorted(set(scores) - set(criteria))
    if missing or extra:
        raise ValueError(
            f"expected a score for each of {', '.join(criteria)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(extra)}" if extra else "")
        )
    out = {}
    for criterion in criteria:
        value = scores[criterion]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{criterion}: expected an integer from {low} to {high}, got {value!r}")
        out[criterion] = value
    return out


def record_review(
    session: Session,
    plan: Plan,
    *,
    item_id: int,
    reviewer: str,
    scores: Mapping[str, Any],
    note: str,
    safety_concern: bool,
    actor: str,
    now: datetime,
) -> ClinicianReview:
    """Store a reviewer's rating of a queued answer and audit it; the reviewer must be the item's.

    ``actor`` is who the audit log names (the signed-in account, or a local account acting as
    the reviewer on an unauthenticated dashboard).
    """
    item = session.get(ReviewItem, item_id)
    reviewer = reviewer.strip().lower()
    if item is None:
        raise GovernanceError(f"review item {item_id} does not exist")
    if item.reviewer != reviewer or item.task_id not in reviewer_tasks(plan.oversight, reviewer):
        raise GovernanceError(f"review item {item_id} is not assigned to {reviewer}")
    if item.status == "done":
        raise GovernanceError(f"review item {item_id} has already been rated")
    checked = check_scores(plan.jury, scores)
    review = ClinicianReview(
        item_id=item.id,
        task_id=item.task_id,
        result_id=item.result_id,
        reviewer=reviewer,
        scores=checked,
        note=note.strip(),
        safety_concern=safety_concern,
        created_at=now,
    )
    item.status = "done"
    session.add(item)
    session.add(review)
    session.flush()
    record(
        session,
        AuditKind.clinician_review,
        actor,
        f"review:{review.id}",
        {
            "task": item.task_id,
            "result": item.result_id,
            "reviewer": reviewer,
            "scores": checked,
            "note": review.note,
            "safety_concern": safety_concern,
        },
        now,
    )
    return review


def open_items(session: Session, reviewer: str, tasks: list[str]) -> list[ReviewItem]:
    """The reviewer's open items on the tasks they may review, oldest first."""
    if not tasks:
        return []
    return list(
        session.exec(
            select(ReviewItem)
            .where(
                ReviewItem.reviewer == reviewer.strip().lower(),
                ReviewItem.status == "open",
                col(ReviewItem.task_id).in_(tasks),
            )
            .order_by(col(ReviewItem.id))
        ).all()
    )
