"""Benchmark: the governance record's costs — audit appends and verification, reports, redaction.

Four figures, on a temporary SQLite file (and PostgreSQL with ``--postgres``):

1. audit appends per second, one transaction each (how decisions are recorded), with one
   writer and with two concurrent writers (the chain must still verify);
2. ``verify`` time over the whole chain;
3. committee report time (gather + render) over a month of hourly probes for several tasks,
   rows bulk-inserted as the pipeline would have stored them;
4. the built-in redactor's throughput on typical answers.

Usage::

    .venv/bin/python benchmarks/governance.py [--appends 2000] [--verify 20000] [--tasks 5]
                                              [--runs 720] [--postgres]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from sqlalchemy import insert  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session  # noqa: E402

from medmon.db import session_scope  # noqa: E402
from medmon.monitor.governance.audit import AuditKind, record, verify  # noqa: E402
from medmon.monitor.governance.reports.committee import build_committee_report  # noqa: E402
from medmon.monitor.governance.reports.period import parse_period  # noqa: E402
from medmon.monitor.governance.reports.render import render_committee  # noqa: E402
from medmon.monitor.plan.model import parse_plan  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus  # noqa: E402
from medmon.probes.redaction import redact  # noqa: E402

T0 = datetime(2026, 11, 1, tzinfo=UTC)
PG_ADMIN = "host=127.0.0.1 user=postgres dbname=postgres"


def appends(engine: Engine, count: int, writers: int) -> float:
    """Appends per second, each in its own transaction, from ``writers`` threads."""
    per = count // writers

    def work(name: str) -> None:
        for i in range(per):
            with session_scope(engine) as session:
                record(
                    session,
                    AuditKind.alert_acknowledged,
                    f"{name}@hospital.example",
                    f"alert:{i}",
                    {"note": "investigating", "i": i},
                    T0 + timedelta(seconds=i),
                )

    threads = [threading.Thread(target=work, args=(f"w{k}",)) for k in range(writers)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return per * writers / (time.perf_counter() - started)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def seed_month(engine: Engine, tasks: int, runs: int, per_run: int = 20) -> int:
    """Store ``runs`` hourly runs of ``per_run`` results for each task, as the pipeline would."""
    rng = random.Random(0)
    total = 0
    with Session(engine) as session:
        for t in range(tasks):
            task_id = f"task-{t}"
            run_rows = [
                {
                    "task_id": task_id,
                    "purpose": "scheduled",
                    "status": RunStatus.complete,
                    "started_at": T0 + timedelta(hours=h),
                    "finished_at": T0 + timedelta(hours=h, seconds=5),
                    "n_canaries": per_run,
                    "n_errors": 0,
                    "mean_score": 0.8,
                    "deployment": "production",
                }
                for h in range(runs)
            ]
            ids = session.execute(insert(ProbeRun).returning(ProbeRun.id), run_rows).scalars().all()
            results = [
                {
                    "run_id": rid,
                    "task_id": task_id,
                    "canary_id": f"c{j}",
                    "score": float(rng.random() < 0.8),
                    "correct": True,
                    "answer": "B",
                    "prompt_tokens": 120,
                    "completion_tokens": 3,
                    "cost_usd": 0.00065,
                    "latency_s": 0.4,
                    "served_model": "m",
                    "tags": {},
                    "created_at": T0 + timedelta(hours=h, seconds=5),
                }
                for h, rid in enumerate(ids)
                for j in range(per_run)
            ]
            session.execute(insert(ProbeResult), results)
            total += len(results)
        session.commit()
    return total


def plan_for(tasks: int, url: str):  # type: ignore[no-untyped-def]
    task = {
        "benchmark": "med_qa",
        "canaries": {"pack": "clinical_knowledge_mcq"},
        "schedule": "1h",
        "thresholds": {"min_score": 0.7},
    }
    data = {
        "use_case": {"name": "Benchmark", "intended_use": "timing", "risk_tier": "high"},
        "owners": {
            "clinical": {"name": "A", "email": "a@h.example"},
            "technical": {"name": "B", "email": "b@h.example"},
        },
        "deployment": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
        "tasks": [task | {"id": f"task-{t}"} for t in range(tasks)],
        "storage": {"url": url},
    }
    return parse_plan(yaml.safe_dump(data))


def run(url: str, args: argparse.Namespace, label: str) -> None:
    engine = make_engine(url)
    one = appends(engine, args.appends, 1)
    two = appends(engine, args.appends, 2)
    with Session(engine) as session:
        ok = verify(session).ok
    print(f"[{label}] audit appends: {one:,.0f}/s one writer, {two:,.0f}/s two writers; chain verifies: {ok}")
    extra = args.verify - 2 * args.appends
    if extra > 0:
        with session_scope(engine) as session:
            for i in range(extra):
                record(session, AuditKind.reevaluation, "medmon", "task:x", {"i": i}, T0)
    with Session(engine) as session:
        seconds, report = timed(lambda: verify(session))
    print(
        f"[{label}] verify: {report.entries:,} entries in {seconds:.2f} s "  # type: ignore[attr-defined]
        f"({report.entries / seconds:,.0f} entries/s)"
    )  # type: ignore[attr-defined]
    rows = seed_month(engine, args.tasks, args.runs)
    plan = plan_for(args.tasks, url)
    with Session(engine) as session:
        gather, built = timed(lambda: build_committee_report(session, plan, parse_period("2026-11"), now=T0))
        render, html = timed(lambda: render_committee(built))  # type: ignore[arg-type]
    print(
        f"[{label}] report over {rows:,} results ({args.tasks} tasks x {args.runs} runs): gather {gather:.2f} s, "
        f"render {render:.2f} s, {len(html) / 1024:.0f} KiB HTML"
    )  # type: ignore[arg-type]
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--verify", type=int, default=20000)
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--runs", type=int, default=720)
    parser.add_argument("--postgres", action="store_true", help="also run against 127.0.0.1:5432 (scratch database)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run(f"sqlite:///{Path(folder) / 'bench.db'}", args, "sqlite")
    if args.postgres:
        import psycopg

        name = f"medmon_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        try:
            run(f"postgresql://postgres@127.0.0.1:5432/{name}", args, "postgresql")
        finally:
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE {name} WITH (FORCE)")
    texts = [
        "B",
        "The answer is C. Warfarin's effect rises with fluconazole.",
        "Patient: John Smith, MRN 00123456, DOB: 03/14/1950, call 555-123-4567. Creatinine clearance 78.5 mL/min." * 3,
    ] * 2000
    seconds, _ = timed(lambda: [redact(t) for t in texts])
    chars = sum(len(t) for t in texts)
    print(f"redaction (builtin): {len(texts) / seconds:,.0f} answers/s, {chars / seconds / 1e6:.1f} M chars/s")


if __name__ == "__main__":
    main()
