"""``medmon serve``: the long-running service around the scheduler.

Start: validate the plan, wait for the database (it may come up after us), refuse an old schema,
open ``/healthz`` and ``/metrics``, then wait for the leader lock: one scheduler per database,
any other ``medmon serve`` is a hot standby. On becoming leader: mark runs a dead leader left
running as interrupted, resume the stored schedule, retry cut-short slots. While leading,
check the lock every second; a lost lock (database restarted, connection killed) pauses the
scheduler until the lock is ours again.

Stop (SIGTERM/SIGINT): stop scheduling, let probes in flight finish for ``stop_timeout_s``; a
second signal or the timeout abandons them cleanly, marking their runs interrupted so the next
start retries their slots. No run is ever left half-written: results are committed with the
run's completion in one transaction.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy.engine import Engine
from starlette.applications import Starlette

from medmon.db import resolve_url, utcnow
from medmon.monitor.errors import StorageError
from medmon.monitor.governance.audit import local_actor
from medmon.monitor.governance.change_control import record_plan_file
from medmon.monitor.governance.checks import check_plan
from medmon.monitor.governance.thresholds import in_force
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, parse_interval
from medmon.monitor.plan.privacy import mask_logs
from medmon.monitor.plan.routing import build_channels, require_endpoint_env
from medmon.monitor.runs.pipeline import ProbeOutcome
from medmon.monitor.service.health import ServiceStatus, create_health_app
from medmon.monitor.service.leader import Leadership, leadership_for
from medmon.monitor.service.otlp import build_otlp
from medmon.monitor.service.receiver import create_receiver, receiver_token
from medmon.monitor.service.scheduler import (
    InProcessDispatch,
    ServiceRuntime,
    ServiceScheduler,
    build_service_scheduler,
    mark_interrupted,
    register_runtime,
    unregister_runtime,
)
from medmon.monitor.service.slots import worker_identity
from medmon.monitor.service.webserver import RunningServer, serve_in_thread
from medmon.monitor.storage import make_engine
from medmon.monitor.storage.migrate import ensure_current
from medmon.probes.pool import shared_pool
from medmon.scrub import setup_logging

log = logging.getLogger("medmon.service")


@dataclass
class ServiceOptions:
    """Knobs for ``run_service``; the defaults are the production ones."""

    health_port: int | None = None  # None: the plan's service.health_port (None there: no endpoints)
    traffic_port: int | None = None  # None: the plan's traffic.port (no traffic section: no receiver)
    runtime_key: str = "service"
    check_every_s: float = 1.0
    stop_timeout_s: float = 30.0
    database_retry_s: float = 2.0
    install_signals: bool = True
    now: Callable[[], datetime] = utcnow


@dataclass
class ServiceResult:
    led: bool = False
    abandoned_runs: list[int] = field(default_factory=list)


def wait_for_database(url: str, stop: threading.Event, retry_s: float) -> Engine | None:
    """An engine with every table, retrying while the database is unreachable; None if stopped."""
    attempt = 0
    while not stop.is_set():
        try:
            return make_engine(url)
        except StorageError as exc:
            attempt += 1
            log.warning(
                "database unreachable (attempt %d), retrying in %gs: %s",
                attempt,
                retry_s,
                str(exc).splitlines()[0][:300],
            )
            stop.wait(retry_s)
    return None


def _acquire(leadership: Leadership, stop: threading.Event, poll_s: float) -> bool:
    while not stop.is_set():
        if leadership.try_acquire():
            return True
        stop.wait(poll_s)
    return False


def _install_signals(stop: threading.Event, abandon: threading.Event) -> None:
    def handler(signum: int, _frame: object) -> None:
        if stop.is_set():
            log.warning("second %s: abandoning probes in flight", signal.Signals(signum).name)
            abandon.set()
        else:
            log.info("%s: stopping after probes in flight", signal.Signals(signum).name)
            stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)


def make_dispatch(
    engine: Engine, plan: Plan, now: Callable[[], datetime], on_outcome: Callable[[ProbeOutcome], None] | None = None
) -> tuple[object, ServiceRuntime]:
    """The executor the plan asks for, wrapped in the runtime its stored jobs will find (``on_outcome``: in process)."""
    if plan.service.executor == "celery":
        from medmon.monitor.plan.timeouts import visibility_timeout_of
        from medmon.monitor.service.workers import CeleryDispatch, broker_url, make_celery

        app = make_celery(broker_url(plan), queue=plan.service.queue, visibility_timeout_s=visibility_timeout_of(plan))
        celery = CeleryDispatch(app, plan)
        return celery, ServiceRuntime(engine, plan, celery, now=now, retries=False)
    local = InProcessDispatch(engine, plan, [load_context(plan, t) for t in plan.tasks], now=now, on_outcome=on_outcome)
    return local, ServiceRuntime(engine, plan, local, now=now, busy=local.busy)


def _finish(
    scheduler: ServiceScheduler | None,
    dispatch: object,
    engine: Engine,
    timeout_s: float,
    abandon: threading.Event,
    now: Callable[[], datetime],
) -> list[int]:
    """Stop scheduling, wait for probes in flight, and mark any still running as interrupted."""
    if scheduler is not None:
        scheduler.shutdown(wait=False)
    if not isinstance(dispatch, InProcessDispatch):
        return []
    deadline = time.monotonic() + timeout_s
    while dispatch.busy() and time.monotonic() < deadline and not abandon.wait(0.05):
        pass
    left = dispatch.running_runs()
    if left:
        try:
            mark_interrupted(engine, now(), only=left)
            log.warning(
                "abandoned %d probe(s) in flight; their runs are marked interrupted and will be retried", len(left)
            )
        except Exception as exc:
            log.error("could not mark abandoned runs %s interrupted (the next start will): %s", left, exc)
    return left


def _start_receiver(engine: Engine, plan: Plan, token: str | None, opts: ServiceOptions) -> RunningServer | None:
    """The OTLP/HTTP traces receiver, on every replica (leader or standby): all of them ingest."""
    if plan.traffic is None:
        return None
    port = opts.traffic_port if opts.traffic_port is not None else plan.traffic.port
    if port is None:
        return None
    app = create_receiver(engine, plan, token=token, now=opts.now)
    server = serve_in_thread(app, host=plan.traffic.host, port=port)
    log.info("receiving OTLP/HTTP traces on %s/v1/traces", server.url)
    return server


def run_service(
    plan_path: Path, stop: threading.Event | None = None, *, options: ServiceOptions | None = None
) -> ServiceResult:
    """Run until SIGTERM/SIGINT (or ``stop`` is set); see the module docstring for the lifecycle."""
    if setup_logging(default=logging.INFO) > logging.DEBUG:
        for chatty in (
            "apscheduler",
            "alembic",
            "httpx2",
            "httpx",
        ):  # per-job and per-request lines drown the service's own
            logging.getLogger(chatty).setLevel(logging.WARNING)
    opts = options or ServiceOptions()
    plan = check_plan(plan_path)
    mask_logs(plan)  # from here on no log line carries a secret the plan refers to
    require_endpoint_env(plan)  # every call would fail with 401: refuse now, naming the variable
    token = receiver_token(plan.traffic) if plan.traffic is not None and plan.traffic.port is not None else None
    stop = stop or threading.Event()
    abandon = threading.Event()
    if opts.install_signals and threading.current_thread() is threading.main_thread():
        _install_signals(stop, abandon)
    result = ServiceResult()
    url = resolve_url(plan.storage.url)
    engine = wait_for_database(url, stop, opts.database_retry_s)
    if engine is None:
        return result
    ensure_current(engine, stamp=False)  # refuse an old schema before writing anything; the leader stamps
    record_plan_file(engine, plan_path, local_actor("medmon serve"), opts.now())  # audits a changed plan
    plan = in_force(engine, plan)  # an edited threshold waits for an owner's approval
    identity = worker_identity()
    dispatch, runtime = make_dispatch(engine, plan, opts.now)
    status = ServiceStatus(
        identity=identity,
        executor=plan.service.executor,
        heartbeat=lambda: runtime.heartbeat,
        queue_depth=getattr(dispatch, "queue_depth", lambda: None),
        cadence=runtime.cadence_view if plan.adaptive_cadence.enabled else dict,
    )
    telemetry = build_otlp(plan.service.otlp_endpoint, deployment=plan.deployment.name)
    if telemetry is not None:
        telemetry.install()
        log.info("exporting telemetry to %s", telemetry.endpoint)
    port = opts.health_port if opts.health_port is not None else plan.service.health_port
    health: RunningServer | None = None
    if port is not None:
        health = serve_in_thread(
            create_health_app(engine, plan.tasks, status, now=opts.now), host=plan.service.health_host, port=port
        )
        log.info("health endpoints on %s (/healthz, /metrics)", health.url)
    receiver = _start_receiver(engine, plan, token, opts)
    leadership = leadership_for(url, identity)
    status.lock = leadership.description
    poll_s = parse_interval(plan.service.standby_poll).total_seconds()
    scheduler: ServiceScheduler | None = None
    try:
        while not stop.is_set():
            status.role = "standby"
            log.info("standby: waiting for the leader lock (%s)", leadership.description)
            if not _acquire(leadership, stop, poll_s):
                break
            status.role = "leader"
            result.led = True
            if scheduler is None:
                ensure_current(engine)
                if plan.service.executor == "inprocess":
                    left = mark_interrupted(engine, opts.now())
                    if left:
                        log.info("marked %d probe run(s) left running by a previous leader as interrupted", left)
                register_runtime(opts.runtime_key, runtime)
                scheduler = build_service_scheduler(
                    engine,
                    plan,
                    opts.runtime_key,
                    build_channels(plan),
                    now=opts.now,
                    plan_path=plan_path,
                    plan_text=plan_path.read_text("utf-8"),
                )
            scheduler.resume()
            log.info(
                "leading as %s: %d task(s) from %s, executor %s",
                identity,
                len(plan.tasks),
                plan_path,
                plan.service.executor,
            )
            while not stop.wait(opts.check_every_s):
                if not leadership.still_held():
                    log.warning("lost the leader lock; scheduler paused until it is ours again")
                    scheduler.pause()
                    break
    finally:
        status.role = "stopping"
        log.info("stopping: letting probes in flight finish (up to %gs)", opts.stop_timeout_s)
        result.abandoned_runs = _finish(scheduler, dispatch, engine, opts.stop_timeout_s, abandon, opts.now)
        leadership.release()
        unregister_runtime(opts.runtime_key)
        if not result.abandoned_runs:  # a probe still waiting on the model keeps its client
            shared_pool().close()
        if health is not None:
            health.stop()
        if receiver is not None:
            receiver.stop()
            app = receiver.server.config.app  # the receiver's Starlette app
            judging = getattr(app.state, "judging", None) if isinstance(app, Starlette) else None  # judging from memory
            if judging is not None:
                judging.stop()
        if telemetry is not None:
            telemetry.shutdown()
        engine.dispose()
    return result
