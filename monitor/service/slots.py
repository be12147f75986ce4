"""Scheduled probe slots: each (task, scheduled time) is probed once, and retried if cut short.

Whoever executes a scheduled probe (the service's own thread pool or a Celery worker) first
claims its slot by inserting a row under a unique (task, time) constraint. A second claim of the
same slot fails in the database, whatever raced to make it: a restart re-firing a time already
probed, a standby that took over, a clock set back, a broker redelivering a message. A slot whose
run was cut short (process killed, database gone mid-probe) can be claimed again with
``retry=True``, at most ``MAX_ATTEMPTS`` times; the abandoned run is marked interrupted, so no
run is ever half-counted.
"""

from __future__ import annotations

import logging
import os
import random
import socket
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from apscheduler.triggers.base import BaseTrigger
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import col, select

from medmon.db import as_utc, session_scope
from medmon.monitor.models import ProbeSlot
from medmon.monitor.plan.context import TaskContext
from medmon.monitor.plan.model import Plan
from medmon.monitor.runs.pipeline import ProbeOutcome, run_task_probe
from medmon.probes.models import ProbeRun, RunStatus
from medmon.probes.runs import move_run

log = logging.getLogger("medmon.slots")

MAX_ATTEMPTS = 3
RACE_RETRIES = 2
RETRYABLE = (RunStatus.running, RunStatus.interrupted, RunStatus.failed)


def worker_identity() -> str:
    """``host:pid`` of this process, recorded on every slot it claims."""
    return f"{socket.gethostname()}:{os.getpid()}"


def utc(value: datetime) -> datetime:
    """A slot time: UTC, tz-aware, whole milliseconds.

    Slot times are compared for equality in the database, and APScheduler computes interval
    fire times in float seconds, so ``start + n * step`` and ``previous + step`` can differ in
    the last microsecond; rounding makes both the same slot.
    """
    return datetime.fromtimestamp(round(as_utc(value).timestamp(), 3), tz=UTC)


def slot_rng(seed: int | None, task_id: str, scheduled_for: datetime) -> random.Random:
    """The canary sampler for one slot.

    With a seed, the draw depends only on (seed, task, time), so a slot probed in process and
    the same slot probed by a Celery worker ask the same canaries. Without one it is fresh
    entropy, as a production sampler should be.
    """
    if seed is None:
        return random.Random()
    return random.Random(f"{seed}:{task_id}:{utc(scheduled_for).isoformat()}")


def last_fire_time(trigger: BaseTrigger, now: datetime, lookback: timedelta) -> datetime | None:
    """The latest time ``trigger`` fires in ``(now - lookback, now]``, or None.

    APScheduler does not tell a job which scheduled time it is running for; with coalescing and
    a misfire grace no longer than ``lookback`` it is always this one.
    """
    fire = trigger.get_next_fire_time(None, now - lookback)
    last = None
    while fire is not None and fire <= now:
        last = fire
        fire = trigger.get_next_fire_time(fire, fire + timedelta(microseconds=1))
    return utc(last) if last is not None else None


def claim_slot(
    engine: Engine, task_id: str, scheduled_for: datetime, *, by: str, now: datetime, retry: bool = False
) -> int | None:
    """Claim a slot for probing; return its id, or None when it is taken or done.

    With ``retry`` an existing slot whose run never completed is claimed again (its running run
    is marked interrupted first), unless it has used up ``MAX_ATTEMPTS``.
    """
    when = utc(scheduled_for)
    try:
        with session_scope(engine) as session:
            slot = ProbeSlot(task_id=task_id, scheduled_for=when, claimed_by=by, claimed_at=now)
            session.add(slot)
            session.flush()
            return slot.id
    except IntegrityError:
        if not retry:
            return None
    with session_scope(engine) as session:
        slot = session.exec(
            select(ProbeSlot).where(ProbeSlot.task_id == task_id, ProbeSlot.scheduled_for == when).with_for_update()
        ).one()
        run = session.get(ProbeRun, slot.run_id) if slot.run_id is not None else None
        if run is not None and run.status == RunStatus.complete:
            return None
        if slot.attempts >= MAX_ATTEMPTS:
            log.warning("slot %s@%s gave up after %d attempts", task_id, when.isoformat(), slot.attempts)
            return None
        if run is not None and run.status == RunStatus.running:
            move_run(run, RunStatus.interrupted, now, "abandoned mid-probe; retried")
            session.add(run)
        slot.attempts += 1
        slot.claimed_by, slot.claimed_at, slot.run_id = by, now, None
        session.add(slot)
        return slot.id


