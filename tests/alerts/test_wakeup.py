"""A written notification wakes the delivery worker at once, rather than at its next tick.

In one process: committing a notification counts one announcement, a rolled-back one does not,
and the service's delivery job (on a 30 s tick here) delivers within a moment. Across processes
on PostgreSQL: a notification committed through another engine reaches this process's listener
by ``LISTEN/NOTIFY``, and a listener whose connection is killed comes back.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger
from pydantic import SecretStr
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import OUTBOX, DeliveryPolicy, NotifyPolicy, OutboxListener, WebhookChannel, deliver_due
from medmon.alerts.channels import WebhookConfig
from medmon.alerts.policy import RouteSpec
from medmon.alerts.receiver import create_receiver
from medmon.db import utcnow
from medmon.monitor.service.delivery import DeliveryWaker, deliver_until_quiet
from medmon.monitor.service.scheduler import start_delivery_waker
from medmon.monitor.service.webserver import serve_in_thread
from medmon.monitor.storage import make_engine
from tests.alerts.helpers import apply_signal, fire

SECRET = "wakeup-test-secret"
POLICY = NotifyPolicy(
    routes=(RouteSpec("hook"),),
    group_wait=timedelta(0),
    group_interval=timedelta(minutes=5),
    repeat_interval=timedelta(hours=4),
)


def _write(engine: Engine, task: str, *, commit: bool = True) -> None:
    with Session(engine) as s:
        apply_signal(s, fire(task), POLICY, utcnow())
        if commit:
            s.commit()
        else:
            s.rollback()


def test_a_commit_announces_and_a_rollback_does_not(engine: Engine) -> None:
    before = OUTBOX.count()
    _write(engine, "rolled-back", commit=False)
    assert OUTBOX.count() == before
    _write(engine, "committed")
    assert OUTBOX.count() == before + 1


def test_the_delivery_job_runs_when_a_notification_is_written(engine: Engine) -> None:
    receiver = create_receiver(SECRET)
    server = serve_in_thread(receiver)
    channel = WebhookChannel(
        WebhookConfig(name="hook", url=SecretStr(f"{server.url}/alerts"), secret=SecretStr(SECRET))
    )
    scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})
    waker = DeliveryWaker(scheduler, engine)
    policy = DeliveryPolicy(base_delay_s=0.2, rng=random.Random(0))
    scheduler.add_job(
        lambda: deliver_until_quiet(lambda: deliver_due(engine, {"hook": channel}, utcnow, policy), waker.busy),
        IntervalTrigger(seconds=30),
        id="deliver",
        misfire_grace_time=5,
    )  # a tick far away
    scheduler.start()
    waker.start()
    try:
        delays = []
        for i in range(5):
            started = time.monotonic()
            _write(engine, f"task-{i}")
            deadline = started + 10
            while len(receiver.state.receiver.received) <= i and time.monotonic() < deadline:
                time.sleep(0.01)
            delays.append(time.monotonic() - started)
        assert len(receiver.state.receiver.received) == 5
        assert max(delays) < 5, delays  # woken, not the 30 s tick
    finally:
        scheduler.shutdown(wait=False)
        waker.stop()
        server.stop()


def test_a_write_during_a_pass_makes_the_pass_go_round_again(engine: Engine) -> None:
    rounds: list[int] = []

    def one_pass() -> None:
        rounds.append(1)
        if len(rounds) == 1:
            _write(engine, "during-the-pass")

    assert deliver_until_quiet(one_pass) == 2


@pytest.mark.postgres
def test_another_process_wakes_this_one_on_postgresql(postgres_url: str) -> None:
    here = make_engine(postgres_url)
    there = make_engine(postgres_url)  # another engine: its own connections, as another process has
    listener = OutboxListener(here, poll_s=0.1).start()
    try:
        time.sleep(0.5)  # LISTEN is issued
        before = OUTBOX.count()
        with Session(there) as s:  # the in-process announcement is switched off for this write
            apply_signal(s, fire("elsewhere"), POLICY, utcnow())
            s.info.pop("medmon.outbox_written", None)
            s.commit()
        assert OUTBOX.wait_past(before, 5.0) > before
        # The listener's connection is killed: it reconnects and hears the next one.
        with there.connect() as conn:
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()"
                )
            )
            conn.commit()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            seen = OUTBOX.count()
            with Session(there) as s:
                apply_signal(s, fire(f"after-{time.monotonic()}"), POLICY, utcnow())
                s.info.pop("medmon.outbox_written", None)
                s.commit()
            if OUTBOX.wait_past(seen, 1.0) > seen:
                break
        else:
            pytest.fail("the listener did not come back after its connection was killed")
    finally:
        listener.stop()
        here.dispose()
        there.dispose()


def test_the_waker_stops_with_its_scheduler(engine: Engine) -> None:
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.start()
    start_delivery_waker(scheduler, engine, None)
    assert any(t.name == "medmon-delivery-waker" and t.is_alive() for t in threading.enumerate())
    scheduler.shutdown(wait=False)
    assert not any(t.name == "medmon-delivery-waker" and t.is_alive() for t in threading.enumerate())
