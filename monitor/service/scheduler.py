"""The scheduler ``medmon serve`` and ``medmon demo`` run: one probe job per task (at most one
running at a time), plus alert delivery (on each written notification, and every tick as a
fallback: ``delivery.py``).

Probe jobs live in the database (APScheduler's ``SQLAlchemyJobStore``, table
``apscheduler_jobs``), so a restart resumes the schedule where it was. Stored jobs are pickled,
so they name a module-level function and plain strings (a runtime key and a task id); the
engine, plan and executor they need are looked up in this process's runtime registry when they
fire. The demo runs the same scheduler on an accelerated clock (``time_scale``).

Interval schedules are anchored at a fixed epoch, so a task's scheduled times are the same grid
whichever process computes them and whenever it started; each time is probed at most once (see
``medmon.monitor.service.slots``). A pause shorter than the misfire grace is caught up with one probe
(coalescing), a longer one skips to the next scheduled time: never a burst.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from apscheduler.events import EVENT_SCHEDULER_SHUTDOWN
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_STOPPED, BaseScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.alerts import Channel, DeliveryPolicy, deliver_due
from medmon.db import session_scope, utcnow
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.alerting.signals import alert_pass
from medmon.monitor.governance.reports.period import Period
from medmon.monitor.plan.context import TaskContext
from medmon.monitor.plan.model import Plan, Task, parse_interval
from medmon.monitor.runs.pipeline import ProbeOutcome
from medmon.monitor.service.cadence import Cadence, describe
from medmon.monitor.service.cadence_ledger import cadence_lines, decide, on_schedule
from medmon.monitor.service.delivery import DeliveryWaker, deliver_until_quiet
from medmon.monitor.service.slots import explain_failure, last_fire_time, retry_candidates, run_slot, worker_identity
from medmon.probes.models import ProbeRun, RunStatus
from medmon.probes.runs import move_run

log = logging.getLogger("medmon.scheduler")

JOBSTORE_TABLE = "apscheduler_jobs"
GRID_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
CRON_GRACE_S = 300
FIRE_PROBE_REF = "medmon.monitor.service.scheduler:fire_probe"


def mark_interrupted(engine: Engine, now: datetime, *, only: Sequence[int] | None = None) -> int:
    """Runs left 'running' by a crash (or just ``only`` these) are marked interrupted, never half-counted."""
    with session_scope(engine) as session:
        query = select(ProbeRun).where(ProbeRun.status == RunStatus.running)
        if only is not None:
            query = query.where(col(ProbeRun.id).in_(list(only)))
        rows = session.exec(query).all()
        for run in rows:
            move_run(run, RunStatus.interrupted, now, "process stopped mid-probe")
            session.add(run)
        return len(rows)


def delivery_job(
    engine: Engine,
    plan: Plan,
    channels: Mapping[str, Channel],
    now: Callable[[], datetime],
    policy: DeliveryPolicy,
    busy: threading.Event | None = None,
) -> None:
    """The alert pass: heartbeat and staleness rules, the notifications now due (repeats,
    escalations, grouped changes), then deliver the outbox; again while notifications are
    written meanwhile (``busy`` tells the ``DeliveryWaker`` a pass is under way)."""

    def one_pass() -> None:
        try:
            with session_scope(engine) as session:
                alert_pass(session, plan, now())
            deliver_due(engine, channels, now, policy)
        except Exception:
            log.exception("alert delivery pass failed")

    deliver_until_quiet(one_pass, busy)


def start_delivery_waker(scheduler: BaseScheduler, engine: Engine, jobstore: str | None) -> DeliveryWaker:
    """Start the waker that runs the delivery job on each written notification; it stops with the scheduler."""
    waker = DeliveryWaker(scheduler, engine, jobstore=jobstore).start()
    scheduler.add_listener(lambda _event: waker.stop(), EVENT_SCHEDULER_SHUTDOWN)
    return waker


def oversight_job(engine: Engine, plan: Plan, now: Callable[[], datetime]) -> None:
    """Human oversight (``oversight.pass_every``): queue reviews, recompute the jury's agreement with
    clinicians where reviews arrived, safety clocks. Its own job, so the statistics (and the first
    ``import pingouin``, seconds) never delay alert delivery; the next alert pass notifies."""
    try:
        with session_scope(engine) as session:
            oversight_pass(session, plan, now())
    except Exception:
        log.exception("oversight pass failed")


def drift_report_job(engine: Engine, plan: Plan, now: Callable[[], datetime]) -> None:
    """Store an evidently drift report per task (``detection.drift_report_every``); tasks with
    too few answers are skipped. Reports inform the dashboard and never raise alerts."""
    from medmon.monitor.detection.reports import store_due_reports

    try:
        done = store_due_reports(engine, [t.id for t in plan.tasks], now(), window=plan.detection.drift_report_window)
    except Exception:
        log.exception("drift report pass failed")
        return
    log.info("drift reports stored for %s", ", ".join(t for t, r in done.items() if r is not None) or "no task")


def traffic_job(engine: Engine, plan: Plan, now: Callable[[], datetime]) -> None:
    """Roll up and stream the traffic received since the last pass (``traffic.detect_every``)."""
    from medmon.monitor.traffic.streams import traffic_job as run

    try:
        done = run(engine, plan, now())
    except Exception:
        log.exception("traffic pass failed; its spans stay waiting for the next pass")
        return
    if done.signals:
        log.info("traffic pass: %d span(s), %d alert change(s)", done.spans, len(done.signals))


RETENTION_TOOL = "medmon serve (daily retention purge)"
RETENTION_RETRY = timedelta(hours=1)


def retention_job(
    engine: Engine, plan: Plan, now: Callable[[], datetime], scheduler: BaseScheduler | None = None
) -> None:
    """The daily purge (``medmon.monitor.governance.retention.purge``): runs past ``retention.results``
    and raw traffic past ``traffic.retention`` (rollups stay), each purge an audit entry.

    A failure is logged, entered in the chain as a failed ``retention_purge`` and tried again an
    hour later (then daily): what is past retention stays until a purge succeeds, never silently.
    """
    from medmon.monitor.governance.retention import purge, record_failed_purge

    at = now()
    try:
        done = purge(engine, plan, at, tool=RETENTION_TOOL)
    except Exception as exc:
        seq = record_failed_purge(engine, plan, at, exc, RETENTION_TOOL)
        log.exception(
            "retention purge failed (%s); retrying in %s",
            f"recorded at audit seq {seq}" if seq is not None else "not recorded: the database refused",
            RETENTION_RETRY,
        )
        if scheduler is not None:
            scheduler.add_job(
                retention_job,
                "date",
                run_date=utcnow() + RETENTION_RETRY,
                args=[engine, plan, now],
                id="retention-retry",
                name="retention purge (retry)",
                jobstore="local",
                executor="local",
                replace_existing=True,
            )
        return
    log.info(
        "retention purge: %d run(s), %d result(s), %d traffic span(s) deleted%s",
        len(done.run_ids),
        done.results,
        done.traffic_spans,
        f" (audit seq {done.audit_seq})" if done.audit_seq is not None else "",
    )


def report_job(
    engine: Engine, plan: Plan, now: Callable[[], datetime], plan_path: Path | None, plan_text: str | None
) -> None:
    """Write the committee report whose schedule has passed (``reports``), once per period."""
    from medmon.monitor.service.reports import generate_due_report

    traffic = None
    if plan.traffic is not None:
        from medmon.monitor.read.traffic import traffic_summary

        def traffic(session: Session, period: Period) -> object:
            return traffic_summary(session, period.start, period.end)

    try:
        generate_due_report(engine, plan, now(), plan_text=plan_text, plan_path=plan_path, traffic=traffic)
    except Exception:
        log.exception("scheduled committee report failed; the next pass tries again")


# --- the persistent service scheduler -------------------------------------------------------


def task_trigger(task: Task, *, time_scale: float = 1.0, anchor: datetime = GRID_EPOCH) -> BaseTrigger:
    """A task's schedule: an interval on a grid anchored at ``anchor`` (run ``time_scale`` times
    faster on an accelerated clock), or a UTC cron line."""
    interval = task.interval
    if interval is not None:
        return IntervalTrigger(
            seconds=max(interval.total_seconds() / time_scale, 0.05), start_date=anchor, timezone=UTC
        )
    return CronTrigger.from_crontab(task.schedule, timezone=UTC)


def misfire_grace_s(plan: Plan, task: Task) -> int:
    """How late a probe may still start: the plan's ``service.misfire_grace``, else one interval.

    One interval means a short pause is caught up with one probe and a long one is skipped to
    the next scheduled time; cron schedules get five minutes.
    """
    if plan.service.misfire_grace is not None:
        return max(1, round(parse_interval(plan.service.misfire_grace).total_seconds()))
    interval = task.interval
    return max(1, round(interval.total_seconds())) if interval is not None else CRON_GRACE_S


def retry_window(plan: Plan, task: Task) -> timedelta:
    """How old a cut-short slot may be and still be retried: two intervals, or the grace."""
    interval = task.interval
    grace = timedelta(seconds=misfire_grace_s(plan, task))
    return max(2 * interval, grace) if interval is not None else grace


Dispatch = Callable[[str, datetime, bool], None]


@dataclass
class ServiceRuntime:
    """What a stored job needs when it fires in this process (never pickled)."""

    engine: Engine
    plan: Plan
    dispatch: Dispatch
    now: Callable[[], datetime] = utcnow
    busy: Callable[[], set[str]] = set
    retries: bool = True
    heartbeat: datetime | None = None
    triggers: dict[str, BaseTrigger] = field(default_factory=dict)
    # Adaptive cadence: the faster interval each task's job runs at now (absent: its schedule),
    # and the extra probes not run because the budget was spent.
    fast: dict[str, timedelta] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.triggers = {t.id: task_trigger(t) for t in self.plan.tasks}

    def slot_trigger(self, task_id: str) -> BaseTrigger:
        """The grid the task's job fires on now: the fast one while its cadence is raised."""
        fast = self.fast.get(task_id)
        return (
            self.triggers[task_id]
            if fast is None
            else IntervalTrigger(seconds=fast.total_seconds(), start_date=GRID_EPOCH, timezone=UTC)
        )

    def cadence_view(self) -> dict[str, dict[str, object]]:
        """Per task, adaptive cadence as ``/healthz`` shows it (read from the database)."""
        with Session(self.engine) as session:
            return cadence_lines(session, self.plan, self.triggers, self.now(), self.refused)


