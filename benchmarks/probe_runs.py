"""Benchmark: probe runs per second in one process, against a zero-latency simulator.

A probe run here is what the scheduler does for one task each time it fires: pick 5 canaries,
call the model for each and score the answers. The simulator runs in its own process (as in
``probe_throughput.py``), so its CPU never counts as medmon's. Printed side by side, as medians
over ``--repeats``:

- **service path**: runs through the process's long-lived clients (``medmon.probes.pool``),
  as ``run_task_probe`` makes them, one run at a time and from 8 threads at once;
- **a client per run**: what the service did before, ``async with ModelClient(...)`` inside
  ``asyncio.run`` for every run (labelled: the old configuration, for comparison);
- **floor**: the same calls alone, through one client reused by a single event loop, without
  scoring or run bookkeeping, one run at a time and 8 at a time: what the endpoint and the HTTP
  client allow. Each service figure is printed as a ratio to its floor alike.

Storing each run, updating its detectors and checking the alert rules come on top of this and
are bounded by the database: ``soak.py`` measures the whole service.

Usage::

    .venv/bin/python benchmarks/probe_runs.py [--runs 600] [--repeats 3]

Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.probe_throughput import Simulator, canaries, settings  # noqa: E402
from medmon.probes.client import ModelClient  # noqa: E402
from medmon.probes.pool import ClientPool  # noqa: E402
from medmon.probes.runner import probe_canaries  # noqa: E402

PER_RUN = 5
THREADS = 8


def _pick(pack: list, rng: random.Random) -> list:
    return rng.sample(pack, PER_RUN)


def pooled(url: str, runs: int, threads: int) -> float:
    """Runs per second through one ``ClientPool`` (the service path)."""
    pack, pool, s = canaries(), ClientPool(), settings(url, 8)

    def one(rng: random.Random) -> None:
        async def work() -> list:
            return list(await probe_canaries(pool.client(s), _pick(pack, rng), "bench", "multiple_choice"))

        results = pool.run(work)
        assert all(r.error_type is None for r in results), [r.error for r in results]

    one(random.Random(0))  # open the client and its connections
    per_thread = runs // threads
    started = time.perf_counter()
    workers = [
        threading.Thread(target=lambda k=k: [one(random.Random(k * 10_000 + i)) for i in range(per_thread)])
        for k in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    pool.close()
    return per_thread * threads / elapsed


def client_per_run(url: str, runs: int) -> float:
    """Runs per second opening a client for every run, as the service used to."""
    pack, s, rng = canaries(), settings(url, 8), random.Random(0)

    async def run_once() -> None:
        async with ModelClient(s) as client:
            results = await probe_canaries(client, _pick(pack, rng), "bench", "multiple_choice")
        assert all(r.error_type is None for r in results)

    started = time.perf_counter()
    for _ in range(runs):
        asyncio.run(run_once())
    return runs / (time.perf_counter() - started)


def calls_alone(url: str, runs: int, together: int) -> float:
    """The floor: the same calls through one reused client on one loop, ``together`` runs at a time."""
    pack, s, rng = canaries(), settings(url, 8), random.Random(0)

    async def one_run(client: ModelClient) -> None:
        await asyncio.gather(*(client.complete(list(c.messages)) for c in _pick(pack, rng)))

    async def go() -> float:
        async with ModelClient(s) as client:
            await one_run(client)
            started = time.perf_counter()
            for _ in range(runs // together):
                await asyncio.gather(*(one_run(client) for _ in range(together)))
            return runs // together * together / (time.perf_counter() - started)

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {
        "service path, one at a time": [],
        f"service path, {THREADS} threads": [],
        "a client per run (old), one at a time": [],
        "floor: calls alone, one run at a time": [],
        f"floor: calls alone, {THREADS} runs at a time": [],
    }
    with Simulator(0.0) as sim:
        for repeat in range(args.repeats):
            rows["service path, one at a time"].append(pooled(sim.url, args.runs, 1))
            rows[f"service path, {THREADS} threads"].append(pooled(sim.url, args.runs, THREADS))
            rows["a client per run (old), one at a time"].append(client_per_run(sim.url, max(50, args.runs // 4)))
            rows["floor: calls alone, one run at a time"].append(calls_alone(sim.url, args.runs, 1))
            rows[f"floor: calls alone, {THREADS} runs at a time"].append(calls_alone(sim.url, args.runs, THREADS))
            print(f"repeat {repeat + 1}: " + "; ".join(f"{k} {v[-1]:.0f}/s" for k, v in rows.items()), flush=True)
    floors = {
        1: statistics.median(rows["floor: calls alone, one run at a time"]),
        THREADS: statistics.median(rows[f"floor: calls alone, {THREADS} runs at a time"]),
    }
    print(
        f"probe runs per second, {PER_RUN} canaries each, zero-latency simulator, median of {args.repeats} "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()[0]:.1f}):"
    )
    for name, values in rows.items():
        med = statistics.median(values)
        floor = floors[THREADS] if f"{THREADS} " in name else floors[1]
        print(f"  {name:<45} {med:7.1f} runs/s  ({med / floor:.2f} of the floor alike)")


if __name__ == "__main__":
    main()
