"""Read functions for the dashboard and reports: queries aggregate in the database."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, func, select

from alerts import Alert
from alerts.lifecycle import OPEN
from baselines import latest_baseline, resolve
from monitor.models import DetectorState, StreamStatus
from monitor.plan import Plan
from probes.models import ProbeResult, ProbeRun

_RANK = {StreamStatus.degraded: 0, StreamStatus.watching: 1, StreamStatus.recovered: 2, StreamStatus.ok: 3}


@dataclass(frozen=True)
class TaskRow:
    task: str
    category: str
    subcategory: str | None
    benchmark: str
    baseline: float | None
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    status: str
    owner: str
    risk_tier: str
    last_probe: datetime | None
    open_alerts: int


def recent_estimate(session: Session, task_id: str, window: int = 200) -> tuple[float | None, float, float, int]:
    """Mean score of the task's latest ``window`` scored results, with a 95% normal interval."""
    recent = (select(ProbeResult.score).where(ProbeResult.task_id == task_id, col(ProbeResult.score).is_not(None))
              .order_by(col(ProbeResult.id).desc()).limit(window).subquery())
    n, total, total2 = session.exec(select(func.count(), func.sum(recent.c.score),
                                           func.sum(recent.c.score * recent.c.score))).one()
    if not n:
        return None, 0.0, 1.0, 0
    mean = total / n
    var = max(total2 / n - mean * mean, 0.0)
    half = 1.96 * math.sqrt(var / n)
    return mean, max(0.0, mean - half), min(1.0, mean + half), int(n)


def task_overview(session: Session, plan: Plan) -> list[TaskRow]:
    """Every monitored task against its baseline, worst first."""
    rows = []
    for task in plan.tasks:
        entry = resolve(task.benchmark)
        baseline = latest_baseline(session, task.benchmark, task.baseline.model, task.baseline.metric)
        estimate, lo, hi, n = recent_estimate(session, task.id)
        statuses = session.exec(select(DetectorState.status).where(DetectorState.task_id == task.id)).all()
        status = min(statuses, key=lambda s: _RANK[s]) if statuses else StreamStatus.ok
        last = session.exec(select(func.max(ProbeRun.finished_at)).where(ProbeRun.task_id == task.id)).one()
        open_alerts = session.exec(select(func.count()).select_from(Alert)
                                   .where(Alert.task_id == task.id, col(Alert.status).in_(OPEN))).one()
        owner = task.owner or plan.owners.clinical
        rows.append(TaskRow(task.id, entry.category, entry.subcategory, task.benchmark,
                            baseline.normalized if baseline else None, estimate,
                            lo if estimate is not None else None, hi if estimate is not None else None, n,
                            status.value, owner.name, plan.use_case.risk_tier.value, last, int(open_alerts)))
    rows.sort(key=lambda r: (_RANK[StreamStatus(r.status)], -r.open_alerts, r.task))
    return rows


def score_history(session: Session, task_id: str, limit: int = 500) -> list[tuple[datetime, float, int]]:
    """Per-run mean score over time: (finished_at, mean, n) for the task's latest runs."""
    rows = session.exec(select(ProbeRun.finished_at, ProbeRun.mean_score, ProbeRun.n_canaries)
                        .where(ProbeRun.task_id == task_id, col(ProbeRun.mean_score).is_not(None))
                        .order_by(col(ProbeRun.id).desc()).limit(limit)).all()
    return [(r[0], r[1], r[2]) for r in reversed(rows)]  # type: ignore[misc]


def alerts_list(session: Session, *, open_only: bool = False, limit: int = 200) -> list[Alert]:
    query = select(Alert)
    if open_only:
        query = query.where(col(Alert.status).in_(OPEN))
    return list(session.exec(query.order_by(col(Alert.starts_at).desc()).limit(limit)).all())