_RUNTIMES: dict[str, ServiceRuntime] = {}


@dataclass(frozen=True)
class _Placement:
    """Where a runtime's probe jobs live, to reschedule them: the scheduler and its clock's pace."""

    scheduler: BaseScheduler
    time_scale: float
    anchor: datetime


_PLACEMENTS: dict[str, _Placement] = {}


def register_runtime(key: str, runtime: ServiceRuntime) -> None:
    """Make ``runtime`` what stored jobs carrying ``key`` use in this process."""
    _RUNTIMES[key] = runtime


def unregister_runtime(key: str) -> None:
    _RUNTIMES.pop(key, None)


def fire_probe(runtime_key: str, task_id: str) -> None:
    """The stored probe job: work out which scheduled time this is, then dispatch it."""
    rt = _RUNTIMES.get(runtime_key)
    if rt is None or task_id not in rt.triggers:
        log.error("probe job for %s fired with no runtime %r in this process; skipped", task_id, runtime_key)
        return
    now = rt.now()
    task = rt.plan.task(task_id)
    lookback = timedelta(seconds=misfire_grace_s(rt.plan, task) + 1)
    scheduled = last_fire_time(rt.slot_trigger(task_id), now, lookback)
    if scheduled is None:
        log.warning(
            "probe of %s fired at %s with no scheduled time in the last %s (clock moved?); skipped",
            task_id,
            now.isoformat(),
            lookback,
        )
        return
    if task_id in rt.fast and not on_schedule(rt.triggers[task_id], scheduled):
        # An extra probe, between the schedule's own times: run it only if the evidence still
        # builds and the budget still pays for it (the check and the probe are one at a time).
        cadence = adapt_cadence(runtime_key, [task_id]).get(task_id)
        if cadence is None or not cadence.fast:
            rt.refused[task_id] = rt.refused.get(task_id, 0) + 1
            why = cadence.reason if cadence is not None else "adaptive cadence is off"
            log.warning("extra probe of %s for %s not run: %s", task_id, scheduled.isoformat(), why)
            return
    rt.dispatch(task_id, scheduled, False)
    if rt.plan.adaptive_cadence.enabled:
        adapt_cadence(runtime_key, [task_id])  # in process, the probe's evidence is stored by now


