"""Soak: many tasks probed every simulated hour for a simulated month, in accelerated time.

Each task is probed through the same path as ``medmon serve`` (``medmon.monitor.service.slots.run_slot``: slot
claim, model calls over HTTP to the simulator on 127.0.0.1, scoring, storage, detectors,
alerts), driven by a stepped clock instead of the wall clock. Partway through, the simulated
model's accuracy drops, and the probe-to-alert latency is measured per task.

Reported: resident memory after the first simulated day (warm: imports and caches loaded) and at
the end, database size per stored probe result, probe throughput, and the latency from the
degradation to each task's first score alert (in probes and simulated hours, and wall seconds).

    .venv/bin/python benchmarks/soak.py                       # 50 tasks x 30 days (36,000 probes)
    .venv/bin/python benchmarks/soak.py --tasks 10 --days 3   # a quick look
    .venv/bin/python benchmarks/soak.py --url postgresql://postgres@127.0.0.1:5432/medmon_soak
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DO_NOT_TRACK", "1")

import yaml  # noqa: E402
from sqlalchemy import text  # noqa: E402
from sqlmodel import Session, func, select  # noqa: E402

from medmon.alerts import Alert  # noqa: E402
from medmon.monitor.plan.context import load_context  # noqa: E402
from medmon.monitor.plan.model import parse_plan  # noqa: E402
from medmon.monitor.service.slots import run_slot  # noqa: E402
from medmon.monitor.service.webserver import serve_in_thread  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.probes.models import ProbeResult  # noqa: E402
from medmon.probes.packs import load_pack  # noqa: E402
from medmon.probes.simulator import Phase, create_simulator  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=UTC)


def rss_mb() -> float:
    """Resident set size of this process, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("VmRSS not found")


def plan_text(base_url: str, db_url: str, tasks: int, sample_size: int) -> str:
    return yaml.safe_dump(
        {
            "version": 1,
            "use_case": {
                "name": "Soak",
                "intended_use": "Soak test of the monitor (SIMULATED model)",
                "risk_tier": "high",
            },
            "owners": {
                "clinical": {"name": "Dr. Soak", "email": "soak@hospital.example"},
                "technical": {"name": "Ops", "email": "ops@hospital.example"},
            },
            "deployment": {
                "base_url": base_url,
                "model": "medmon-simulator/clinical-v1",
                "api_key_env": "MEDMON_SOAK_KEY",
                "timeout_s": 10,
                "max_retries": 0,
                "max_concurrency": 8,
                "price": {"input_per_mtok": 5, "output_per_mtok": 15},
            },
            "tasks": [
                {
                    "id": f"task-{i:02d}",
                    "benchmark": "med_qa",
                    "canaries": {"pack": "clinical_knowledge_mcq"},
                    "schedule": "1h",
                    "sample_size": sample_size,
                    "baseline": {"value": 0.85, "n": 500},
                    "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5},
                }
                for i in range(tasks)
            ],
            "storage": {"url": db_url},
            "service": {"seed": 1},
        }
    )


def database_bytes(engine, db_path: Path | None) -> int:  # type: ignore[no-untyped-def]
    if db_path is not None:
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*") if not p.name.endswith(".lock"))
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_database_size(current_database())")).scalar_one())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--days", type=float, default=30)
    parser.add_argument("--sample-size", type=int, default=10)
    parser.add_argument("--degrade-at", type=float, default=0.75, help="fraction of the soak when accuracy drops")
    parser.add_argument("--url", help="database URL (default: a fresh SQLite file)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    os.environ["MEDMON_SOAK_KEY"] = "simulator-needs-no-key"
    canaries = load_pack("clinical_knowledge_mcq").canaries
    sim_app = create_simulator(canaries, [Phase(accuracy=0.85)], seed=3)
    sim = serve_in_thread(sim_app)
    workdir = Path(tempfile.mkdtemp(prefix="medmon-soak-"))
    db_path = None if args.url else workdir / "soak.db"
    db_url = args.url or f"sqlite:///{db_path}"
    plan = parse_plan(plan_text(f"{sim.url}/v1", db_url, args.tasks, args.sample_size))
    engine = make_engine(db_url)
    contexts = [load_context(plan, t) for t in plan.tasks]
    hours = int(args.days * 24)
    degrade_hour = int(hours * args.degrade_at)
    first_alert: dict[str, tuple[int, float]] = {}
    rss_start = rss_after_probe = None
    wall0 = time.perf_counter()
    degraded_wall = None
    for hour in range(hours):
        now = START + timedelta(hours=hour)
        if hour == degrade_hour:
            sim_app.state.sim.phases = [Phase(accuracy=0.55, label="accuracy drop")]
            degraded_wall = time.perf_counter()
        for ctx in contexts:
            outcome = run_slot(engine, plan, ctx, now, now=lambda: now, by="soak:1", seed=plan.service.seed)
            if rss_after_probe is None:
                rss_after_probe = rss_mb()
            if (
                hour >= degrade_hour
                and outcome is not None
                and ctx.task.id not in first_alert
                and any(s.firing and s.labels.get("metric") == "score" for s in outcome.signals)
            ):
                first_alert[ctx.task.id] = (hour - degrade_hour + 1, time.perf_counter() - (degraded_wall or 0))
        if hour == 23:
            rss_start = rss_mb()
        if hour % 24 == 23:
            print(
                f"day {(hour + 1) // 24:3d}: {rss_mb():7.1f} MB RSS, {time.perf_counter() - wall0:7.1f} s",
                file=sys.stderr,
                flush=True,
            )
    wall = time.perf_counter() - wall0
    rss_end = rss_mb()
    with Session(engine) as s:
        results = int(s.exec(select(func.count()).select_from(ProbeResult)).one())
        early_alerts = int(
            s.exec(
                select(func.count()).select_from(Alert).where(Alert.starts_at < START + timedelta(hours=degrade_hour))
            ).one()
        )
    size = database_bytes(engine, db_path)
    probes = hours * len(contexts)
    delays = sorted(h for h, _ in first_alert.values())
    figures = {
        "database": "postgresql" if args.url and args.url.startswith("postgres") else "sqlite",
        "tasks": len(contexts),
        "simulated_days": args.days,
        "sample_size": args.sample_size,
        "probes": probes,
        "probe_results": results,
        "wall_s": round(wall, 1),
        "probes_per_s": round(probes / wall, 1),
        "rss_mb_after_first_probe": round(rss_after_probe or 0, 1),
        "rss_mb_after_day_1": round(rss_start or rss_end, 1),
        "rss_mb_end": round(rss_end, 1),
        "rss_growth_pct_from_day_1": round(100 * (rss_end - (rss_start or rss_end)) / (rss_start or rss_end), 1),
        "database_bytes": size,
        "bytes_per_probe_result": round(size / max(results, 1), 1),
        "alerts_before_degradation": early_alerts,
        "tasks_alerted_after_degradation": len(first_alert),
        "probe_to_alert_probes": {
            "median": statistics.median(delays) if delays else None,
            "max": max(delays) if delays else None,
        },
        "probe_to_alert_simulated_hours": {
            "median": statistics.median(delays) if delays else None,
            "max": max(delays) if delays else None,
        },
        "probe_to_alert_wall_s_median": round(statistics.median(w for _, w in first_alert.values()), 1)
        if first_alert
        else None,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    sim.stop()
    engine.dispose()


if __name__ == "__main__":
    main()
