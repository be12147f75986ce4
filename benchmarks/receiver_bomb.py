"""Benchmark: a compression bomb against the OTLP receiver, and the scheduler beside it.

The receiver is the one ``medmon serve`` starts (``create_receiver`` on uvicorn in a thread of this
process, on a real SQLite database, with a plan's traffic section), and beside it an APScheduler
``BackgroundScheduler`` (the class ``medmon serve``'s scheduler derives from) runs a job every
100 ms, as the service's passes run on their interval. Attackers then post 64 KiB gzip bodies that
inflate to 48 MiB, from several threads at once, for ``--seconds``.

Printed: the body's size, the status and time of each refusal (median and worst), the process's
peak resident memory before and after the attack, and how late the scheduler's job ran
(median, 99th percentile, worst) at rest and under attack. A genuine export posted during the
attack is still stored.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/receiver_bomb.py [--seconds 10] [--attackers 4]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import threading
import time
import zlib
from pathlib import Path

import httpx
from apscheduler.schedulers.background import BackgroundScheduler

from medmon.monitor.service.receiver import create_receiver
from medmon.monitor.service.webserver import serve_in_thread
from medmon.monitor.storage import make_engine
from medmon.monitor.traffic.spans import MAX_DECODED
from tests.monitor.traffic_helpers import export_body, genai_attributes, make_spans, traffic_plan

HEADERS = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip", "Authorization": "Bearer bench"}


def bomb(inflated: int) -> bytes:
    out = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    return b"".join(out.compress(block) for _ in range(inflated // len(block))) + out.flush()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def lateness(samples: list[float]) -> str:
    ms = sorted(x * 1000 for x in samples)
    if not ms:
        return "no runs"
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return f"median {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, worst {ms[-1]:.1f} ms ({len(ms)} runs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--attackers", type=int, default=4)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="medmon-bomb-"))
    url = f"sqlite:///{folder / 'medmon.db'}"
    engine = make_engine(url)
    server = serve_in_thread(create_receiver(engine, traffic_plan(url), token="bench"))
    body = bomb(MAX_DECODED + 16 * 1024 * 1024)

    late: list[float] = []
    expected = [time.monotonic() + 0.1]

    def tick() -> None:
        now = time.monotonic()
        late.append(max(0.0, now - expected[0]))
        expected[0] = now + 0.1

    scheduler = BackgroundScheduler()
    scheduler.add_job(tick, "interval", seconds=0.1, max_instances=1, coalesce=True)
    scheduler.start()
    time.sleep(3)
    at_rest = list(late)
    late.clear()
    rss_before = peak_rss_mib()

    refusals: list[tuple[int, float]] = []
    stop = time.monotonic() + args.seconds

    def attack() -> None:
        with httpx.Client(timeout=60) as client:
            while time.monotonic() < stop:
                started = time.perf_counter()
                r = client.post(f"{server.url}/v1/traces", content=body, headers=HEADERS)
                refusals.append((r.status_code, time.perf_counter() - started))

    threads = [threading.Thread(target=attack) for _ in range(args.attackers)]
    for t in threads:
        t.start()
    time.sleep(args.seconds / 2)
    attempts: list[int] = []
    for _ in range(20):  # as an OTLP exporter does: retry a 503 after its Retry-After
        genuine = httpx.post(
            f"{server.url}/v1/traces",
            content=export_body(make_spans([genai_attributes()])),
            headers={"Content-Type": "application/x-protobuf", "Authorization": "Bearer bench"},
            timeout=60,
        )
        attempts.append(genuine.status_code)
        if genuine.status_code != 503:
            break
        time.sleep(float(genuine.headers.get("Retry-After", "1")))
    for t in threads:
        t.join()
    attacked = list(late)
    scheduler.shutdown()
    server.stop()

    statuses: dict[int, int] = {}
    for status, _ in refusals:
        statuses[status] = statuses.get(status, 0) + 1
    times = sorted(s for _, s in refusals)
    print(
        f"body: {len(body):,} bytes gzip, inflating to {MAX_DECODED + 16 * 1024 * 1024:,} bytes (cap {MAX_DECODED:,})"
    )
    print(f"requests: {len(refusals)} from {args.attackers} attackers in {args.seconds:.0f} s; statuses {statuses}")
    print(f"time per refusal: median {statistics.median(times) * 1000:.0f} ms, worst {times[-1] * 1000:.0f} ms")
    print(f"peak resident memory: {rss_before:.0f} MiB before the attack, {peak_rss_mib():.0f} MiB after")
    print(f"scheduler lateness at rest:      {lateness(at_rest)}")
    print(f"scheduler lateness under attack: {lateness(attacked)}")
    print(f"a genuine export during the attack, retried as exporters do: {' then '.join(map(str, attempts))}")


if __name__ == "__main__":
    main()
