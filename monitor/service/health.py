"""The service's HTTP endpoints: ``/healthz`` for orchestrators, ``/metrics`` for Prometheus.

``/healthz`` answers 200 when the database is reachable and, on the leader, the scheduler's
heartbeat is fresh; a standby that can reach the database is healthy too (it is waiting, as it
should). Otherwise 503, with the reason in the JSON body. Last probe times are reported per task,
flagged ``overdue`` past two schedule periods; an overdue task does not make the service
unhealthy (a failing model is an alert, not a dead service).

``/metrics`` reads its counts from the database on each scrape, so they are the same whichever
process (service, standby, Celery worker) probed, and survive restarts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from medmon.alerts import Alert, Notification, NotificationStatus
from medmon.db import utcnow
from medmon.monitor.models import DetectorState
from medmon.monitor.plan.model import Task
from medmon.probes.models import ProbeRun

log = logging.getLogger("medmon.health")

HEARTBEAT_MAX_AGE_S = 10.0
CRON_OVERDUE = timedelta(days=1)


@dataclass
class ServiceStatus:
    """What the running service tells its endpoints (updated by the service, read per request)."""

    identity: str
    executor: str = "inprocess"
    role: str = "starting"  # starting | standby | leader | stopping
    lock: str = ""
    heartbeat: Callable[[], datetime | None] = lambda: None
    queue_depth: Callable[[], int | None] = lambda: None
    started_at: datetime = field(default_factory=utcnow)
    # Adaptive cadence per task (``ServiceRuntime.cadence_view``): the interval, budget used, one line.
    cadence: Callable[[], Mapping[str, Mapping[str, object]]] = lambda: {}


def _database_ok(engine: Engine) -> str | None:
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"


def _last_probes(session: Session) -> dict[str, datetime]:
    rows = session.exec(
        select(ProbeRun.task_id, func.max(ProbeRun.finished_at))
        .where(col(ProbeRun.finished_at).is_not(None))
        .group_by(ProbeRun.task_id)
    ).all()
    return {task: when for task, when in rows if when is not None}


def health_report(
    engine: Engine, tasks: Sequence[Task], status: ServiceStatus, now: datetime
) -> tuple[int, dict[str, object]]:
    """The ``/healthz`` status code and body."""
    problems = []
    db_error = _database_ok(engine)
    if db_error is not None:
        problems.append(f"database unreachable: {db_error}")
    beat = status.heartbeat()
    beat_age = (now - beat).total_seconds() if beat is not None else None
    if status.role == "leader" and (beat_age is None or beat_age > HEARTBEAT_MAX_AGE_S):
        problems.append("scheduler heartbeat is stale" if beat_age is not None else "scheduler has not started")
    if status.role in ("starting", "stopping"):
        problems.append(f"service is {status.role}")
    due = []
    last: dict[str, datetime] = {}
    if db_error is None:
        try:
            with Session(engine) as session:
                last = _last_probes(session)
        except Exception as exc:
            problems.append(f"cannot read probe runs: {exc}")
    cadence: Mapping[str, Mapping[str, object]] = {}
    if db_error is None:
        try:
            cadence = status.cadence()
        except Exception as exc:  # the cadence is information: it never makes the service unhealthy
            log.warning("healthz: cannot read adaptive cadence: %s", exc)
    for task in tasks:
        when = last.get(task.id)
        period = 2 * task.interval if task.interval is not None else CRON_OVERDUE
        due.append(
            {
                "task": task.id,
                "schedule": task.schedule,
                "last_probe": when.isoformat() if when else None,
                "age_s": round((now - when).total_seconds(), 3) if when else None,
                "overdue": when is None or now - when > period,
                **({"cadence": dict(cadence[task.id])} if task.id in cadence else {}),
            }
        )
    body: dict[str, object] = {
        "status": "ok" if not problems else "unhealthy",
        "problems": problems,
        "role": status.role,
        "identity": status.identity,
        "executor": status.executor,
        "lock": status.lock,
        "scheduler": {
            "heartbeat": beat.isoformat() if beat else None,
            "heartbeat_age_s": round(beat_age, 3) if beat_age is not None else None,
        },
        "database": {"reachable": db_error is None, "error": db_error},
        "tasks": due,
    }
    return (200 if not problems else 503), body


class DatabaseCollector(Collector):
    """Prometheus metrics read from the database at scrape time."""

    def __init__(self, engine: Engine, status: ServiceStatus, now: Callable[[], datetime]) -> None:
        self.engine, self.status, self.now = engine, status, now

    def collect(self) -> Iterator[Metric]:
        leader = GaugeMetricFamily(
            "medmon_leader", "1 if this process schedules probes, 0 on a standby", labels=["identity"]
        )
        leader.add_metric([self.status.identity], 1.0 if self.status.role == "leader" else 0.0)
        yield leader
        beat = self.status.heartbeat()
        if beat is not None:
            yield GaugeMetricFamily(
                "medmon_scheduler_heartbeat_age_seconds",
                "Seconds since the scheduler last ran",
                value=(self.now() - beat).total_seconds(),
            )
        depth = self.status.queue_depth()
        if depth is not None:
            yield GaugeMetricFamily("medmon_celery_queue_depth", "Probe messages waiting on the broker", value=depth)
        db_up = GaugeMetricFamily("medmon_database_up", "1 if the database answered this scrape")
        try:
            with Session(self.engine) as session:
                families = list(self._from_database(session))
        except Exception as exc:
            log.warning("metrics: database unavailable: %s", exc)
            db_up.add_metric([], 0.0)
            yield db_up
            return
        db_up.add_metric([], 1.0)
        yield db_up
        yield from families

    def _from_database(self, session: Session) -> Iterator[Metric]:
        runs = CounterMetricFamily("medmon_probe_runs", "Probe runs by task and outcome", labels=["task", "status"])
        results = CounterMetricFamily("medmon_probe_results", "Canary answers recorded", labels=["task"])
        errors = CounterMetricFamily("medmon_probe_errors", "Model calls that failed (not scored)", labels=["task"])
        for task, status, count in session.exec(
            select(ProbeRun.task_id, ProbeRun.status, func.count()).group_by(ProbeRun.task_id, ProbeRun.status)
        ).all():
            runs.add_metric([task, getattr(status, "value", status)], float(count))
        totals = session.exec(
            select(ProbeRun.task_id, func.sum(ProbeRun.n_canaries), func.sum(ProbeRun.n_errors)).group_by(
                ProbeRun.task_id
            )
        ).all()
        for task, n, n_err in totals:
            results.add_metric([task], float(n or 0))
            errors.add_metric([task], float(n_err or 0))
        yield from (runs, results, errors)
        last = GaugeMetricFamily(
            "medmon_last_probe_timestamp_seconds", "When each task's last probe finished", labels=["task"]
        )
        for task, when in _last_probes(session).items():
            last.add_metric([task], when.timestamp())
        yield last
        alerts = GaugeMetricFamily("medmon_alerts", "Alerts by status and severity", labels=["status", "severity"])
        for status, severity, count in session.exec(
            select(Alert.status, Alert.severity, func.count()).group_by(Alert.status, Alert.severity)
        ).all():
            alerts.add_metric([getattr(status, "value", status), getattr(severity, "value", severity)], float(count))
        yield alerts
        outbox = GaugeMetricFamily(
            "medmon_outbox_notifications", "Alert notifications by delivery status", labels=["status"]
        )
        counts = dict(session.exec(select(Notification.status, func.count()).group_by(Notification.status)).all())
        for st in NotificationStatus:
            outbox.add_metric([st.value], float(counts.get(st, counts.get(st.value, 0))))
        yield outbox
        pending = counts.get(NotificationStatus.pending, counts.get(NotificationStatus.pending.value, 0))
        yield GaugeMetricFamily(
            "medmon_outbox_queue_depth", "Notifications waiting to be delivered", value=float(pending)
        )
        detectors = GaugeMetricFamily(
            "medmon_detector_streams", "Monitored streams by detector status", labels=["task", "status"]
        )
        for task, status, count in session.exec(
            select(DetectorState.task_id, DetectorState.status, func.count()).group_by(
                DetectorState.task_id, DetectorState.status
            )
        ).all():
            detectors.add_metric([task, getattr(status, "value", status)], float(count))
        yield detectors
        try:
            view = self.status.cadence()
        except Exception as exc:
            log.warning("metrics: cannot read adaptive cadence: %s", exc)
            return
        yield from cadence_metrics(view)


def cadence_metrics(view: Mapping[str, Mapping[str, object]]) -> Iterator[Metric]:
    """Adaptive cadence per task: the interval probed at, extra probes used today, refused extras."""
    interval = GaugeMetricFamily("medmon_probe_interval_seconds", "How often each task is probed now", labels=["task"])
    used = GaugeMetricFamily(
        "medmon_cadence_extra_probes_today", "Extra probes adaptive cadence ran today (UTC)", labels=["task"]
    )
    refused = CounterMetricFamily(
        "medmon_cadence_extra_probes_refused",
        "Extra probes not run because the evidence faded or the budget was spent (this process)",
        labels=["task"],
    )
    for task, row in view.items():
        if isinstance(row.get("interval_s"), int | float):
            interval.add_metric([task], float(row["interval_s"]))  # type: ignore[arg-type]
        used.add_metric([task], float(row.get("extra_probes_today", 0)))  # type: ignore[arg-type]
        refused.add_metric([task], float(row.get("extra_probes_refused", 0)))  # type: ignore[arg-type]
    yield from (interval, used, refused)


def create_health_app(
    engine: Engine, tasks: Sequence[Task], status: ServiceStatus, *, now: Callable[[], datetime] = utcnow
) -> Starlette:
    """The ASGI app serving ``/healthz`` and ``/metrics`` (serve it with ``serve_in_thread``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(engine, status, now))

    def healthz(_: Request) -> Response:
        code, body = health_report(engine, tasks, status, now())
        return JSONResponse(body, status_code=code)

    def metrics(_: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    # Sync handlers run in a thread pool, so a slow database never blocks the event loop.
    return Starlette(routes=[Route("/healthz", healthz, methods=["GET"]), Route("/metrics", metrics, methods=["GET"])])
