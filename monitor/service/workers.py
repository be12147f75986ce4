"""Scale-out on Celery: the leader enqueues scheduled probes, ``medmon worker`` processes run them.

A message names only the task id, the scheduled time and a digest of the sender's plan; each
worker loads its own copy of the plan (same file, deployed with the worker) and writes to the
shared database. Slots (``medmon.monitor.service.slots``) make execution idempotent: a message delivered twice
probes once. Messages are acknowledged after the probe (``acks_late``) and requeued if the
worker dies mid-probe, and a redelivered message may claim its slot again. With the same
``service.seed`` a slot draws the same canaries in a worker as in process, so results match.

Settings follow ecosystem.md: ``task_acks_late``, ``worker_prefetch_multiplier=1``, JSON only.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from celery import Celery, Task
from sqlalchemy.engine import Engine

from medmon.db import utcnow
from medmon.monitor.plan.context import TaskContext
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.timeouts import visibility_timeout_of
from medmon.monitor.service.slots import run_slot, worker_identity
from medmon.probes.pool import shared_pool

log = logging.getLogger("medmon.celery")

PROBE_TASK = "medmon.probe"
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"


def broker_url(plan: Plan) -> str:
    """The broker URL from the variable the plan names, else a local Redis."""
    return os.environ.get(plan.service.broker_url_env) or DEFAULT_BROKER


def plan_digest(plan: Plan) -> str:
    """A short hash of what decides a probe's behaviour (not where the database or broker are)."""
    body = plan.model_dump_json(exclude={"storage", "service"})
    return hashlib.sha256(body.encode()).hexdigest()[:16]


@dataclass
class WorkerRuntime:
    """What this worker process probes with (set before the worker starts consuming)."""

    engine: Engine
    plan: Plan
    contexts: dict[str, TaskContext]
    identity: str
    digest: str


_WORKER: dict[str, WorkerRuntime] = {}


def register_worker_runtime(app: Celery, runtime: WorkerRuntime) -> None:
    """Attach ``runtime`` to ``app``'s probe task in this process."""
    _WORKER[app.main] = runtime


def probe(self: Task, task_id: str, scheduled_for: str, digest: str) -> dict[str, Any] | None:
    """Probe one slot; a redelivered message may retry a slot its first worker left unfinished."""
    rt = _WORKER.get(self.app.main)
    if rt is None:
        raise RuntimeError("this Celery worker has no medmon runtime; start it with 'medmon worker plan.yaml'")
    if digest != rt.digest:
        log.warning(
            "probe %s@%s was scheduled from a different plan (%s, this worker has %s); running it with "
            "this worker's plan",
            task_id,
            scheduled_for,
            digest,
            rt.digest,
        )
    ctx = rt.contexts.get(task_id)
    if ctx is None:
        log.error("task %r is not in this worker's plan; message dropped", task_id)
        return None
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    outcome = run_slot(
        rt.engine,
        rt.plan,
        ctx,
        datetime.fromisoformat(scheduled_for),
        now=utcnow,
        by=rt.identity,
        seed=rt.plan.service.seed,
        retry=redelivered,
    )
    if outcome is None:
        return None
    return {"task": outcome.task_id, "run": outcome.run_id, "results": outcome.results, "errors": outcome.errors}


def make_celery(broker: str, *, queue: str, name: str = "medmon", visibility_timeout_s: float = 3600) -> Celery:
    """A Celery app with medmon's probe task, configured for at-least-once, one-at-a-time delivery.

    A message not acknowledged within ``visibility_timeout_s`` (its worker died) is handed to the
    next worker that polls: on Redis, at its start and then every ``unacked_restore_interval``.
    """
    app = Celery(name, broker=broker, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_default_queue=queue,
        task_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        enable_utc=True,
        broker_transport_options={
            "visibility_timeout": visibility_timeout_s,
            "unacked_restore_interval": max(1, min(10, round(visibility_timeout_s / 2))),
            "unacked_restore_throttle": 1,
        },
    )
    app.task(name=PROBE_TASK, bind=True)(probe)
    return app


class CeleryDispatch:
    """The service's dispatch in ``executor: celery`` mode: enqueue, never probe."""

    def __init__(self, app: Celery, plan: Plan) -> None:
        self.app, self.queue, self.digest = app, plan.service.queue, plan_digest(plan)

    def __call__(self, task_id: str, scheduled_for: datetime, retry: bool) -> None:
        try:
            self.app.send_task(PROBE_TASK, args=[task_id, scheduled_for.isoformat(), self.digest], queue=self.queue)
        except Exception as exc:  # the broker may be away: this slot is lost, the next one is tried
            log.error("could not enqueue probe %s@%s: %s", task_id, scheduled_for.isoformat(), exc)

    def queue_depth(self) -> int | None:
        """Messages waiting in the probe queue (Redis brokers), None when it cannot be read."""
        try:
            with self.app.connection_for_write() as conn:
                return int(conn.default_channel.client.llen(self.queue))
        except Exception:
            return None


def worker_runtime(engine: Engine, plan: Plan, contexts: list[TaskContext]) -> WorkerRuntime:
    return WorkerRuntime(engine, plan, {c.task.id: c for c in contexts}, worker_identity(), plan_digest(plan))


def worker_argv(plan: Plan, *, concurrency: int = 1, hostname: str | None = None, loglevel: str = "INFO") -> list[str]:
    """Arguments for ``Celery.worker_main``: solo pool for one slot, threads for more."""
    pool = "solo" if concurrency <= 1 else "threads"
    argv = [
        "worker",
        f"--pool={pool}",
        f"--concurrency={max(1, concurrency)}",
        f"--queues={plan.service.queue}",
        f"--loglevel={loglevel}",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    return argv


def run_worker(plan_path: Path, *, concurrency: int = 1, hostname: str | None = None) -> None:
    """``medmon worker``: consume probe messages until stopped (Celery handles SIGTERM: warm shutdown).

    Logging is set up (secrets masked) before Celery's: Celery then keeps the root handler, and
    its own task logger, which does not propagate, gets the same filter from Celery's signal.
    """
    from celery import signals

    from medmon.monitor.governance.checks import check_plan
    from medmon.monitor.governance.thresholds import in_force
    from medmon.monitor.plan.context import load_context
    from medmon.monitor.plan.privacy import mask_logs
    from medmon.monitor.storage import make_engine
    from medmon.scrub import install_filter, setup_logging

    level = setup_logging(default=logging.INFO)
    signals.after_setup_logger.connect(lambda **_: install_filter(), weak=False)
    signals.after_setup_task_logger.connect(lambda **_: install_filter(), weak=False)
    plan = check_plan(plan_path)
    mask_logs(plan)
    engine = make_engine(plan.storage.url)
    plan = in_force(engine, plan)  # the thresholds an owner approved, as the service uses
    app = make_celery(broker_url(plan), queue=plan.service.queue, visibility_timeout_s=visibility_timeout_of(plan))
    register_worker_runtime(app, worker_runtime(engine, plan, [load_context(plan, t) for t in plan.tasks]))
    try:
        app.worker_main(
            worker_argv(plan, concurrency=concurrency, hostname=hostname, loglevel=logging.getLevelName(level))
        )
    finally:
        shared_pool().close()  # the model clients this worker kept open across its probes
        engine.dispose()