def adapt_cadence(runtime_key: str, task_ids: Sequence[str] | None = None) -> dict[str, Cadence]:
    """Decide each task's cadence (``medmon.monitor.service.cadence``) and reschedule its probe job
    where the decision changed: to the fast grid while a stream watches, back to the schedule after."""
    rt = _RUNTIMES.get(runtime_key)
    if rt is None or not rt.plan.adaptive_cadence.enabled:
        return {}
    tasks = [t for t in rt.plan.tasks if task_ids is None or t.id in task_ids]
    try:
        with Session(rt.engine) as session:
            decided = decide(session, rt.plan, tasks, rt.triggers, rt.now())
    except Exception as exc:  # the database may be away: keep the cadence as it is
        log.warning("adaptive cadence could not read the detectors: %s", exc)
        return {}
    place = _PLACEMENTS.get(runtime_key)
    out = {}
    for task in tasks:
        cadence, used = decided[task.id]
        out[task.id] = cadence
        if cadence.interval == rt.fast.get(task.id):
            continue
        if cadence.interval is None:
            rt.fast.pop(task.id, None)
        else:
            rt.fast[task.id] = cadence.interval
        if place is not None:
            trigger = (
                task_trigger(task, time_scale=place.time_scale, anchor=place.anchor)
                if cadence.interval is None
                else IntervalTrigger(
                    seconds=max(cadence.interval.total_seconds() / place.time_scale, 0.05),
                    start_date=place.anchor,
                    timezone=UTC,
                )
            )
            try:
                place.scheduler.reschedule_job(f"probe:{task.id}", jobstore="default", trigger=trigger)
            except Exception as exc:
                log.warning("could not reschedule the probe of %s: %s", task.id, exc)
        log.info("%s", describe(task.id, task.schedule, cadence, used, rt.plan.adaptive_cadence))
    return out


