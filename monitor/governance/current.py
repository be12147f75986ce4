"""The current score of a task: the one figure every surface shows as "the score now".

The overview and task pages, the approval-minimum rule (and so incident summaries and
notifications), and the committee report's recommendation all read this one function, so a
committee never sees 0.54 on one page and 0.61 on another for the same moment. It lives in the
governance room (below ``medmon.monitor.read``, which re-exports it) because the report and the
alerting rules, which sit under the read layer, must use it too.

The definition: the mean of the task's latest ``CURRENT_WINDOW`` scored **monitoring** answers
(a re-evaluation's answers judge a candidate model, not the one served) before ``until``
(now by default), with its 95% interval: Wilson for right/wrong scores, normal for graded ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import case
from sqlmodel import Session, col, func, select

from medmon.alerts import NotifyPolicy
from medmon.baselines.interval import mean_interval, wilson_interval
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.routing import notify_policy
from medmon.probes.models import ProbeResult, ProbeRun

CURRENT_WINDOW = 200  # scored answers
REEVALUATION = "reevaluation"
CURRENT_SCORE_NAME = f"current score (mean of the latest {CURRENT_WINDOW} scored monitoring answers)"


@dataclass(frozen=True)
class CurrentScore:
    """The score now: ``value`` with its 95% interval over ``n`` answers (``value`` None before any)."""

    value: float | None
    low: float | None
    high: float | None
    n: int

    @property
    def known(self) -> bool:
        return self.value is not None

    def text(self, digits: int = 2) -> str:
        """The figure as people read it.

        >>> CurrentScore(0.54, 0.47, 0.61, 200).text()
        '0.54 (95% interval 0.47-0.61, latest 200 answers)'
        >>> CurrentScore(None, None, None, 0).text()
        'no scored answer yet'
        """
        if self.value is None or self.low is None or self.high is None:
            return "no scored answer yet"
        low, high = f"{self.low:.{digits}f}", f"{self.high:.{digits}f}"
        return f"{self.value:.{digits}f} (95% interval {low}-{high}, latest {self.n} answers)"


def current_score(session: Session, task_id: str, until: datetime | None = None) -> CurrentScore:
    """The task's current score (see the module): one indexed query, only aggregates leave the database."""
    conditions: list[Any] = [
        ProbeResult.task_id == task_id,
        col(ProbeResult.score).is_not(None),
        col(ProbeRun.purpose) != REEVALUATION,
    ]
    if until is not None:
        conditions.append(col(ProbeResult.created_at) < until)
    recent = (
        select(ProbeResult.score)
        .join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
        .where(*conditions)
        .order_by(col(ProbeResult.id).desc())
        .limit(CURRENT_WINDOW)
        .subquery()
    )
    n, total, total2, graded = session.exec(
        select(
            func.count(recent.c.score),
            func.sum(recent.c.score),
            func.sum(recent.c.score * recent.c.score),
            func.sum(case((recent.c.score.in_([0.0, 1.0]), 0), else_=1)),
        )
    ).one()
    if not n:
        return CurrentScore(None, None, None, 0)
    n = int(n)
    mean = float(total) / n
    if not graded:
        low, high = wilson_interval(mean, n)
    else:
        var = max(float(total2) - n * mean * mean, 0.0) / (n - 1) if n > 1 else 0.0
        low, high = mean_interval(mean, math.sqrt(var), n)
    return CurrentScore(mean, float(low), float(high), n)


def figure_now(session: Session, task_id: str) -> str | None:
    """The task's current score as a notification states it at sending time (None before any answer)."""
    score = current_score(session, task_id)
    return f"score {score.text()}" if score.known else None


def live_policy(plan: Plan) -> NotifyPolicy:
    """The plan's notification policy, its notifications carrying each task's current score when sent."""
    return replace(notify_policy(plan), figure=figure_now)
