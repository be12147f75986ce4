"""Cost and latency per task and per day, the production model apart from the judges.

Judges are a separate ledger (``probes`` stores their cost on each verdict), so the
production model's spend is never inflated by the cost of monitoring it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import case
from sqlmodel import Session, col, func, select

from monitor.plan import Plan
from monitor.read._sql import as_day, day_of, safe_float
from probes.models import ProbeResult


@dataclass(frozen=True)
class CostDay:
    """One task's calls on one UTC day."""

    day: date
    task: str
    calls: int
    errors: int
    cost_usd: float
    cost_per_call: float | None
    latency_mean: float | None
    latency_max: float | None
    over_slo: int
    over_budget: int


@dataclass(frozen=True)
class CostTask:
    """One task over a period, against its cost budget and latency objective."""

    task: str
    calls: int
    errors: int
    cost_usd: float
    cost_per_call: float | None
    budget_per_call: float | None
    over_budget: int
    latency_mean: float | None
    latency_max: float | None
    latency_slo_s: float | None
    over_slo: int
    judge_cost_usd: float

    @property
    def within_budget(self) -> bool | None:
        """Whether the mean cost per call stays within the task's budget (None without one)."""
        if self.budget_per_call is None or self.cost_per_call is None:
            return None
        return self.cost_per_call <= self.budget_per_call


def _per_task(plan: Plan, attr: str) -> Mapping[str, float]:
    return {t.id: getattr(t.thresholds, attr) for t in plan.tasks if getattr(t.thresholds, attr) is not None}


def _exceeds(column: object, limits: Mapping[str, float]) -> object:
    """``SUM(1 when the row's value exceeds its own task's limit)``, evaluated in the database."""
    if not limits:
        return func.sum(0)
    limit = case(dict(limits), value=ProbeResult.task_id, else_=None)
    return func.sum(case((column > limit, 1), else_=0))  # type: ignore[operator]


def cost_by_day(session: Session, plan: Plan, since: datetime) -> list[CostDay]:
    """Calls, errors, cost and latency per task and UTC day since ``since`` (one grouped query)."""
    day = day_of(session, ProbeResult.created_at)
    query = (select(day, ProbeResult.task_id, func.count(), func.count(ProbeResult.error_type),
                    func.coalesce(func.sum(ProbeResult.cost_usd), 0.0), func.avg(ProbeResult.cost_usd),
                    func.avg(ProbeResult.latency_s), func.max(ProbeResult.latency_s),
                    _exceeds(col(ProbeResult.latency_s), _per_task(plan, "latency_slo_s")),
                    _exceeds(col(ProbeResult.cost_usd), _per_task(plan, "cost_budget_per_call")))
             .where(col(ProbeResult.created_at) >= since, col(ProbeResult.task_id).in_([t.id for t in plan.tasks]))
             .group_by(day, ProbeResult.task_id).order_by(day, ProbeResult.task_id))
    return [CostDay(as_day(d), str(t), int(n), int(e), float(c), safe_float(cpc), safe_float(lat), safe_float(lmax),
                    int(slo or 0), int(bud or 0))
            for d, t, n, e, c, cpc, lat, lmax, slo, bud in session.exec(query).all()]


def cost_by_task(session: Session, plan: Plan, since: datetime) -> list[CostTask]:
    """Each task's calls, cost and latency since ``since``, against its budget and objective."""
    from monitor.read.jury import judge_cost_by_task

    budgets, slos = _per_task(plan, "cost_budget_per_call"), _per_task(plan, "latency_slo_s")
    query = (select(ProbeResult.task_id, func.count(), func.count(ProbeResult.error_type),
                    func.coalesce(func.sum(ProbeResult.cost_usd), 0.0), func.avg(ProbeResult.cost_usd),
                    _exceeds(col(ProbeResult.cost_usd), budgets), func.avg(ProbeResult.latency_s),
                    func.max(ProbeResult.latency_s), _exceeds(col(ProbeResult.latency_s), slos))
             .where(col(ProbeResult.created_at) >= since, col(ProbeResult.task_id).in_([t.id for t in plan.tasks]))
             .group_by(ProbeResult.task_id))
    found = {str(r[0]): r for r in session.exec(query).all()}
    judges = judge_cost_by_task(session, since)
    out = []
    for task in plan.tasks:
        r = found.get(task.id)
        calls, errors, cost, cpc, bud, lat, lmax, slo = (r[1:] if r is not None else (0, 0, 0.0, None, 0, None, None, 0))
        out.append(CostTask(task.id, int(calls), int(errors), float(cost), safe_float(cpc), budgets.get(task.id),
                            int(bud or 0), safe_float(lat), safe_float(lmax), slos.get(task.id), int(slo or 0),
                            judges.get(task.id, 0.0)))
    return out