def run_slot(
    engine: Engine,
    plan: Plan,
    ctx: TaskContext,
    scheduled_for: datetime,
    *,
    now: Callable[[], datetime],
    by: str,
    seed: int | None = None,
    retry: bool = False,
    on_start: Callable[[int], None] | None = None,
) -> ProbeOutcome | None:
    """Claim and probe one scheduled slot; None when another process has (or had) it.

    Errors propagate: the caller's job wrapper is the one place that stores them.
    """
    for attempt in range(RACE_RETRIES + 1):
        slot_id = claim_slot(engine, ctx.task.id, scheduled_for, by=by, now=now(), retry=retry or attempt > 0)
        if slot_id is None:
            log.info("slot %s@%s already probed or being probed; skipped", ctx.task.id, utc(scheduled_for).isoformat())
            return None

        try:
            return run_task_probe(
                engine,
                plan,
                ctx,
                rng=slot_rng(seed, ctx.task.id, scheduled_for),
                now=now,
                purpose="retry" if retry or attempt else "scheduled",
                on_start=on_start,
                slot_id=slot_id,
            )
        except IntegrityError as exc:
            # Two processes raced to write a shared row (e.g. the first record of a baseline that
            # several tasks use); the loser's transaction rolled back whole, so run the slot again.
            if attempt == RACE_RETRIES:
                raise
            log.warning(
                "probe of %s@%s lost a write race (%s); running it again",
                ctx.task.id,
                utc(scheduled_for).isoformat(),
                str(exc.orig).splitlines()[0] if exc.orig else exc,
            )
    return None  # unreachable: the loop returns or raises


def explain_failure(exc: BaseException, engine: Engine) -> str:
    """One line an operator can act on, for the usual ways a probe's storage fails."""
    where = engine.url.render_as_string(hide_password=True)
    text = str(getattr(exc, "orig", None) or exc)
    if "database or disk is full" in text or "No space left" in text or "could not extend file" in text:
        return (
            f"the database is full ({where}): free disk space (or raise its size limit); nothing was "
            "half-written and the slot is retried once the database accepts writes"
        )
    if isinstance(exc, OperationalError):
        return (
            f"the database is unreachable or refused the write ({where}): {text.splitlines()[0][:200]}; "
            "the slot is retried when it is back"
        )
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


@dataclass(frozen=True)
class RetryCandidate:
    task_id: str
    scheduled_for: datetime
    attempts: int


def retry_candidates(
    engine: Engine, windows: Mapping[str, timedelta], now: datetime, busy: Collection[str] = ()
) -> list[RetryCandidate]:
    """Per task, the newest recent slot whose probe never completed and has attempts left.

    One slot per task per pass (and none for a task with a probe in flight), so a long outage
    is caught up one probe at a time rather than in a burst; slots older than the task's
    window are left as they are (their runs stay marked interrupted).
    """
    found = []
    with session_scope(engine) as session:
        for task_id, window in windows.items():
            if task_id in busy:
                continue
            recent = session.exec(
                select(ProbeSlot)
                .where(
                    ProbeSlot.task_id == task_id,
                    ProbeSlot.scheduled_for >= now - window,
                    ProbeSlot.attempts < MAX_ATTEMPTS,
                )
                .order_by(col(ProbeSlot.scheduled_for).desc())
            ).all()
            for slot in recent:
                run = session.get(ProbeRun, slot.run_id) if slot.run_id is not None else None
                if run is None or run.status in RETRYABLE:
                    found.append(RetryCandidate(task_id, utc(slot.scheduled_for), slot.attempts))
                    break
    return found
