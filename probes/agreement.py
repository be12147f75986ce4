"""Jury agreement and per-judge streams, read from stored verdicts.

Three views, each a stream over time so that a jury going wrong is visible:

- per item: ``ProbeResult.jury_agreement`` (``1 - mean pairwise |difference| / scale width``
  between the judges' means) and ``jury_unanimous``, stored with each result;
- per window: Krippendorff's alpha (ordinal) over the latest results' judge x criterion scores,
  :func:`window_agreement`; alpha discounts agreement expected by chance, so a jury that always
  answers 4 does not look reliable;
- per judge: :func:`judge_score_series`, each judge's mean score per result and its deviation
  from the other judges on the same result, so one drifting judge stands out.

References
----------
Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
Communication, University of Pennsylvania. (Implementation: the ``krippendorff`` package.)
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import krippendorff
import numpy as np
from sqlmodel import Session, col, func, select

from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus

VALID = (ParseStatus.ok, ParseStatus.retried_ok)


@dataclass(frozen=True)
class WindowAgreement:
    """Krippendorff's alpha over a window; ``alpha`` is None when it is undefined (see ``reason``)."""

    task_id: str
    alpha: float | None
    results: int
    judges: int
    units: int  # (result, criterion) pairs scored by at least two judges
    reason: str | None = None
    out_of_scale: int = 0  # stored scores outside the scale (or not whole points): excluded, counted


def _latest_judged(session: Session, task_id: str, window: int) -> list[int]:
    rows = session.exec(
        select(JuryVerdict.result_id)
        .where(JuryVerdict.task_id == task_id)
        .distinct()
        .order_by(col(JuryVerdict.result_id).desc())
        .limit(window)
    ).all()
    return list(rows)


def window_agreement(
    session: Session, task_id: str, window: int = 200, *, scale_min: int = 1, scale_max: int = 5
) -> WindowAgreement:
    """Ordinal Krippendorff's alpha over the task's latest ``window`` judged results.

    Units are (result, criterion) pairs, coders are judges; unparsed and failed verdicts are
    missing values. Alpha needs two judges on some unit and more than one distinct score. A
    stored score outside ``scale_min``-``scale_max`` (a judge that ignored the scale, or a plan
    whose scale changed) is excluded and counted in ``out_of_scale``, never passed to
    ``krippendorff``, which rejects values outside the value domain.
    """
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    ids = _latest_judged(session, task_id, window)
    rows = (
        session.exec(
            select(JuryVerdict.result_id, JuryVerdict.criterion, JuryVerdict.judge, JuryVerdict.score).where(
                col(JuryVerdict.result_id).in_(ids),
                col(JuryVerdict.parse_status).in_(VALID),
                col(JuryVerdict.score).is_not(None),
            )
        ).all()
        if ids
        else []
    )
    inside = [
        (rid, criterion, judge, score)
        for rid, criterion, judge, score in rows
        if score is not None and scale_min <= score <= scale_max and float(score).is_integer()
    ]
    out_of_scale = len(rows) - len(inside)
    rows = inside
    judges = sorted({r[2] for r in rows})
    units = sorted({(r[0], r[1]) for r in rows})
    counts: dict[tuple[int, str], int] = defaultdict(int)
    for r in rows:
        counts[(r[0], r[1])] += 1
    pairable = sum(1 for c in counts.values() if c >= 2)
    if len(judges) < 2 or not pairable:
        return WindowAgreement(
            task_id, None, len(ids), len(judges), pairable, "fewer than two judges scored any item", out_of_scale
        )
    if len({r[3] for r in rows}) < 2:
        return WindowAgreement(
            task_id, None, len(ids), len(judges), pairable, "every score is the same value", out_of_scale
        )
    data = np.full((len(judges), len(units)), np.nan)
    j_index = {j: i for i, j in enumerate(judges)}
    u_index = {u: i for i, u in enumerate(units)}
    for result_id, criterion, judge, score in rows:
        data[j_index[judge], u_index[(result_id, criterion)]] = score
    alpha = float(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=list(range(scale_min, scale_max + 1))
        )
    )
    return WindowAgreement(
        task_id,
        alpha if math.isfinite(alpha) else None,
        len(ids),
        len(judges),
        pairable,
        None if math.isfinite(alpha) else "alpha is undefined for these scores",
        out_of_scale,
    )


@dataclass(frozen=True)
class JudgePoint:
    """One judge's mean score on one result, and how far it sits from the other judges' mean."""

    created_at: datetime
    result_id: int
    score: float
    deviation: float | None


def judge_score_series(session: Session, task_id: str, limit: int = 500) -> dict[str, list[JudgePoint]]:
    """Each judge's per-result mean score over the task's latest ``limit`` judged results, oldest first."""
    ids = _latest_judged(session, task_id, limit)
    if not ids:
        return {}
    rows = session.exec(
        select(JuryVerdict.result_id, JuryVerdict.judge, func.avg(JuryVerdict.score), func.min(JuryVerdict.created_at))
        .where(
            col(JuryVerdict.result_id).in_(ids),
            col(JuryVerdict.parse_status).in_(VALID),
            col(JuryVerdict.score).is_not(None),
        )
        .group_by(col(JuryVerdict.result_id), col(JuryVerdict.judge))
    ).all()
    by_result: dict[int, dict[str, float]] = defaultdict(dict)
    stamps: dict[int, datetime] = {}
    for result_id, judge, mean, created in rows:
        by_result[result_id][judge] = float(mean)
        stamps[result_id] = created
    series: dict[str, list[JudgePoint]] = defaultdict(list)
    for result_id in sorted(by_result):
        means = by_result[result_id]
        for judge, mean in means.items():
            others = [m for j, m in means.items() if j != judge]
            deviation = mean - sum(others) / len(others) if others else None
            series[judge].append(JudgePoint(stamps[result_id], result_id, mean, deviation))
    return dict(series)


@dataclass(frozen=True)
class JuryLedger:
    """What the judges cost, apart from the production model's cost."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    by_status: dict[str, int]


def jury_ledger(session: Session, task_id: str | None = None, since: datetime | None = None) -> JuryLedger:
    """Judge calls, tokens, cost and parse statuses, for one task or all, optionally since a time."""
    query = select(
        JudgeCall.parse_status,
        func.count(),
        func.sum(JudgeCall.prompt_tokens),  # type: ignore[call-overload]  # sqlmodel types select() up to 4 columns
        func.sum(JudgeCall.completion_tokens),
        func.sum(JudgeCall.cost_usd),
    )
    if task_id is not None:
        query = query.where(JudgeCall.task_id == task_id)
    if since is not None:
        query = query.where(JudgeCall.created_at >= since)
    rows = session.exec(query.group_by(JudgeCall.parse_status)).all()
    return JuryLedger(
        calls=sum(int(r[1]) for r in rows),
        prompt_tokens=sum(int(r[2] or 0) for r in rows),
        completion_tokens=sum(int(r[3] or 0) for r in rows),
        cost_usd=sum(float(r[4] or 0.0) for r in rows),
        by_status={ParseStatus(r[0]).value: int(r[1]) for r in rows},
    )
