"""The outbox worker over real HTTP on 127.0.0.1: backoff with jitter, Retry-After, dead letters and
requeue, order per group, and a receiver that is down for an hour (on an injected clock)."""

from __future__ import annotations

import random
import socket
from collections.abc import Callable
from datetime import timedelta

import pytest
from pydantic import SecretStr
from pytest_httpserver import HTTPServer
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from werkzeug import Request, Response

from medmon.alerts import (
    DeliveryPolicy,
    Notification,
    NotificationStatus,
    NotifyPolicy,
    WebhookChannel,
    dead_letters,
    deliver_due,
    requeue,
)
from medmon.alerts.channels import WebhookConfig
from medmon.alerts.receiver import create_receiver
from medmon.monitor.service.webserver import RunningServer, serve_in_thread
from tests.alerts.helpers import FakeClock, apply_signal, clear, fire

SECRET = "outbox-test-secret"


def webhook(url: str, *, secret: str | None = None, timeout_s: float = 5.0) -> WebhookChannel:
    return WebhookChannel(
        WebhookConfig(
            name="hook", url=SecretStr(url), timeout_s=timeout_s, secret=SecretStr(secret) if secret else None
        )
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_backoff_is_exponential_with_jitter_and_honours_retry_after() -> None:
    policy = DeliveryPolicy(base_delay_s=1, max_delay_s=600, rng=random.Random(3))
    for attempt in range(1, 15):
        ceiling = min(600, 2 ** (attempt - 1))
        d = policy.delay(attempt, None).total_seconds()
        assert ceiling / 2 <= d <= ceiling, (attempt, d)
    assert policy.delay(1, 120).total_seconds() == 120  # Retry-After wins over a shorter backoff
    assert policy.delay(12, 5).total_seconds() >= 300  # but never shortens it
    assert policy.delay(1, 86_400).total_seconds() == 3600  # and is capped


class _LowJitter(random.Random):
    """Every jitter at its low end: the shortest the retries can span."""

    def uniform(self, a: float, b: float) -> float:
        return a


def test_default_retries_outlast_a_one_hour_outage() -> None:
    policy = DeliveryPolicy(rng=_LowJitter())
    assert sum((policy.delay(k, None) for k in range(1, policy.max_attempts)), timedelta()) > timedelta(hours=1)
    with pytest.raises(ValueError, match="max_attempts"):
        DeliveryPolicy(max_attempts=0)


def test_dead_letter_after_n_attempts_then_requeue(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook").respond_with_data("try later", status=503)
    channels = {"hook": webhook(httpserver.url_for("/hook"))}
    retry = DeliveryPolicy(max_attempts=3, base_delay_s=1, max_delay_s=4, rng=random.Random(1))
    with Session(engine) as s:
        apply_signal(s, fire(), policy, clock())
        s.commit()
    for _ in range(3):
        deliver_due(engine, channels, clock, retry)
        clock.advance(seconds=10)
    with Session(engine) as s:
        (dead,) = dead_letters(s)
        assert dead.attempts == 3 and dead.status == NotificationStatus.dead
        assert dead.last_error == "hook: receiver answered HTTP 503: try later"
        assert dead.id is not None
        requeue(s, dead.id, "ops@hospital.example", "receiver fixed", clock())
        s.commit()
        assert (dead.status, dead.attempts, dead.requeued_by) == (NotificationStatus.pending, 0, "ops@hospital.example")
    httpserver.clear()
    httpserver.expect_request("/hook").respond_with_data("", status=204)
    assert deliver_due(engine, channels, clock, retry).delivered == 1
    with Session(engine) as s:
        assert dead_letters(s) == []


def test_requeue_errors(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        apply_signal(s, fire(), policy, clock())
        s.commit()
        (n,) = s.exec(select(Notification)).all()
        assert n.id is not None
        with pytest.raises(LookupError, match="no notification with id 999"):
            requeue(s, 999, "ops", "n", clock())
        with pytest.raises(ValueError, match="is pending; only a dead letter"):
            requeue(s, n.id, "ops", "n", clock())


def test_permanent_error_dead_at_once_and_lane_moves_on(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock, httpserver: HTTPServer
) -> None:
    calls: list[str] = []

    def handler(request: Request) -> Response:
        calls.append(request.json["event"])
        return Response("bad", status=400 if len(calls) == 1 else 200)

    httpserver.expect_request("/hook").respond_with_handler(handler)
    with Session(engine) as s:
        apply_signal(s, fire(), policy, clock())
        clock.advance(hours=1)
        apply_signal(s, clear(), policy, clock())
        s.commit()
    report = deliver_due(engine, {"hook": webhook(httpserver.url_for("/hook"))}, clock)
    assert (report.dead, report.delivered) == (1, 1)
    assert calls == ["firing", "resolved"]


def test_unknown_route_is_a_dead_letter(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with Session(engine) as s:
        apply_signal(s, fire(), policy, clock())
        s.commit()
    assert deliver_due(engine, {}, clock).dead == 1
    with Session(engine) as s:
        assert dead_letters(s)[0].last_error == "no channel configured for route 'hook'"


def _deliver_until(
    engine: Engine,
    channels: dict[str, WebhookChannel],
    clock: FakeClock,
    until: Callable[[], bool],
    policy: DeliveryPolicy,
    limit_s: float,
) -> None:
    """Run delivery passes, jumping the clock to the next retry that is due, like a scheduler ticking."""
    end = clock() + timedelta(seconds=limit_s)
    while not until() and clock() < end:
        deliver_due(engine, channels, clock, policy)
        with Session(engine) as s:
            due = s.exec(
                select(Notification.next_attempt_at)
                .where(Notification.status == NotificationStatus.pending, Notification.next_attempt_at > clock())
                .order_by(col(Notification.next_attempt_at))
            ).first()
        clock.t = max(clock() + timedelta(seconds=1), due if due is not None else clock())


def test_receiver_down_for_an_hour_gets_everything_in_order(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock
) -> None:
    port = free_port()  # nothing listens here for the first hour: connections are refused
    channels = {"hook": webhook(f"http://127.0.0.1:{port}/alerts", secret=SECRET)}
    retry = DeliveryPolicy(rng=random.Random(7))
    start = clock()
    with Session(engine) as s:  # three tasks; each fires, one resolves, one fires again
        for task in ("dosing", "triage", "notes"):
            apply_signal(s, fire(task=task), policy, clock())
        clock.advance(minutes=20)
        apply_signal(s, clear(task="triage"), policy, clock())
        clock.advance(minutes=20)
        apply_signal(s, fire(task="triage"), policy, clock())
        s.commit()
        expected = [
            (n.group_key, n.event, n.idempotency_key)
            for n in s.exec(select(Notification).order_by(Notification.id)).all()
        ]
    clock.t = start
    _deliver_until(engine, channels, clock, lambda: False, retry, limit_s=3600)
    with Session(engine) as s:
        statuses = s.exec(select(Notification.status, Notification.attempts)).all()
        assert all(st == NotificationStatus.pending for st, _ in statuses)
        assert max(a for _, a in statuses) >= 8  # it kept trying all hour
    receiver_app = create_receiver(SECRET)
    server: RunningServer = serve_in_thread(receiver_app, port=port)
    try:
        state = receiver_app.state.receiver
        _deliver_until(engine, channels, clock, lambda: len(state.received) == len(expected), retry, limit_s=3600)
        got = [(r.body["group_key"], r.body["event"], r.idempotency_key) for r in state.received]
        for group in {g for g, _, _ in expected}:
            assert [e for e in got if e[0] == group] == [e for e in expected if e[0] == group]
        assert sorted(got) == sorted(expected) and state.duplicates == 0 and state.rejected == 0
    finally:
        server.stop()
    with Session(engine) as s:
        assert dead_letters(s) == []
