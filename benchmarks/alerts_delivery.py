"""Benchmark: alert delivery through the outbox to a local webhook receiver on 127.0.0.1.

Three figures, each with a delivery worker in its own process (``--worker``, the real outbox
and the real clock) and the signed-webhook receiver (``medmon.alerts.receiver``) in this process:

1. throughput: notifications delivered per second, draining a full outbox (many groups);
2. latency: time from a finding (the alert change committed) to the webhook received, with
   the worker polling every second like the service's scheduler, and polling fast;
3. robustness: a 10,000-alert burst in one simulated minute, grouped per task; the receiver is
   down for a while (connections refused), comes back, the worker is killed with SIGKILL
   mid-delivery and restarted. Delivered must equal what the outbox holds, with every
   idempotency key accepted exactly once.

Usage::

    .venv/bin/python benchmarks/alerts_delivery.py [--notifications 3000] [--latency-samples 30]
                                                   [--burst 10000] [--down-s 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic import SecretStr  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session, func, select  # noqa: E402

from medmon.alerts import (  # noqa: E402
    DeliveryPolicy,
    Notification,
    NotificationStatus,
    NotifyPolicy,
    Severity,
    Signal,
    Subject,
    WebhookChannel,
    apply_signal,
    apply_signals,
    deliver_due,
    flush,
    pending_count,
)
from medmon.alerts.channels import WebhookConfig  # noqa: E402
from medmon.alerts.receiver import ReceiverState, create_receiver  # noqa: E402
from medmon.db import utcnow  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.monitor.service.webserver import RunningServer, serve_in_thread  # noqa: E402

SECRET_ENV = "MEDMON_BENCH_WEBHOOK_SECRET"
SECRET = "benchmark-webhook-secret"
POLICY = NotifyPolicy.for_routes(["hook"])


def signal_for(task: str, metric: str, firing: bool) -> Signal:
    subject = Subject("production", task, "medcalc_bench", "Clinical Decision Support", "Dr. Owner <o@h.example>",
                      f"http://127.0.0.1:8501/task?task={task}", Severity.critical)
    summary = f"{task}: {metric} {'fired' if firing else 'ok'}"
    return subject.signal("drift_drop", metric, firing=firing, summary=summary,
                          evidence={"estimate": 0.6, "ci_low": 0.55, "ci_high": 0.65, "n": 100})


# --- the worker process -------------------------------------------------------------------------

def worker_main(database: str, url: str, every_s: float, drain: bool) -> int:
    """Deliver with the real clock; with ``drain``, exit once the outbox is empty."""
    engine = make_engine(database, create=False)
    channel = WebhookChannel(WebhookConfig(name="hook", url=SecretStr(url), secret=SecretStr(os.environ[SECRET_ENV])))
    policy = DeliveryPolicy(base_delay_s=0.2, max_delay_s=2.0, rng=random.Random(1))
    tick = threading.Event()
    while True:
        report = deliver_due(engine, {"hook": channel}, utcnow, policy)
        if drain:
            with Session(engine) as session:
                if pending_count(session) == 0:
                    return 0
        if not drain or report.delivered == 0:
            tick.wait(every_s)


def start_worker(db_url: str, url: str, *, every_s: float = 0.05, drain: bool = True) -> subprocess.Popen[bytes]:
    args = [sys.executable, str(Path(__file__).resolve()), "--worker", db_url, url, str(every_s)]
    return subprocess.Popen(args + (["--drain"] if drain else []), cwd=ROOT, env={**os.environ, SECRET_ENV: SECRET})


# --- helpers -------------------------------------------------------------------------------------

def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def counts(engine: Engine) -> tuple[int, int]:
    with Session(engine) as s:
        total = int(s.exec(select(func.count()).select_from(Notification)).one())
        done = int(s.exec(select(func.count()).select_from(Notification)
                          .where(Notification.status == NotificationStatus.delivered)).one())
    return total, done


def keys_ok(engine: Engine, state: ReceiverState) -> tuple[int, int, int]:
    """(expected keys, keys accepted, keys accepted more than once)."""
    with Session(engine) as s:
        expected = set(s.exec(select(Notification.idempotency_key)).all())
    accepted = [r.idempotency_key for r in state.received]
    repeats = len(accepted) - len(set(accepted))
    assert set(accepted) == expected, "receiver and outbox disagree on the keys"
    return len(expected), len(set(accepted)), repeats


# --- the three figures ---------------------------------------------------------------------------

def throughput(workdir: Path, notifications: int) -> dict[str, float]:
    db_url = f"sqlite:///{workdir / 'throughput.db'}"
    engine = make_engine(db_url)
    groups = 100
    rounds = max(1, notifications // groups)
    t = datetime.now(timezone.utc) - timedelta(days=1)
    with Session(engine) as s:  # tasks fire and recover in turn: one notification per group per round
        for r in range(rounds):
            apply_signals(s, [signal_for(f"task-{g:03d}", "score", r % 2 == 0) for g in range(groups)], POLICY, t)
            t += timedelta(minutes=6)
        s.commit()
    app = create_receiver(SECRET)
    server = serve_in_thread(app)
    try:
        started = time.perf_counter()
        proc = start_worker(db_url, f"{server.url}/alerts")
        assert proc.wait(600) == 0
        wall = time.perf_counter() - started
        with Session(engine) as s:
            first, last = s.exec(select(func.min(Notification.delivered_at), func.max(Notification.delivered_at))).one()
        expected, accepted, repeats = keys_ok(engine, app.state.receiver)
    finally:
        server.stop()
    span = (last - first).total_seconds()
    return {"notifications": expected, "accepted": accepted, "repeats": repeats,
            "per_second": (expected - 1) / span if span > 0 else float("nan"), "wall_s_with_start": wall}


def latency(workdir: Path, samples: int, every_s: float, rng: random.Random) -> dict[str, float]:
    db_url = f"sqlite:///{workdir / f'latency-{every_s}.db'}"
    engine = make_engine(db_url)
    app = create_receiver(SECRET)
    state: ReceiverState = app.state.receiver
    server = serve_in_thread(app)
    proc = start_worker(db_url, f"{server.url}/alerts", every_s=every_s, drain=False)
    out = []
    try:
        with Session(engine) as s:  # warm-up: the worker has started once this arrives
            apply_signal(s, signal_for("warm-up", "score", True), POLICY, utcnow())
            s.commit()
        wait_for(lambda: len(state.received) == 1, 60, "the warm-up notification")
        for i in range(samples):
            time.sleep(rng.uniform(0, every_s))  # a random phase against the worker's tick
            with Session(engine) as s:
                found = time.time()
                apply_signal(s, signal_for(f"lat-{i:04d}", "score", True), POLICY, utcnow())
                s.commit()
            wait_for(lambda n=i + 1: len(state.received) > n, 30, f"sample {i}")
            out.append(state.received[i + 1].received_at - found)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        server.stop()
    out.sort()
    return {"samples": len(out), "p50_ms": 1000 * statistics.median(out),
            "p95_ms": 1000 * out[int(0.95 * (len(out) - 1))], "max_ms": 1000 * out[-1]}


def burst(workdir: Path, alerts: int, down_s: float, rng: random.Random) -> dict[str, float]:
    db_url = f"sqlite:///{workdir / 'burst.db'}"
    engine = make_engine(db_url)
    tasks, batch = 50, 100
    t0 = datetime.now(timezone.utc) - timedelta(hours=1)
    started = time.perf_counter()
    with Session(engine) as s:  # 10,000 distinct alerts in one simulated minute, in probe-sized batches
        for b in range(alerts // batch):
            at = t0 + timedelta(seconds=60 * b / (alerts // batch))
            apply_signals(s, [signal_for(f"task-{rng.randrange(tasks):02d}", f"score[item={b * batch + i}]", True)
                              for i in range(batch)], POLICY, at)
        for k in range(1, 23):  # the alert pass keeps running every 30 s for 11 minutes
            flush(s, POLICY, t0 + timedelta(seconds=60 + 30 * k))
        s.commit()
    build_s = time.perf_counter() - started
    total, _ = counts(engine)
    port = free_port()  # the receiver is down: nothing listens here yet
    url = f"http://127.0.0.1:{port}/alerts"
    first = start_worker(db_url, url)

    def attempts() -> int:
        with Session(engine) as s:
            return int(s.exec(select(func.sum(Notification.attempts))).one() or 0)

    wait_for(lambda: attempts() > 0, 60, "the worker's first attempt")
    time.sleep(down_s)  # the receiver stays down this long after the worker first finds it down
    tried = attempts()
    app = create_receiver(SECRET, delay_s=0.01)
    state: ReceiverState = app.state.receiver
    server: RunningServer = serve_in_thread(app, port=port)
    try:
        wait_for(lambda: len(state.received) >= total // 3, 120, "a third of the notifications")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        _, at_kill = counts(engine)
        second = start_worker(db_url, url)
        assert second.wait(600) == 0
        expected, accepted, repeats = keys_ok(engine, state)
        _, delivered = counts(engine)
    finally:
        server.stop()
    with Session(engine) as s:
        dead = int(s.exec(select(func.count()).select_from(Notification)
                          .where(Notification.status == NotificationStatus.dead)).one())
    return {"alerts": alerts, "notifications": total, "build_s": build_s, "attempts_while_down": tried,
            "delivered_at_kill": at_kill, "delivered": delivered, "accepted_keys": accepted,
            "keys_accepted_twice": repeats, "copies_dropped_by_receiver": state.duplicates, "dead": dead,
            "ok": float(delivered == expected == accepted and repeats == 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notifications", type=int, default=3000)
    parser.add_argument("--latency-samples", type=int, default=30)
    parser.add_argument("--burst", type=int, default=10_000)
    parser.add_argument("--down-s", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="medmon-alerts-bench-") as tmp:
        workdir = Path(tmp)
        print("throughput:", throughput(workdir, args.notifications))
        print("latency, worker polling every 1 s:", latency(workdir, args.latency_samples, 1.0, rng))
        print("latency, worker polling every 50 ms:", latency(workdir, args.latency_samples, 0.05, rng))
        print("burst + receiver down + SIGKILL:", burst(workdir, args.burst, args.down_s, rng))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(worker_main(sys.argv[2], sys.argv[3], float(sys.argv[4]), "--drain" in sys.argv[5:]))
    main()
