"""What adaptive cadence has spent, read from the stored probe slots (so every process, and a
restart, sees the same budget): a slot off the task's own schedule is an extra probe."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from apscheduler.triggers.base import BaseTrigger
from sqlmodel import Session, col, func, select

from medmon.db import as_utc
from medmon.monitor.detection.watching import watching_streams
from medmon.monitor.models import ProbeSlot
from medmon.monitor.plan.model import Plan, Task
from medmon.monitor.service.cadence import BudgetUsed, Cadence, budget_window, describe, next_interval
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus

ON_GRID_TOLERANCE = timedelta(milliseconds=1)


def on_schedule(trigger: BaseTrigger, when: datetime) -> bool:
    """Whether ``when`` is one of the times ``trigger`` (the task's own schedule) fires."""
    when = as_utc(when)
    fire = trigger.get_next_fire_time(None, when - ON_GRID_TOLERANCE)
    return fire is not None and abs(fire - when) <= ON_GRID_TOLERANCE


def extra_used(session: Session, task_id: str, schedule: BaseTrigger, start: datetime, end: datetime) -> BudgetUsed:
    """The extra probes of ``task_id`` scheduled in ``[start, end)`` and what their answers cost.

    Every claimed slot counts, whatever became of its probe: a failed probe made calls too.
    """
    slots = session.exec(
        select(ProbeSlot.scheduled_for, ProbeSlot.run_id).where(
            ProbeSlot.task_id == task_id, ProbeSlot.scheduled_for >= start, ProbeSlot.scheduled_for < end
        )
    ).all()
    extra = [run_id for when, run_id in slots if not on_schedule(schedule, when)]
    runs = [r for r in extra if r is not None]
    cost = 0.0
    if runs:
        total = session.exec(select(func.sum(ProbeResult.cost_usd)).where(col(ProbeResult.run_id).in_(runs))).one()
        cost = float(total or 0.0)
    return BudgetUsed(len(extra), cost)


def last_probe_cost(session: Session, task_id: str) -> float | None:
    """What the task's latest complete probe cost (the estimate of the next one), None if unknown."""
    run_id = session.exec(
        select(func.max(ProbeRun.id)).where(ProbeRun.task_id == task_id, ProbeRun.status == RunStatus.complete)
    ).one()
    if run_id is None:
        return None
    total = session.exec(select(func.sum(ProbeResult.cost_usd)).where(ProbeResult.run_id == run_id)).one()
    return float(total) if total is not None else None


def decide(
    session: Session, plan: Plan, tasks: Sequence[Task], schedules: dict[str, BaseTrigger], now: datetime
) -> dict[str, tuple[Cadence, BudgetUsed]]:
    """Each task's cadence now, with the budget its window has used (one read of the detectors)."""
    settings = plan.adaptive_cadence
    watching = watching_streams(session, [t.id for t in tasks]) if settings.enabled else {}
    start, end = budget_window(now)
    out = {}
    for task in tasks:
        used = extra_used(session, task.id, schedules[task.id], start, end) if settings.enabled else BudgetUsed()
        cost = last_probe_cost(session, task.id) if settings.max_extra_cost_per_day is not None else None
        out[task.id] = (next_interval(task.interval, task.id in watching, used, settings, cost), used)
    return out


def cadence_lines(
    session: Session, plan: Plan, schedules: dict[str, BaseTrigger], now: datetime, refused: dict[str, int]
) -> dict[str, dict[str, object]]:
    """Per task, what ``/healthz`` shows: the interval probed at, the budget used, refusals, one line."""
    settings = plan.adaptive_cadence
    out: dict[str, dict[str, object]] = {}
    for task_id, (cadence, used) in decide(session, plan, plan.tasks, schedules, now).items():
        task = plan.task(task_id)
        out[task_id] = {
            "enabled": settings.enabled,
            "fast": cadence.fast,
            "interval_s": (cadence.interval or task.interval or timedelta()).total_seconds() or None,
            "reason": cadence.reason,
            "extra_probes_today": used.probes,
            "max_extra_probes_per_day": settings.max_extra_probes_per_day,
            "extra_cost_today_usd": round(used.cost_usd, 6),
            "max_extra_cost_per_day": settings.max_extra_cost_per_day,
            "extra_probes_refused": refused.get(task_id, 0),
            "text": describe(task_id, task.schedule, cadence, used, settings),
        }
    return out
