"""Gather what the alert rules need from the monitor's records, and hand their signals to alerts.

The rules themselves (``medmon.alerts.rules``) work on plain numbers; this module knows where the
numbers live: detector updates, the recent score estimate, the served-model history, the last
usable probe run of each task and the monitor's heartbeat. ``alert_pass`` is the periodic job
the scheduler runs before delivering the outbox.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from apscheduler.triggers.cron import CronTrigger
from sqlmodel import Session, col, func, select

from medmon.alerts import (
    KINDS,
    Estimate,
    Notification,
    Signal,
    Subject,
    beat,
    flush,
    last_beat,
    open_fingerprints,
    record_signals,
    severity_for,
)
from medmon.alerts.rules import (
    below_minimum,
    detector_alarm,
    detector_recovered,
    heartbeat_missed,
    model_changed,
    stale,
)
from medmon.baselines import resolve
from medmon.monitor.detection.streams import StreamUpdate
from medmon.monitor.governance.current import live_policy
from medmon.monitor.governance.effective import effective_task
from medmon.monitor.models import StreamStatus
from medmon.monitor.plan.context import TaskContext
from medmon.monitor.plan.model import Plan, Task, parse_interval
from medmon.monitor.read import recent_estimate
from medmon.probes.models import ProbeRun, RunStatus

HEARTBEAT = "scheduler"
MIN_ESTIMATE_N = 30


def task_subject(plan: Plan, task: Task) -> Subject:
    """Labels and owner for alerts about ``task``; severity from the risk tier or the task's override."""
    owner = task.owner or plan.owners.clinical
    return Subject(
        deployment=plan.deployment.name,
        task=task.id,
        benchmark=task.benchmark,
        category=resolve(task.benchmark).category,
        owner=f"{owner.name} <{owner.email}>",
        dashboard_url=f"{plan.alerts.dashboard_url}/task?task={task.id}",
        severity=severity_for(plan.use_case.risk_tier.value, task.severity),
    )


def monitor_subject(plan: Plan) -> Subject:
    """Alerts about the monitor itself go to the technical owner, at the use case's severity."""
    owner = plan.owners.technical
    return Subject(
        deployment=plan.deployment.name,
        owner=f"{owner.name} <{owner.email}>",
        dashboard_url=plan.alerts.dashboard_url,
        severity=severity_for(plan.use_case.risk_tier.value),
    )


def update_signal(subject: Subject, update: StreamUpdate, **evidence: Any) -> Signal | None:
    """A stream's alarm as a firing signal, its recovery as a clearing one, else None: for canary, judge and
    traffic streams alike, the rule and severity those of the stream's kind in the catalogue."""
    spec, kind, f = update.spec, KINDS[update.spec.kind], update.finding
    if f is not None:
        found = {**f.evidence(), "baseline": spec.baseline_mean, "severity_score": f.severity, **evidence}
        return detector_alarm(subject, spec.metric, found, kind=kind, what=spec.what)
    if update.status == StreamStatus.recovered and update.previous == StreamStatus.degraded:
        return detector_recovered(subject, spec.metric, kind=kind)
    return None


def stream_signal(plan: Plan, ctx: TaskContext, update: StreamUpdate) -> Signal | None:
    """A canary stream's signal, about its task (or about its category or judge, owned as the task is)."""
    subject = task_subject(plan, ctx.task)
    if update.spec.task_id != ctx.task.id:  # a category's pooled stream or a judge's: not one task's alert
        subject = replace(subject, task=update.spec.task_id, benchmark="", dashboard_url=plan.alerts.dashboard_url)
    return update_signal(subject, update)


def model_change_signal(
    plan: Plan, ctx: TaskContext, old: tuple[str, str | None], new: tuple[str, str | None]
) -> Signal:
    """The served model or its system fingerprint changed since the task's last probe."""
    return model_changed(task_subject(plan, ctx.task), old, new)


