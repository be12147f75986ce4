"""The scheduler: one probe job per task (at most one running at a time), plus alert delivery."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine
from sqlmodel import select

from alerts import Channel, DeliveryPolicy, deliver_due, renotify_due
from monitor.context import TaskContext
from monitor.pipeline import ProbeOutcome, route_names, run_task_probe
from monitor.plan import Plan, parse_interval
from monitor.storage import session_scope
from probes.client import ModelSettings
from probes.models import ProbeRun, RunStatus

log = logging.getLogger("medmon.scheduler")


def mark_interrupted(engine: Engine, now: datetime) -> int:
    """Runs left 'running' by a crash are marked interrupted, never half-counted."""
    with session_scope(engine) as session:
        rows = session.exec(select(ProbeRun).where(ProbeRun.status == RunStatus.running)).all()
        for run in rows:
            run.status, run.finished_at, run.error = RunStatus.interrupted, now, "process stopped mid-probe"
            session.add(run)
        return len(rows)


def probe_job(engine: Engine, plan: Plan, ctx: TaskContext, rng: random.Random, now: Callable[[], datetime],
              settings: ModelSettings | None, on_outcome: Callable[[ProbeOutcome], None] | None) -> None:
    """The scheduler's job: the one place a broad except stores the failure instead of killing the job."""
    try:
        outcome = run_task_probe(engine, plan, ctx, rng=rng, now=now, settings=settings)
    except Exception:
        log.exception("probe of task %s failed", ctx.task.id)
        with session_scope(engine) as session:
            for run in session.exec(select(ProbeRun).where(ProbeRun.task_id == ctx.task.id,
                                                           ProbeRun.status == RunStatus.running)).all():
                run.status, run.finished_at, run.error = RunStatus.failed, now(), "probe failed; see service log"
                session.add(run)
        return
    if on_outcome is not None:
        on_outcome(outcome)


def delivery_job(engine: Engine, plan: Plan, channels: Mapping[str, Channel], now: Callable[[], datetime],
                 policy: DeliveryPolicy) -> None:
    try:
        with session_scope(engine) as session:
            renotify_due(session, route_names(plan), parse_interval(plan.alerts.repeat_interval), now())
        deliver_due(engine, channels, now, policy)
    except Exception:
        log.exception("alert delivery pass failed")


def build_scheduler(engine: Engine, plan: Plan, contexts: Sequence[TaskContext], channels: Mapping[str, Channel], *,
                    now: Callable[[], datetime], time_scale: float = 1.0, seed: int | None = None,
                    settings: ModelSettings | None = None, delivery_every_s: float = 1.0,
                    on_outcome: Callable[[ProbeOutcome], None] | None = None) -> BackgroundScheduler:
    """A scheduler with every task's probe job; ``time_scale`` > 1 runs interval schedules faster."""
    scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})
    rng = random.Random(seed)
    for ctx in contexts:
        task = ctx.task
        interval = task.interval
        if interval is not None:
            seconds = max(interval.total_seconds() / time_scale, 0.05)
            trigger: IntervalTrigger | CronTrigger = IntervalTrigger(seconds=seconds)
            grace = max(1, int(seconds))
        else:
            trigger = CronTrigger.from_crontab(task.schedule, timezone="UTC")
            grace = 300
        scheduler.add_job(probe_job, trigger, id=f"probe:{task.id}", name=f"probe {task.id}",
                          args=[engine, plan, ctx, random.Random(rng.random()), now, settings, on_outcome],
                          misfire_grace_time=grace, next_run_time=datetime.now().astimezone() + timedelta(seconds=0.1))
    scheduler.add_job(delivery_job, IntervalTrigger(seconds=delivery_every_s), id="deliver", name="deliver alerts",
                      args=[engine, plan, channels, now, DeliveryPolicy(base_delay_s=max(0.2, delivery_every_s))],
                      misfire_grace_time=5)
    return scheduler
