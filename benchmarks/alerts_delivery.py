"""Benchmark: alert delivery through the outbox to a local webhook receiver on 127.0.0.1.

Three figures, each with a delivery worker (``--worker``, the real outbox and the real clock) and
the signed-webhook receiver (``medmon.alerts.receiver``) in this process:

1. throughput: notifications delivered per second, draining a full outbox (many groups);
2. latency: time from a finding (the alert change committed) to the webhook received, findings
   arriving at random moments, with the service's delivery path (the delivery job on a 1 s
   APScheduler tick, run at once by ``DeliveryWaker`` when a notification is written): in the
   same process on SQLite (how ``medmon serve`` runs), and in another process on PostgreSQL
   (woken by ``LISTEN/NOTIFY``, as with Celery workers); beside them the tick alone across
   processes on SQLite (what every case was before, and still SQLite's cross-process case), and
   the floor: rendering, signing and POSTing one webhook;
3. robustness: a 10,000-alert burst in one simulated minute, grouped per task; the receiver is
   down for a while (connections refused), comes back, the worker is killed with SIGKILL
   mid-delivery and restarted. Delivered must equal what the outbox holds, with every
   idempotency key accepted exactly once.

Usage::

    .venv/bin/python benchmarks/alerts_delivery.py [--notifications 3000] [--latency-samples 60]
                                                   [--burst 10000] [--down-s 5] [--seed 0]
                                                   [--postgres URL] [--only-latency]
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apscheduler.schedulers.background import BackgroundScheduler  # noqa: E402
from apscheduler.triggers.interval import IntervalTrigger  # noqa: E402
from pydantic import SecretStr  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session, func, select  # noqa: E402

from medmon.alerts import (  # noqa: E402
    DeliveryPolicy,
    Notification,
    NotificationStatus,
    NotifyPolicy,
    RouteSpec,
    Severity,
    Signal,
    Subject,
    WebhookChannel,
    apply_signals,
    deliver_due,
    flush,
    pending_count,
)
from medmon.alerts.channels import WebhookConfig  # noqa: E402
from medmon.alerts.receiver import ReceiverState, create_receiver  # noqa: E402
from medmon.db import utcnow  # noqa: E402
from medmon.monitor.service.delivery import DeliveryWaker, deliver_until_quiet  # noqa: E402
from medmon.monitor.service.webserver import RunningServer, serve_in_thread  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402

SECRET_ENV = "MEDMON_BENCH_WEBHOOK_SECRET"
SECRET = "benchmark-webhook-secret"
POLICY = NotifyPolicy(routes=(RouteSpec("hook"),))


def signal_for(task: str, metric: str, firing: bool) -> Signal:
    subject = Subject(
        "production",
        task,
        "medcalc_bench",
        "Clinical Decision Support",
        "Dr. Owner <o@h.example>",
        f"http://127.0.0.1:8501/task?task={task}",
        Severity.critical,
    )
    summary = f"{task}: {metric} {'fired' if firing else 'ok'}"
    return subject.signal(
        "drift_drop",
        metric,
        firing=firing,
        summary=summary,
        evidence={"estimate": 0.6, "ci_low": 0.55, "ci_high": 0.65, "n": 100},
    )


# --- the worker process -------------------------------------------------------------------------


def worker_main(
    database: str, url: str, every_s: float, drain: bool, wake: bool = False, stop: threading.Event | None = None
) -> int:
    """Deliver with the real clock; with ``drain``, exit once the outbox is empty.

    With ``wake`` the worker is the service's: the delivery job on an APScheduler tick of
    ``every_s``, run at once by ``DeliveryWaker`` when a notification is written (in this
    process, or in another on PostgreSQL through ``LISTEN``). Without it, a plain loop polls the
    outbox every ``every_s`` (the tick alone, as before).
    """
    engine = make_engine(database, create=False)
    channel = WebhookChannel(WebhookConfig(name="hook", url=SecretStr(url), secret=SecretStr(os.environ[SECRET_ENV])))
    policy = DeliveryPolicy(base_delay_s=0.2, max_delay_s=2.0, rng=random.Random(1))
    if wake:
        scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})
        waker = DeliveryWaker(scheduler, engine)
        scheduler.add_job(
            lambda: deliver_until_quiet(lambda: deliver_due(engine, {"hook": channel}, utcnow, policy), waker.busy),
            IntervalTrigger(seconds=every_s),
            id="deliver",
            misfire_grace_time=5,
        )
        scheduler.start()
        waker.start()
        (stop or threading.Event()).wait()
        scheduler.shutdown(wait=False)
        waker.stop()
        return 0
    tick = stop or threading.Event()
    while not tick.is_set():
        report = deliver_due(engine, {"hook": channel}, utcnow, policy)
        if drain:
            with Session(engine) as session:
                if pending_count(session) == 0:
                    return 0
        if not drain or report.delivered == 0:
            tick.wait(every_s)
    return 0


def start_worker(
    db_url: str, url: str, *, every_s: float = 0.05, drain: bool = True, wake: bool = False
) -> subprocess.Popen[bytes]:
    args = [sys.executable, str(Path(__file__).resolve()), "--worker", db_url, url, str(every_s)]
    args += (["--drain"] if drain else []) + (["--wake"] if wake else [])
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, SECRET_ENV: SECRET})


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
        done = int(
            s.exec(
                select(func.count())
                .select_from(Notification)
                .where(Notification.status == NotificationStatus.delivered)
            ).one()
        )
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
    t = datetime.now(UTC) - timedelta(days=1)
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
    return {
        "notifications": expected,
        "accepted": accepted,
        "repeats": repeats,
        "per_second": (expected - 1) / span if span > 0 else float("nan"),
        "wall_s_with_start": wall,
    }


def _percentiles(out: list[float]) -> dict[str, float]:
    out = sorted(out)
    return {
        "samples": len(out),
        "p50_ms": round(1000 * statistics.median(out), 1),
        "p95_ms": round(1000 * out[int(0.95 * (len(out) - 1))], 1),
        "max_ms": round(1000 * out[-1], 1),
    }


def _time_findings(
    engine: Engine, state: ReceiverState, samples: int, spread_s: float, rng: random.Random
) -> list[float]:
    """Commit a finding at a random moment ``samples`` times; seconds until each webhook arrived."""
    with Session(engine) as s:  # warm-up: the worker has started once this arrives
        apply_signals(s, [signal_for("warm-up", "score", True)], POLICY, utcnow())
        s.commit()
    wait_for(lambda: len(state.received) == 1, 60, "the warm-up notification")
    out = []
    for i in range(samples):
        time.sleep(rng.uniform(0, spread_s))  # random arrivals, whatever phase the worker's tick is in
        with Session(engine) as s:
            found = time.time()
            apply_signals(s, [signal_for(f"lat-{i:04d}", "score", True)], POLICY, utcnow())
            s.commit()
        wait_for(lambda n=i + 1: len(state.received) > n, 30, f"sample {i}")
        out.append(state.received[i + 1].received_at - found)
    return out


def latency(
    db_url: str, samples: int, every_s: float, rng: random.Random, *, wake: bool, in_process: bool = False
) -> dict[str, float]:
    """Finding to webhook received, the worker in its own process or (``in_process``) in this one."""
    engine = make_engine(db_url)
    app = create_receiver(SECRET)
    state: ReceiverState = app.state.receiver
    server = serve_in_thread(app)
    target = f"{server.url}/alerts"
    stop = threading.Event()
    if in_process:
        os.environ[SECRET_ENV] = SECRET
        worker = threading.Thread(target=worker_main, args=(db_url, target, every_s, False, True, stop), daemon=True)
        worker.start()
    else:
        proc = start_worker(db_url, target, every_s=every_s, drain=False, wake=wake)
    try:
        out = _time_findings(engine, state, samples, 2 * every_s, rng)
    finally:
        if in_process:
            stop.set()
            worker.join(10)
        else:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        server.stop()
    return _percentiles(out)


def send_floor(workdir: Path, samples: int) -> dict[str, float]:
    """The floor: rendering, signing and POSTing one webhook to the local receiver, nothing else."""
    server = serve_in_thread(create_receiver(SECRET))
    channel = WebhookChannel(
        WebhookConfig(name="hook", url=SecretStr(f"{server.url}/alerts"), secret=SecretStr(SECRET))
    )
    engine = make_engine(f"sqlite:///{workdir / 'floor.db'}")
    with Session(engine) as s:  # a real notification body, as a finding writes it
        apply_signals(s, [signal_for("floor", "score", True)], POLICY, utcnow())
        s.commit()
        payload = s.exec(select(Notification)).one().payload
    out = []
    try:
        for i in range(samples):
            started = time.perf_counter()
            channel.send(channel.render(payload), idempotency_key=f"floor-{i}")
            out.append(time.perf_counter() - started)
    finally:
        server.stop()
    return _percentiles(out)


@contextmanager
def postgres_database(server: str) -> Iterator[str]:
    """A fresh database on ``server`` (dropped afterwards), for the cross-process figure."""
    import psycopg

    name = f"medmon_bench_{os.getpid()}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield f"{server}/{name}"
    finally:
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def burst(workdir: Path, alerts: int, down_s: float, rng: random.Random) -> dict[str, float]:
    db_url = f"sqlite:///{workdir / 'burst.db'}"
    engine = make_engine(db_url)
    tasks, batch = 50, 100
    t0 = datetime.now(UTC) - timedelta(hours=1)
    started = time.perf_counter()
    with Session(engine) as s:  # 10,000 distinct alerts in one simulated minute, in probe-sized batches
        for b in range(alerts // batch):
            at = t0 + timedelta(seconds=60 * b / (alerts // batch))
            apply_signals(
                s,
                [
                    signal_for(f"task-{rng.randrange(tasks):02d}", f"score[item={b * batch + i}]", True)
                    for i in range(batch)
                ],
                POLICY,
                at,
            )
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
        dead = int(
            s.exec(
                select(func.count()).select_from(Notification).where(Notification.status == NotificationStatus.dead)
            ).one()
        )
    return {
        "alerts": alerts,
        "notifications": total,
        "build_s": build_s,
        "attempts_while_down": tried,
        "delivered_at_kill": at_kill,
        "delivered": delivered,
        "accepted_keys": accepted,
        "keys_accepted_twice": repeats,
        "copies_dropped_by_receiver": state.duplicates,
        "dead": dead,
        "ok": float(delivered == expected == accepted and repeats == 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notifications", type=int, default=3000)
    parser.add_argument("--latency-samples", type=int, default=60)
    parser.add_argument("--burst", type=int, default=10_000)
    parser.add_argument("--down-s", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--postgres",
        default="postgresql://postgres@127.0.0.1:5432",
        help="server for the cross-process figure ('' to skip it)",
    )
    parser.add_argument("--only-latency", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    n = args.latency_samples
    with tempfile.TemporaryDirectory(prefix="medmon-alerts-bench-") as tmp:
        workdir = Path(tmp)
        if not args.only_latency:
            print("throughput:", throughput(workdir, args.notifications), flush=True)
        print("latency, random arrivals, finding committed -> webhook received (tick 1 s):")
        print(
            "  service path, one process (SQLite; woken in process):",
            latency(f"sqlite:///{workdir / 'lat-in.db'}", n, 1.0, rng, wake=True, in_process=True),
            flush=True,
        )
        if args.postgres:
            with postgres_database(args.postgres) as url:
                print(
                    "  service path, worker in another process (PostgreSQL; woken by LISTEN/NOTIFY):",
                    latency(url, n, 1.0, rng, wake=True),
                    flush=True,
                )
        print(
            "  tick alone, worker in another process (SQLite: no cross-process wake-up; as before):",
            latency(f"sqlite:///{workdir / 'lat-tick.db'}", n, 1.0, rng, wake=False),
            flush=True,
        )
        print("  floor: render, sign and POST one webhook, nothing else:", send_floor(workdir, n), flush=True)
        if not args.only_latency:
            print("burst + receiver down + SIGKILL:", burst(workdir, args.burst, args.down_s, rng))


def _worker_process() -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    argv = sys.argv[2:]
    return worker_main(argv[0], argv[1], float(argv[2]), "--drain" in argv[3:], "--wake" in argv[3:], stop)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(_worker_process())
    main()