def cadence_job(runtime_key: str) -> None:
    """The periodic cadence pass: evidence also changes between a task's own probes (Celery
    workers update it in other processes), and a new day renews the budget."""
    adapt_cadence(runtime_key)


def heartbeat_job(runtime_key: str) -> None:
    rt = _RUNTIMES.get(runtime_key)
    if rt is not None:
        rt.heartbeat = utcnow()


def recovery_job(runtime_key: str) -> None:
    """Retry each task's newest slot whose probe was cut short (crash, database outage)."""
    rt = _RUNTIMES.get(runtime_key)
    if rt is None or not rt.retries:
        return
    windows = {t.id: retry_window(rt.plan, t) for t in rt.plan.tasks}
    try:
        candidates = retry_candidates(rt.engine, windows, rt.now(), busy=rt.busy())
    except Exception as exc:  # the database may be away; the next pass tries again
        log.warning("retry pass could not read slots: %s", exc)
        return
    for c in candidates:
        log.info("retrying %s@%s (attempt %d)", c.task_id, c.scheduled_for.isoformat(), c.attempts + 1)
        rt.dispatch(c.task_id, c.scheduled_for, True)


class InProcessDispatch:
    """Run slots in the scheduler's threads, one probe per task at a time."""

    def __init__(
        self,
        engine: Engine,
        plan: Plan,
        contexts: Sequence[TaskContext],
        *,
        now: Callable[[], datetime] = utcnow,
        on_outcome: Callable[[ProbeOutcome], None] | None = None,
        identity: str | None = None,
    ) -> None:
        self.engine, self.plan, self.now, self.on_outcome = engine, plan, now, on_outcome
        self.contexts = {c.task.id: c for c in contexts}
        self.identity = identity or worker_identity()
        self._locks = {task_id: threading.Lock() for task_id in self.contexts}
        self._runs: dict[str, int] = {}
        self._guard = threading.Lock()

    def busy(self) -> set[str]:
        """Tasks with a probe in flight in this process."""
        return {t for t, lock in self._locks.items() if lock.locked()}

    def running_runs(self) -> list[int]:
        with self._guard:
            return list(self._runs.values())

    def __call__(self, task_id: str, scheduled_for: datetime, retry: bool) -> None:
        lock = self._locks[task_id]
        if not lock.acquire(blocking=False):
            log.warning(
                "a probe of %s is still in flight; the one scheduled for %s is skipped",
                task_id,
                scheduled_for.isoformat(),
            )
            return
        ctx = self.contexts[task_id]

        def started(run_id: int) -> None:
            with self._guard:
                self._runs[task_id] = run_id

        try:
            outcome = run_slot(
                self.engine,
                self.plan,
                ctx,
                scheduled_for,
                now=self.now,
                by=self.identity,
                seed=self.plan.service.seed,
                retry=retry,
                on_start=started,
            )
        except Exception as exc:
            log.error(
                "probe of task %s for %s failed: %s",
                task_id,
                scheduled_for.isoformat(),
                explain_failure(exc, self.engine),
                exc_info=True,
            )  # its run failed; the slot is retried
            return
        finally:
            with self._guard:
                self._runs.pop(task_id, None)
            lock.release()
        if outcome is not None and self.on_outcome is not None:
            self.on_outcome(outcome)


