"""Benchmark: what a blip costs a probe run, built from a plan as the service builds it.

The simulator (its own thread, real HTTP on 127.0.0.1) answers a burst of HTTP 500s, then
recovers. Each scenario is one probe run of the bundled MCQ pack (20 canaries) through
``run_task_probe`` with the plan's defaults (``max_concurrency: 8``, ``max_retries: 2``,
``breaker_failures: 5``, backoff 0.5 s doubling), on a fresh SQLite database. Printed per
scenario: results kept (scored), results lost (errors, and how many of them ``circuit_open``),
calls and HTTP attempts, the run's wall time, and the stored latency of the slowest call.

Scenarios: no fault (the reference), bursts as wide as the concurrency (8), twice (16) and
three times (24) as wide, and an outage longer than any call's retries (all 500s) for the
breaker's fail-fast figure. A warm-up run comes first and is not reported.

Usage::

    .venv/bin/python benchmarks/endpoint_resilience.py [--json]

Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

from sqlmodel import Session, select

from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import parse_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.webserver import serve_in_thread
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Fault, Phase, create_simulator

PLAN = """
version: 1
use_case: {name: Resilience benchmark, intended_use: measure what a blip costs, risk_tier: high}
owners:
  clinical: {name: Dr. Owner, email: owner@hospital.example}
  technical: {name: Tech, email: tech@hospital.example}
deployment: {base_url: "URL", model: medmon-simulator/clinical-v1, api_key_env: BENCH_KEY, timeout_s: 10}
tasks:
  - id: knowledge-qa
    benchmark: med_qa
    canaries: {pack: clinical_knowledge_mcq}
    sample_size: 20
    baseline: {value: 0.85, n: 500}
    thresholds: {min_score: 0.7}
storage: {url: "DB"}
"""


def scenario(folder: Path, burst: int) -> dict[str, object]:
    pack = load_pack("clinical_knowledge_mcq")
    app = create_simulator(pack.canaries, [Phase(accuracy=0.85, latency_s=0.05)], seed=1)
    server = serve_in_thread(app)
    try:
        db = f"sqlite:///{folder / f'run{len(list(folder.iterdir()))}-burst{burst}.db'}"  # a fresh database each
        plan = parse_plan(PLAN.replace("URL", f"{server.url}/v1").replace("DB", db))
        engine = make_engine(db)
        if burst:
            app.state.sim.inject(Fault("status", status=500, count=burst))
        started = time.perf_counter()
        outcome = run_task_probe(
            engine, plan, load_context(plan, plan.tasks[0]), rng=random.Random(1), now=lambda: datetime.now(UTC)
        )
        wall = time.perf_counter() - started
        with Session(engine) as s:
            rows = s.exec(select(ProbeResult)).all()
        engine.dispose()
    finally:
        server.stop()
    return {
        "burst_500s": burst,
        "results": outcome.results,
        "kept": outcome.results - outcome.errors,
        "lost": outcome.errors,
        "circuit_open": sum(1 for r in rows if r.error_type == "circuit_open"),
        "attempts": sum(r.attempts or 0 for r in rows),
        "requests_seen": app.state.sim.requests,
        "run_s": round(wall, 2),
        "slowest_call_s": round(max(r.latency_s or 0 for r in rows), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("BENCH_KEY", "benchmark-needs-no-key")
    with TemporaryDirectory() as tmp:
        scenario(Path(tmp), 0)  # warm-up: imports, first database, first connections (not reported)
        rows = [scenario(Path(tmp), burst) for burst in (0, 8, 16, 24, 10_000)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{'burst':>6} {'kept':>5} {'lost':>5} {'open':>5} {'attempts':>8} {'requests':>8} {'run s':>6} "
        f"{'slowest s':>9}"
    )
    for r in rows:
        burst = "outage" if r["burst_500s"] == 10_000 else r["burst_500s"]
        print(
            f"{burst!s:>6} {r['kept']:>5} {r['lost']:>5} {r['circuit_open']:>5} {r['attempts']:>8} "
            f"{r['requests_seen']:>8} {r['run_s']:>6} {r['slowest_call_s']:>9}"
        )


if __name__ == "__main__":
    main()