def threshold_signals(session: Session, plan: Plan, ctx: TaskContext) -> list[Signal]:
    """The approval-minimum rule on the task's recent score (its interval, not one run's mean).

    The minimum is the approved one, read from the record at each evaluation (a plan edit no
    owner approved is named in the alert as proposed, and judges nothing).
    """
    effective = effective_task(session, plan, ctx.task)
    mean, low, high, n = recent_estimate(session, ctx.task.id)
    estimate = Estimate(mean, low, high, n) if mean is not None else None
    signal = below_minimum(
        task_subject(plan, effective.task), estimate, effective.thresholds.min_score, min_n=MIN_ESTIMATE_N
    )
    if signal is not None and signal.firing:  # the wording follows the record: approved only where an approval is
        signal = replace(signal, summary=f"{signal.summary} ({effective.in_force_words})")
    # Only a recorded edit: the service's plan carries the thresholds in force when it started, not the file's.
    proposed = next((p.proposed for p in effective.proposals if p.threshold == "min_score" and p.plan_seq), None)
    if signal is not None and proposed is not None:
        signal = replace(
            signal,
            summary=f"{signal.summary} (a plan edit proposes {proposed:.3f}, not approved)",
            evidence={**signal.evidence, "proposed_minimum": proposed},
        )
    return transitions(session, [signal] if signal is not None else [])


def transitions(session: Session, signals: list[Signal]) -> list[Signal]:
    """Only the signals that change something: firing where no alert is open, clearing where one is.

    These rules are evaluated on every probe or pass; passing on the rest would re-apply the
    same verdict each time (harmless to dedup, but noise in a probe's outcome).
    """
    already = open_fingerprints(session, [s.fingerprint for s in signals])
    return [s for s in signals if s.firing != (s.fingerprint in already)]


def allowed_gap(plan: Plan, task: Task, now: datetime) -> timedelta:
    """How long a task may go without usable data: ``stale_after_intervals`` schedule intervals.

    For a cron schedule the interval is the gap between its next two fire times.
    """
    interval = task.interval
    if interval is None:
        trigger = CronTrigger.from_crontab(task.schedule, timezone="UTC")
        first = trigger.get_next_fire_time(None, now)
        second = trigger.get_next_fire_time(first, first + timedelta(seconds=1)) if first else None
        interval = (second - first) if first and second else timedelta(days=1)
    return interval * plan.alerts.stale_after_intervals


def stale_signals(session: Session, plan: Plan, now: datetime, *, since: datetime) -> list[Signal]:
    """One firing or clearing 'stale' signal per task, from its last run that produced a usable result."""
    out = []
    for task in plan.tasks:
        last = session.exec(
            select(func.max(ProbeRun.finished_at)).where(
                ProbeRun.task_id == task.id,
                ProbeRun.status == RunStatus.complete,
                col(ProbeRun.n_canaries) > col(ProbeRun.n_errors),
            )
        ).one()
        out.append(stale(task_subject(plan, task), last, allowed_gap(plan, task, now), now, since=since))
    return transitions(session, out)


def alert_pass(session: Session, plan: Plan, now: datetime) -> list[Notification]:
    """The periodic alert job: heartbeat and staleness rules, then every notification now due.

    Repeats, escalations, silences that ended and changes held back by ``group_interval`` are
    all picked up by the final flush.
    """
    policy = live_policy(plan)
    tolerance = parse_interval(plan.alerts.heartbeat_tolerance)
    previous = last_beat(session, HEARTBEAT)
    signals: list[Signal] = []
    missed = heartbeat_missed(monitor_subject(plan), previous.beat_at if previous else None, tolerance, now)
    signals += transitions(session, [missed] if missed is not None else [])
    pulse = beat(session, HEARTBEAT, now, tolerance=tolerance)
    signals += stale_signals(session, plan, now, since=pulse.since)
    record_signals(session, signals, now, window=policy.correlation_window)
    return flush(session, policy, now)
