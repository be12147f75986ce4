"""Benchmark: the probe instrument against the simulator over real HTTP on 127.0.0.1.

The simulator runs in its own process (uvicorn, one worker), so its CPU never counts as medmon's.
Three figures:

1. **Throughput.** With 200 ms injected latency (``Phase.latency_s``), achieved calls per
   second at concurrency 8, 64 and 256, as a ratio of the ideal ``concurrency / latency``
   (target: at least 0.9 at 64). Each level first warms its connection pool with one round.
2. **medmon's CPU per canary.** Against a zero-latency simulator: process CPU time
   (``time.process_time``) of ``probe_canaries`` (client, scoring, run span) and of
   ``finish_run`` (storing into SQLite), divided by the canaries (target: under 2 ms).
3. **Peak memory of a 10,000-canary run** (probe at concurrency 64, score, store), in a fresh
   process: peak resident set size (``ru_maxrss``) and its growth over the process after
   imports and warm-up; ``--tracemalloc`` also reports the Python heap peak of the run.

Usage::

    .venv/bin/python benchmarks/probe_throughput.py [--quick] [--rounds 25] [--cpu-canaries 3000]
                                                     [--memory-canaries 10000] [--tracemalloc]

``--quick`` is a smoke run (fewer rounds and canaries). Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from medmon.baselines.canary import Canary, canary_from_dict  # noqa: E402
from medmon.probes.client import ModelClient, ModelSettings  # noqa: E402

LATENCY_S = 0.2
LEVELS = (8, 64, 256)


def canaries(n: int = 200) -> list[Canary]:
    """Multiple-choice canaries with a short clinical prompt each (scored by ``multiple_choice``)."""
    return [
        canary_from_dict(
            {
                "id": f"bench-{i}",
                "scorer": "multiple_choice",
                "references": ["C"],
                "choices": ["a", "b", "c", "d"],
                "messages": [
                    {
                        "role": "user",
                        "content": (
                            f"Case {i}: a 67-year-old with atrial fibrillation, creatinine clearance 42 mL/min, "
                            "is started on an anticoagulant. Which dose adjustment is appropriate? "
                            "A) none B) double C) reduce D) stop. Answer with the letter."
                        ),
                    }
                ],
                "tags": {"age_band": "65+", "sex": "female" if i % 2 else "male"},
            }
        )
        for i in range(n)
    ]


def serve_simulator(port: int, latency: float) -> None:
    """Child process: the simulator alone on 127.0.0.1:port."""
    import uvicorn

    from medmon.probes.simulator import Phase, create_simulator

    app = create_simulator(canaries(), [Phase(accuracy=0.9, latency_s=latency)], seed=1)
    uvicorn.run(
        app, host="127.0.0.1", port=port, log_level="warning", access_log=False, backlog=4096, timeout_keep_alive=30
    )


class Simulator:
    """The simulator in a child process, for the duration of a ``with`` block."""

    def __init__(self, latency: float) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.latency = latency

    def __enter__(self) -> Simulator:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-simulator", str(self.port), str(self.latency)])
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{self.url}/_simulator", timeout=1).json().get("simulated"):
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("simulator did not start")
            time.sleep(0.1)

    def cpu_seconds(self) -> float:
        """The simulator process's CPU time so far (user + system), from /proc."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def settings(url: str, concurrency: int) -> ModelSettings:
    return ModelSettings(
        base_url=f"{url}/v1",
        model="medmon-simulator/clinical-v1",
        api_key="bench",
        timeout_s=30,
        max_retries=0,
        max_concurrency=concurrency,
        max_tokens=16,
        input_per_mtok=5,
        output_per_mtok=15,
    )


async def _calls(client: ModelClient, pool: list[Canary], n: int) -> int:
    results = await asyncio.gather(
        *(client.complete(list(pool[i % len(pool)].messages)) for i in range(n)), return_exceptions=True
    )
    return sum(1 for r in results if isinstance(r, BaseException))


def throughput(rounds: int) -> list[dict[str, float]]:
    pool = canaries()
    rows = []
    with Simulator(LATENCY_S) as sim:
        for level in LEVELS:

            async def go(level: int = level) -> tuple[float, float, float, int]:
                async with ModelClient(settings(sim.url, level)) as client:
                    await _calls(client, pool, level)  # warm the connection pool
                    started, cpu, sim_cpu = time.perf_counter(), time.process_time(), sim.cpu_seconds()
                    failed = await _calls(client, pool, level * rounds)
                    return (
                        time.perf_counter() - started,
                        time.process_time() - cpu,
                        sim.cpu_seconds() - sim_cpu,
                        failed,
                    )

            elapsed, cpu, sim_cpu, failed = asyncio.run(go())
            calls = level * rounds
            achieved = calls / elapsed
            ideal = level / LATENCY_S
            rows.append(
                {
                    "concurrency": level,
                    "calls": calls,
                    "failed": failed,
                    "seconds": round(elapsed, 2),
                    "calls_per_s": round(achieved, 1),
                    "ideal_per_s": ideal,
                    "ratio": round(achieved / ideal, 3),
                    "client_cpu_ms_per_call": 1000 * cpu / calls,
                    "simulator_cpu_ms_per_call": 1000 * sim_cpu / calls,
                }
            )
            print(
                f"  concurrency {level:>3}: {achieved:7.1f} calls/s of ideal {ideal:6.0f} "
                f"-> ratio {achieved / ideal:.3f} ({calls} calls, {failed} failed; CPU per call: "
                f"client {1000 * cpu / calls:.2f} ms, simulator {1000 * sim_cpu / calls:.2f} ms; "
                f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)",
                flush=True,
            )
    return rows