class ServiceScheduler(BackgroundScheduler):
    """A BackgroundScheduler whose loop survives a database error mid-pass.

    APScheduler retries a failed job-store read, but an error while storing a job's next run
    time escapes its loop and silently ends the scheduler thread. The job already ran; its slot
    row stops it running twice when the time is re-read after the database is back. The pass
    its loop makes on waking from a shutdown is skipped (it would submit to stopped executors).
    """

    def _process_jobs(self) -> float | None:
        if self.state == STATE_STOPPED:
            return None
        try:
            wait: float | None = super()._process_jobs()  # APScheduler ships no types
            return wait
        except Exception as exc:
            log.warning("scheduler pass failed (%s); retrying in %ss", exc, self.jobstore_retry_interval)
            return float(self.jobstore_retry_interval)


def build_service_scheduler(
    engine: Engine,
    plan: Plan,
    runtime_key: str,
    channels: Mapping[str, Channel],
    *,
    now: Callable[[], datetime] = utcnow,
    delivery_every_s: float = 1.0,
    recovery_every_s: float = 2.0,
    plan_path: Path | None = None,
    plan_text: str | None = None,
    time_scale: float = 1.0,
    anchor: datetime = GRID_EPOCH,
) -> ServiceScheduler:
    """The service's scheduler, started paused with its stored jobs reconciled with the plan.

    The caller registers the runtime under ``runtime_key`` and calls ``resume()``. A stored
    probe job whose schedule is unchanged keeps its next run time (so a pause is caught up per
    the misfire grace); a changed or new one is (re)created; one for a task no longer in the
    plan is removed. On an accelerated clock (the demo, whose ``now`` runs ``time_scale`` times
    faster) the probe, judge-canary, oversight and drift-report schedules run that much faster,
    the probe grid anchored at ``anchor``.
    """
    workers = max(2, min(len(plan.tasks), 16))
    scheduler = ServiceScheduler(
        jobstores={"default": SQLAlchemyJobStore(engine=engine, tablename=JOBSTORE_TABLE), "local": MemoryJobStore()},
        executors={"default": ThreadPoolExecutor(workers), "local": ThreadPoolExecutor(3)},
        job_defaults={"coalesce": True, "max_instances": 1},
        timezone=UTC,
        jobstore_retry_interval=2.0,
    )
    scheduler.start(paused=True)
    sync_probe_jobs(scheduler, plan, runtime_key, time_scale=time_scale, anchor=anchor)
    _PLACEMENTS[runtime_key] = placement = _Placement(scheduler, time_scale, anchor)

    def forget(_event: object) -> None:  # this scheduler's placement, not a newer one under the same key
        if _PLACEMENTS.get(runtime_key) is placement:
            del _PLACEMENTS[runtime_key]

    scheduler.add_listener(forget, EVENT_SCHEDULER_SHUTDOWN)
    local = {"jobstore": "local", "executor": "local", "replace_existing": True}
    scheduler.add_job(
        heartbeat_job,
        IntervalTrigger(seconds=1.0),
        args=[runtime_key],
        id="heartbeat",
        misfire_grace_time=5,
        next_run_time=utcnow(),
        **local,
    )
    waker = start_delivery_waker(scheduler, engine, "local")
    scheduler.add_job(
        delivery_job,
        IntervalTrigger(seconds=delivery_every_s),
        id="deliver",
        name="deliver alerts",
        args=[
            engine,
            plan,
            channels,
            now,
            DeliveryPolicy(base_delay_s=min(max(0.2, delivery_every_s), 5.0)),
            waker.busy,
        ],
        misfire_grace_time=5,
        **local,
    )
    from medmon.monitor.runs.judging import add_judging_job

    add_judging_job(
        scheduler, engine, plan, now, time_scale=time_scale, anchor=GRID_EPOCH, **local
    )  # with a canary_schedule
    from medmon.monitor.runs.identity import add_identity_job

    add_identity_job(scheduler, engine, plan, now, time_scale=time_scale, anchor=GRID_EPOCH, **local)  # with identity:
    # Jitter keeps the retry pass from falling into step with a task's own grid: a pass that
    # always lands while the task's scheduled probe runs would skip its retries forever.
    scheduler.add_job(
        recovery_job,
        IntervalTrigger(seconds=recovery_every_s, jitter=recovery_every_s / 2),
        args=[runtime_key],
        id="recover",
        misfire_grace_time=5,
        next_run_time=utcnow(),
        **local,
    )
    oversight_s = max(parse_interval(plan.oversight.pass_every).total_seconds() / time_scale, 0.5)
    scheduler.add_job(
        oversight_job,
        IntervalTrigger(seconds=oversight_s),
        args=[engine, plan, now],
        id="oversight",
        name="human oversight",
        misfire_grace_time=30,
        **local,
    )
    if plan.adaptive_cadence.enabled:  # on start too: a restart finds the jobs on the plan's schedule
        cadence_s = max(min(60.0, plan.adaptive_cadence.fastest.total_seconds() / 4) / time_scale, 0.5)
        scheduler.add_job(
            cadence_job,
            IntervalTrigger(seconds=cadence_s),
            args=[runtime_key],
            id="cadence",
            name="adaptive cadence",
            misfire_grace_time=30,
            next_run_time=utcnow(),
            **local,
        )
    if plan.detection.drift_report_every is not None:
        every_s = max(parse_interval(plan.detection.drift_report_every).total_seconds() / time_scale, 0.5)
        trigger = IntervalTrigger(seconds=every_s, start_date=GRID_EPOCH, timezone=UTC)
        scheduler.add_job(
            drift_report_job,
            trigger,
            args=[engine, plan, now],
            id="drift-reports",
            name="drift reports",
            misfire_grace_time=max(60, round(every_s / 4)),
            **local,
        )
    if plan.traffic is not None:  # the traffic pass and (below) real-answer judging
        every_s = parse_interval(plan.traffic.detect_every).total_seconds()
        scheduler.add_job(
            traffic_job,
            IntervalTrigger(seconds=every_s),
            args=[engine, plan, now],
            id="traffic",
            name="traffic pass",
            misfire_grace_time=max(5, round(every_s)),
            **local,
        )
    scheduler.add_job(  # daily at 00:00 UTC: results past retention.results, traffic past traffic.retention
        retention_job,
        IntervalTrigger(days=1, start_date=GRID_EPOCH, timezone=UTC),
        args=[engine, plan, now, scheduler],
        id="retention",
        name="retention purge",
        misfire_grace_time=3600,
        **local,
    )
    if plan.traffic is not None and plan.traffic.judging is not None and plan.jury is not None:
        from medmon.monitor.traffic.judging import judging_job

        every_s = parse_interval(plan.traffic.judging.every).total_seconds()
        scheduler.add_job(
            judging_job,
            IntervalTrigger(seconds=every_s),
            args=[engine, plan, now],
            id="traffic-judging",
            name="judge real answers",
            misfire_grace_time=max(5, round(every_s)),
            **local,
        )
    if plan.reports is not None:  # on start (a schedule missed while stopped), then every few minutes
        from medmon.monitor.service.reports import CHECK_EVERY_S

        scheduler.add_job(
            report_job,
            IntervalTrigger(seconds=CHECK_EVERY_S),
            args=[engine, plan, now, plan_path, plan_text],
            id="committee-report",
            name="scheduled committee report",
            misfire_grace_time=60,
            next_run_time=utcnow(),
            **local,
        )
    return scheduler


