"""Probe runs per second through Celery: one ``medmon worker`` process, then two.

A fresh PostgreSQL database (the shared database workers on other machines would use) and a
Redis broker on 127.0.0.1; the SIMULATED model runs in this process with an optional per-call
latency. The benchmark starts the workers (``python -m medmon worker plan.yaml``), waits until
they are ready, enqueues the probes exactly as ``medmon serve`` does (``CeleryDispatch``) and
times them until every run is complete in the database.

    .venv/bin/python benchmarks/celery_throughput.py                      # 200 probes, 1 then 2 workers
    .venv/bin/python benchmarks/celery_throughput.py --probes 400 --latency 0.05
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DO_NOT_TRACK", "1")

import psycopg  # noqa: E402
import redis  # noqa: E402
import yaml  # noqa: E402
from sqlmodel import Session, func, select  # noqa: E402

from medmon.monitor.plan.model import load_plan  # noqa: E402
from medmon.monitor.service.webserver import serve_in_thread  # noqa: E402
from medmon.monitor.service.workers import CeleryDispatch, make_celery  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.probes.models import ProbeRun, RunStatus  # noqa: E402
from medmon.probes.packs import load_pack  # noqa: E402
from medmon.probes.simulator import Phase, create_simulator  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PG = "postgresql://postgres@127.0.0.1:5432"


def write_plan(path: Path, sim_url: str, db_url: str, queue: str, tasks: int, sample_size: int) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "use_case": {"name": "Throughput", "intended_use": "Benchmark (SIMULATED model)", "risk_tier": "low"},
                "owners": {
                    "clinical": {"name": "Dr. Bench", "email": "bench@hospital.example"},
                    "technical": {"name": "Ops", "email": "ops@hospital.example"},
                },
                "deployment": {
                    "base_url": f"{sim_url}/v1",
                    "model": "medmon-simulator/clinical-v1",
                    "api_key_env": "MEDMON_BENCH_KEY",
                    "timeout_s": 10,
                    "max_retries": 0,
                    "max_concurrency": 8,
                },
                "tasks": [
                    {
                        "id": f"task-{i:02d}",
                        "benchmark": "med_qa",
                        "canaries": {"pack": "clinical_knowledge_mcq"},
                        "schedule": "1h",
                        "sample_size": sample_size,
                        "baseline": {"value": 0.85, "n": 500},
                        "thresholds": {"min_score": 0.7},
                    }
                    for i in range(tasks)
                ],
                "storage": {"url": db_url},
                "alerts": {"allow_unrouted": True},  # throughput only: alerts are stored, none is sent
                "service": {"executor": "celery", "queue": queue, "seed": 1, "broker_url_env": "MEDMON_BENCH_BROKER"},
            }
        )
    )
    return path


def complete_runs(engine) -> int:  # type: ignore[no-untyped-def]
    with Session(engine) as s:
        return int(
            s.exec(select(func.count()).select_from(ProbeRun).where(ProbeRun.status == RunStatus.complete)).one()
        )


def run_once(workers: int, args: argparse.Namespace, sim_url: str) -> dict[str, float]:
    name = f"medmon_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    db_url = f"{PG}/{name}"
    queue = f"medmon-bench-{uuid.uuid4().hex[:6]}"
    workdir = Path(tempfile.mkdtemp(prefix="medmon-celery-"))
    plan_path = write_plan(workdir / "plan.yaml", sim_url, db_url, queue, args.tasks, args.sample_size)
    engine = make_engine(db_url)
    env = os.environ | {"MEDMON_BENCH_KEY": "k", "MEDMON_BENCH_BROKER": args.broker, "DO_NOT_TRACK": "1"}
    env.pop("MEDMON_DATABASE_URL", None)
    procs, logs = [], []
    try:
        for i in range(workers):
            log = workdir / f"worker{i}.log"
            logs.append(log)
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "medmon", "worker", str(plan_path), "--hostname", f"bench{i}-{queue}@%h"],
                    cwd=ROOT,
                    env=env,
                    stdout=log.open("wb"),
                    stderr=subprocess.STDOUT,
                )
            )
        deadline = time.monotonic() + 120
        while not all(" ready." in log.read_text(errors="replace") for log in logs):
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers not ready; see {workdir}")
            time.sleep(0.1)
        plan = load_plan(plan_path)
        dispatch = CeleryDispatch(make_celery(args.broker, queue=queue, name=f"bench-{queue}"), plan)
        start = datetime(2026, 1, 1, tzinfo=UTC)
        # Warm-up: one probe per worker pays the first-probe imports outside the timing.
        for i in range(workers):
            dispatch("task-00", start - timedelta(hours=i + 1), False)
        warm = time.monotonic() + 120
        while complete_runs(engine) < workers:
            if time.monotonic() > warm:
                raise RuntimeError(f"warm-up probes did not complete; see {workdir}")
            time.sleep(0.05)
        t0 = time.perf_counter()
        for i in range(args.probes):
            dispatch(f"task-{i % args.tasks:02d}", start + timedelta(hours=i // args.tasks), False)
        while complete_runs(engine) < workers + args.probes:
            if time.perf_counter() - t0 > args.timeout:
                raise RuntimeError(f"only {complete_runs(engine) - workers} of {args.probes} probes in {args.timeout}s")
            time.sleep(0.05)
        elapsed = time.perf_counter() - t0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        engine.dispose()
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return {
        "workers": workers,
        "probes": args.probes,
        "seconds": round(elapsed, 2),
        "probe_runs_per_s": round(args.probes / elapsed, 2),
        "canary_calls_per_s": round(args.probes * args.sample_size / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--sample-size", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.0, help="simulated model latency per call (s)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    redis.Redis.from_url(args.broker).flushdb()
    sim = serve_in_thread(
        create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(accuracy=0.85, latency_s=args.latency)])
    )
    rows = [run_once(n, args, sim.url) for n in args.workers]
    sim.stop()
    out = {"latency_s": args.latency, "sample_size": args.sample_size, "cpu_cores": os.cpu_count(), "runs": rows}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
