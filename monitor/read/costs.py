"""Cost and latency per task and per day, the production model apart from the judges.

Judges are a separate ledger (``JudgeCall``), so the production model's spend is never inflated
by the cost of monitoring it. One grouped query per page: the per-task figures are folded
exactly from the per-day groups (sums and counts, not averages of averages).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import case
from sqlmodel import Session, col, func

from medmon.monitor.plan.model import Plan
from medmon.monitor.read._sql import as_day, day_of, safe_float
from medmon.monitor.storage import select_row
from medmon.probes.models import ProbeResult


@dataclass(frozen=True)
class CostDay:
    """One task's calls on one UTC day, as sums and counts so that days add up exactly."""

    day: date
    task: str
    calls: int
    errors: int
    cost_usd: float
    priced: int
    latency_sum: float
    timed: int
    latency_max: float | None
    over_slo: int
    over_budget: int

    @property
    def cost_per_call(self) -> float | None:
        return self.cost_usd / self.priced if self.priced else None

    @property
    def latency_mean(self) -> float | None:
        return self.latency_sum / self.timed if self.timed else None


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


def _per_task(plan: Plan, attr: str) -> dict[str, float]:
    return {t.id: getattr(t.thresholds, attr) for t in plan.tasks if getattr(t.thresholds, attr) is not None}


def _exceeds(column: Any, limits: Mapping[str, float], tasks: Sequence[str]) -> Any:
    """``SUM(1 when the row's value exceeds its own task's limit)``, evaluated in the database.

    Tasks usually share a few limits, so the limit is chosen per group of tasks with the same
    value (a constant when all share one), not by a 50-branch CASE on every row.
    """
    by_value: dict[float, list[str]] = {}
    for task, value in limits.items():
        by_value.setdefault(value, []).append(task)
    if not by_value:
        return func.sum(0)
    if len(by_value) == 1 and set(next(iter(by_value.values()))) >= set(tasks):
        limit: Any = next(iter(by_value))
    else:
        limit = case(*((col(ProbeResult.task_id).in_(ids), value) for value, ids in by_value.items()), else_=None)
    return func.sum(case((column > limit, 1), else_=0))


def cost_by_day(session: Session, plan: Plan, since: datetime) -> list[CostDay]:
    """Calls, errors, cost and latency per task and UTC day since ``since`` (one grouped query)."""
    day = day_of(session, ProbeResult.created_at)
    ids = [t.id for t in plan.tasks]
    query = (
        select_row(
            day,
            ProbeResult.task_id,
            func.count(),
            func.count(col(ProbeResult.error_type)),
            func.coalesce(func.sum(ProbeResult.cost_usd), 0.0),
            func.count(col(ProbeResult.cost_usd)),
            func.coalesce(func.sum(ProbeResult.latency_s), 0.0),
            func.count(col(ProbeResult.latency_s)),
            func.max(ProbeResult.latency_s),
            _exceeds(col(ProbeResult.latency_s), _per_task(plan, "latency_slo_s"), ids),
            _exceeds(col(ProbeResult.cost_usd), _per_task(plan, "cost_budget_per_call"), ids),
        )
        .where(col(ProbeResult.created_at) >= since, col(ProbeResult.task_id).in_(ids))
        .group_by(day, ProbeResult.task_id)
        .order_by(day, ProbeResult.task_id)
    )
    return [
        CostDay(
            as_day(d),
            str(t),
            int(n),
            int(e),
            float(c),
            int(cn),
            float(ls),
            int(ln),
            safe_float(lmax),
            int(slo or 0),
            int(bud or 0),
        )
        for d, t, n, e, c, cn, ls, ln, lmax, slo, bud in session.exec(query).all()
    ]


def cost_by_task(plan: Plan, days: Sequence[CostDay], judge_costs: Mapping[str, float]) -> list[CostTask]:
    """Each task's period figures, folded from its days, against its budget and objective."""
    budgets, slos = _per_task(plan, "cost_budget_per_call"), _per_task(plan, "latency_slo_s")
    out = []
    for task in plan.tasks:
        mine = [d for d in days if d.task == task.id]
        cost, priced = sum(d.cost_usd for d in mine), sum(d.priced for d in mine)
        lat, timed = sum(d.latency_sum for d in mine), sum(d.timed for d in mine)
        peaks = [d.latency_max for d in mine if d.latency_max is not None]
        out.append(
            CostTask(
                task.id,
                sum(d.calls for d in mine),
                sum(d.errors for d in mine),
                cost,
                cost / priced if priced else None,
                budgets.get(task.id),
                sum(d.over_budget for d in mine),
                lat / timed if timed else None,
                max(peaks) if peaks else None,
                slos.get(task.id),
                sum(d.over_slo for d in mine),
                judge_costs.get(task.id, 0.0),
            )
        )
    return out