def sync_probe_jobs(
    scheduler: BackgroundScheduler,
    plan: Plan,
    runtime_key: str,
    *,
    time_scale: float = 1.0,
    anchor: datetime = GRID_EPOCH,
) -> dict[str, str]:
    """Make the stored probe jobs match the plan; return what happened to each ('kept', 'added', 'removed')."""
    done: dict[str, str] = {}
    wanted = {f"probe:{t.id}": t for t in plan.tasks}
    for job in scheduler.get_jobs(jobstore="default"):
        if job.id not in wanted:
            job.remove()
            done[job.id] = "removed"
    for job_id, task in wanted.items():
        trigger, args = task_trigger(task, time_scale=time_scale, anchor=anchor), [runtime_key, task.id]
        grace = max(1, round(misfire_grace_s(plan, task) / time_scale))
        existing = scheduler.get_job(job_id, jobstore="default")
        if (
            existing is not None
            and existing.func_ref == FIRE_PROBE_REF
            and repr(existing.trigger) == repr(trigger)
            and list(existing.args) == args
            and existing.misfire_grace_time == grace
        ):
            done[job_id] = "kept"
            continue
        scheduler.add_job(
            fire_probe,
            trigger,
            args=args,
            id=job_id,
            name=f"probe {task.id} ({task.schedule})",
            jobstore="default",
            executor="default",
            misfire_grace_time=grace,
            replace_existing=True,
        )
        done[job_id] = "added"
    return done
