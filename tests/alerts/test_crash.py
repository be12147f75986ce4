"""Kill the delivery process with SIGKILL mid-delivery: a restart delivers everything, and the
receiver accepts each idempotency key exactly once (it drops the re-sent copy), in order per group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select

from medmon.alerts import Notification, NotificationStatus, NotifyPolicy, RouteSpec, apply_signals
from medmon.alerts.receiver import create_receiver
from medmon.monitor.service.webserver import RunningServer
from medmon.monitor.storage import make_engine
from tests.alerts.helpers import FakeClock, clear, fire

SECRET = "crash-test-secret"
ROOT = Path(__file__).resolve().parents[2]
GROUPS, ROUNDS = 30, 20


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def fill_outbox(engine: Engine) -> list[tuple[str, str]]:
    """30 tasks firing and recovering in turn: 600 notifications, 20 in each group's lane."""
    clock = FakeClock(datetime.now(UTC) - timedelta(days=1))
    policy = NotifyPolicy(routes=(RouteSpec("hook"),))
    with Session(engine) as s:
        for r in range(ROUNDS):
            maker = fire if r % 2 == 0 else clear
            apply_signals(s, [maker(task=f"task-{g:02d}") for g in range(GROUPS)], policy, clock())
            clock.advance(minutes=6)
        s.commit()
        rows = s.exec(select(Notification).order_by(Notification.id)).all()
        return [(n.group_key, n.idempotency_key) for n in rows]


def delivered(engine: Engine) -> int:
    with Session(engine) as s:
        return int(
            s.exec(
                select(func.count())
                .select_from(Notification)
                .where(Notification.status == NotificationStatus.delivered)
            ).one()
        )


def worker(db_url: str, url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MEDMON_TEST_WEBHOOK_SECRET": SECRET, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tests.alerts.deliver_proc", db_url, url], cwd=ROOT, env=env)


@pytest.mark.slow
@pytest.mark.process
def test_sigkill_mid_delivery_loses_nothing_and_duplicates_nothing(
    tmp_path: Path, db_url: str, serve: Callable[[object], RunningServer]
) -> None:
    engine = make_engine(db_url)
    expected = fill_outbox(engine)
    assert len(expected) == GROUPS * ROUNDS
    app = create_receiver(SECRET)
    state = app.state.receiver
    url = f"{serve(app).url}/alerts"

    first = worker(db_url, url)
    try:
        wait_for(lambda: len(state.received) >= len(expected) // 3, 60, "a third of the notifications")
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait(10)
    assert first.returncode == -signal.SIGKILL
    at_kill = delivered(engine)
    assert 0 < at_kill < len(expected), "the kill must land mid-delivery"

    second = worker(db_url, url)
    try:
        assert second.wait(120) == 0
    finally:
        second.kill()
    assert delivered(engine) == len(expected)
    keys = [r.idempotency_key for r in state.received]
    assert len(keys) == len(set(keys)) == len(expected)  # each key accepted exactly once
    assert set(keys) == {k for _, k in expected}
    assert state.duplicates <= 1 and state.rejected == 0  # at most the one in flight was re-sent, and dropped
    order = {k: i for i, (_, k) in enumerate(expected)}
    for group in {g for g, _ in expected}:
        got = [order[r.idempotency_key] for r in state.received if r.body["group_key"] == group]
        assert got == sorted(got), f"{group} delivered out of order"
