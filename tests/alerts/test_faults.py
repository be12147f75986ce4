"""Receiver faults over real sockets on 127.0.0.1: 500, 429 with Retry-After, a receiver that hangs
past the timeout, one that closes the connection, and a 400; each ends as the outbox expects."""

from __future__ import annotations

import email.utils
import random
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import SecretStr
from pytest_httpserver import HTTPServer
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from werkzeug import Request, Response

from medmon.alerts import DeliveryPolicy, Notification, NotificationStatus, NotifyPolicy, WebhookChannel, deliver_due
from medmon.alerts.channels import WebhookConfig
from tests.alerts.helpers import FakeClock, apply_signal, fire


def webhook(url: str, timeout_s: float = 5.0) -> WebhookChannel:
    return WebhookChannel(WebhookConfig(name="hook", url=SecretStr(url), timeout_s=timeout_s))


def one_pass(
    engine: Engine, url: str, clock: FakeClock, policy: NotifyPolicy, *, timeout_s: float = 5.0
) -> Notification:
    with Session(engine) as s:
        apply_signal(s, fire(), policy, clock())
        s.commit()
    deliver_due(engine, {"hook": webhook(url, timeout_s)}, clock, DeliveryPolicy(rng=random.Random(2)))
    with Session(engine) as s:
        return s.exec(select(Notification)).one()


def test_500_is_retried_with_backoff(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/hook").respond_with_data("internal error", status=500)
    n = one_pass(engine, httpserver.url_for("/hook"), clock, policy)
    assert (n.status, n.attempts) == (NotificationStatus.pending, 1)
    assert n.last_error == "hook: receiver answered HTTP 500: internal error"
    assert clock() + timedelta(seconds=0.5) <= n.next_attempt_at <= clock() + timedelta(seconds=1)


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_429_retry_after_is_honoured(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock, httpserver: HTTPServer, form: str
) -> None:
    # An HTTP date counts from the response's own Date header (the receiver's clock, not ours).
    later = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    headers = {"Retry-After": "120" if form == "seconds" else later}
    httpserver.expect_request("/hook").respond_with_data("slow down", status=429, headers=headers)
    n = one_pass(engine, httpserver.url_for("/hook"), clock, policy)
    assert n.status == NotificationStatus.pending
    wait = (n.next_attempt_at - clock()).total_seconds()
    assert wait == 120 if form == "seconds" else 118 <= wait <= 121


def test_400_is_permanent(engine: Engine, policy: NotifyPolicy, clock: FakeClock, httpserver: HTTPServer) -> None:
    httpserver.expect_request("/hook").respond_with_data("invalid_payload", status=400)
    n = one_pass(engine, httpserver.url_for("/hook"), clock, policy)
    assert (n.status, n.last_error) == (NotificationStatus.dead, "hook: receiver answered HTTP 400: invalid_payload")


def test_receiver_hanging_past_the_timeout(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock, httpserver: HTTPServer
) -> None:
    release = threading.Event()

    def hang(_: Request) -> Response:
        release.wait(10)
        return Response("late", status=200)

    httpserver.expect_request("/hook").respond_with_handler(hang)
    started = time.monotonic()
    try:
        n = one_pass(engine, httpserver.url_for("/hook"), clock, policy, timeout_s=0.3)
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert (n.status, n.last_error) == (NotificationStatus.pending, "hook: receiver timed out")


@pytest.fixture
def closing_server() -> Iterator[str]:
    """A server that reads the request and closes the connection without answering."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/hook"
    stop.set()
    thread.join(5)
    sock.close()


def test_receiver_closing_the_connection(
    engine: Engine, policy: NotifyPolicy, clock: FakeClock, closing_server: str
) -> None:
    n = one_pass(engine, closing_server, clock, policy)
    assert n.status == NotificationStatus.pending and n.attempts == 1
    # Closed after reading (RemoteProtocolError) or reset with the body still unread (ReadError):
    # either way the receiver was not reached and the notification waits for its retry.
    assert n.last_error in (
        "hook: cannot reach receiver (RemoteProtocolError)",
        "hook: cannot reach receiver (ReadError)",
    )


def test_connection_refused(engine: Engine, policy: NotifyPolicy, clock: FakeClock) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: refused
        n = one_pass(engine, f"http://127.0.0.1:{port}/hook", clock, policy)
    assert n.last_error == "hook: cannot reach receiver (ConnectError)" and n.status == NotificationStatus.pending