def probe_and_store(url: str, chosen: list[Canary], concurrency: int, db: Path) -> dict[str, float]:
    """Probe, score and store ``chosen``; CPU seconds of each part."""
    from medmon.db import session_scope
    from medmon.monitor.storage import make_engine
    from medmon.probes.redaction import TextPolicy
    from medmon.probes.runner import finish_run, probe_canaries, start_run

    engine = make_engine(f"sqlite:///{db}")

    async def go() -> list:  # type: ignore[type-arg]
        async with ModelClient(settings(url, concurrency)) as client:
            await _calls(client, chosen, concurrency)  # warm-up, not counted
            cpu = time.process_time()
            results = await probe_canaries(client, chosen, "bench", "multiple_choice")
            return [time.process_time() - cpu, results]

    probe_cpu, results = asyncio.run(go())
    stamp = datetime.now(UTC)
    cpu = time.process_time()
    with session_scope(engine) as session:
        run = start_run(session, "bench", started_at=stamp)
        finish_run(session, run, results, stamp, policy=TextPolicy())
    store_cpu = time.process_time() - cpu
    engine.dispose()
    errors = sum(1 for r in results if r.error_type)
    return {"canaries": len(chosen), "errors": errors, "probe_cpu_s": probe_cpu, "store_cpu_s": store_cpu}


def cpu_per_canary(n: int) -> dict[str, float]:
    pool = canaries()
    chosen = [pool[i % len(pool)] for i in range(n)]
    with Simulator(0.0) as sim, TemporaryDirectory() as tmp:
        figures = probe_and_store(sim.url, chosen, 64, Path(tmp) / "cpu.db")
    per = {"probe_ms": 1000 * figures["probe_cpu_s"] / n, "store_ms": 1000 * figures["store_cpu_s"] / n}
    per["total_ms"] = per["probe_ms"] + per["store_ms"]
    print(
        f"  {n} canaries ({figures['errors']} errors): client+scoring {per['probe_ms']:.3f} ms, "
        f"storing {per['store_ms']:.3f} ms, total {per['total_ms']:.3f} ms of CPU per canary",
        flush=True,
    )
    return figures | per


def memory_child(n: int, trace: bool) -> None:
    """Child process: one n-canary run; prints JSON with peak RSS and its growth."""
    pool = canaries()
    chosen = [pool[i % len(pool)] for i in range(n)]
    with Simulator(0.0) as sim, TemporaryDirectory() as tmp:
        probe_and_store(sim.url, chosen[:64], 64, Path(tmp) / "warm.db")  # imports, pools, tables
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if trace:
            tracemalloc.start()
        figures = probe_and_store(sim.url, chosen, 64, Path(tmp) / "mem.db")
        heap_peak = tracemalloc.get_traced_memory()[1] if trace else None
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "canaries": n,
                "errors": figures["errors"],
                "rss_before_mib": before / 1024,
                "rss_peak_mib": peak / 1024,
                "rss_growth_mib": (peak - before) / 1024,
                "heap_peak_mib": heap_peak / 2**20 if heap_peak is not None else None,
            }
        )
    )


def memory(n: int, trace: bool) -> dict[str, float]:
    args = [sys.executable, __file__, "--memory-child", str(n)] + (["--tracemalloc"] if trace else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=os.environ | {"DO_NOT_TRACK": "1"})
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    heap = f", Python heap peak {figures['heap_peak_mib']:.1f} MiB" if figures["heap_peak_mib"] is not None else ""
    print(
        f"  {n} canaries ({figures['errors']} errors): peak RSS {figures['rss_peak_mib']:.1f} MiB, "
        f"growth during the run {figures['rss_growth_mib']:.1f} MiB{heap}",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--cpu-canaries", type=int, default=3000)
    parser.add_argument("--memory-canaries", type=int, default=10_000)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--serve-simulator", nargs=2, metavar=("PORT", "LATENCY"), help=argparse.SUPPRESS)
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_simulator:
        serve_simulator(int(args.serve_simulator[0]), float(args.serve_simulator[1]))
        return
    if args.memory_child:
        memory_child(args.memory_child, args.tracemalloc)
        return
    if args.quick:
        args.rounds, args.cpu_canaries, args.memory_canaries = 3, 500, 1000
    print(f"1. throughput with {LATENCY_S * 1000:.0f} ms injected latency", flush=True)
    throughput(args.rounds)
    print("2. medmon CPU per canary (zero-latency simulator in another process, concurrency 64)", flush=True)
    cpu_per_canary(args.cpu_canaries)
    print(f"3. peak memory of a {args.memory_canaries}-canary run (fresh process)", flush=True)
    memory(args.memory_canaries, args.tracemalloc)


if __name__ == "__main__":
    main()
