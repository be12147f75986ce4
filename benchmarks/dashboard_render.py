"""Benchmark: time to render each dashboard page over a large history, on SQLite and PostgreSQL.

A synthetic deployment of 50 tasks probed hourly with 20 canaries for 1,000 hours (1,000,000
probe results, 50,000 runs) is bulk-inserted with executemany (SQLite) or COPY (PostgreSQL),
plus what the service writes beside it: detector states, findings, alerts and their history,
notifications (some undeliverable), model changes and re-evaluation runs, baselines, jury calls
and verdicts for the jury-scored tasks, and a hash-chained audit log. Then every page is
rendered with Streamlit's AppTest (the same script a browser session runs) and timed. Target:
under 2 s per page. The pages only call ``medmon.monitor.read``, whose aggregates run in the database.

Usage::

    .venv/bin/python benchmarks/dashboard_render.py [--results 1000000] [--tasks 50]
        [--backends sqlite,postgresql] [--repeat 3] [--pg-server postgresql://postgres@127.0.0.1:5432]
        [--keep DIR]

PostgreSQL gets a scratch database (created and dropped here). Both databases are ANALYZEd
after loading, as autovacuum would do on a live system.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DO_NOT_TRACK", "1")

import yaml  # noqa: E402
from sqlalchemy import insert, text  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session, SQLModel  # noqa: E402

from medmon.alerts.models import Alert, AlertEvent, AlertStatus, Notification, NotificationStatus, Severity  # noqa: E402
from medmon.baselines import BaselineFigures, benchmarks, record_baseline  # noqa: E402
from medmon.monitor.governance import audit  # noqa: E402
from medmon.monitor.models import DetectorState, FindingRecord, ModelIdentity, StreamStatus  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus, ProbeResult, ProbeRun, RunStatus  # noqa: E402

APP = ROOT / "dashboards" / "app.py"
PAGES = ["overview", "task", "alerts", "costs", "jury", "baselines", "changes", "governance"]
# Wider views a user can choose: (label, page, selectbox key, value), timed on the rerun they cause.
VARIANTS = [
    ("task, everything", "task", "range", "everything"),
    ("costs, 30 days", "costs", "period", "30 days"),
    ("costs, 90 days", "costs", "period", "90 days"),
    ("jury, 90 days", "jury", "jury_days", 90),
]
PER_RUN = 20
JUDGED_PER_TASK = 500
JUDGES = ("judge-a", "judge-b", "judge-c")
CRITERIA = ("accuracy", "completeness", "clarity")
AGE = ("18-39", "40-64", "65+")
SEX = ("female", "male")
BATCH = 50_000


def plan_text(tasks: Sequence[tuple[str, str]], db_url: str) -> str:
    """A valid plan for the synthetic deployment (the dashboard reads it as a user's would)."""
    judge = {"base_url": "http://127.0.0.1:9/v1", "model": "judge", "api_key_env": "MEDMON_BENCH_KEY"}
    plan = {
        "version": 1,
        "use_case": {
            "name": "Benchmark deployment (synthetic data)",
            "intended_use": "Render timing",
            "risk_tier": "high",
            "intended_users": ["committee"],
            "workflow": "advisory",
            "consequence_of_error": "none: synthetic",
        },
        "owners": {
            "clinical": {"name": "Dr. Owner", "email": "owner@hospital.example"},
            "technical": {"name": "Tech", "email": "tech@hospital.example"},
        },
        "deployment": {
            "base_url": "http://127.0.0.1:9/v1",
            "model": "bench/model-v1",
            "api_key_env": "MEDMON_BENCH_KEY",
            "price": {"input_per_mtok": 5, "output_per_mtok": 15},
        },
        "jury": {"judges": [judge | {"name": j, "model": j} for j in JUDGES]},
        "tasks": [
            {
                "id": tid,
                "benchmark": bench,
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1h",
                "sample_size": PER_RUN,
                "subgroups": ["age_band", "sex"],
                "thresholds": {
                    "min_score": 0.7,
                    "cost_budget_per_call": 0.002,
                    "latency_slo_s": 5,
                    "min_jury_agreement": 0.6,
                },
            }
            for tid, bench in tasks
        ],
        "alerts": {"routes": [{"name": "pager", "url": "http://127.0.0.1:9/hook"}]},
        "storage": {"url": db_url},
    }
    return yaml.safe_dump(plan, sort_keys=False)


def _insert(engine: Engine, table: type[SQLModel], rows: list[dict[str, Any]]) -> None:
    """Bulk insert: COPY on PostgreSQL, executemany elsewhere; Python-side defaults applied first."""
    if not rows:
        return
    sa_table = table.__table__  # type: ignore[attr-defined]
    # A generated primary key not given is left to the database (its sequence on PostgreSQL).
    columns = [c.name for c in sa_table.columns if not (c.primary_key and c.name == "id" and "id" not in rows[0])]
    full = [{k: v for k, v in _with_defaults(sa_table, r).items() if k in columns} for r in rows]
    if engine.dialect.name == "postgresql":
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            names = ", ".join(f'"{c}"' for c in columns)
            with cur.copy(f'COPY "{sa_table.name}" ({names}) FROM STDIN') as copy:  # type: ignore[attr-defined]
                for r in full:
                    copy.write_row([_pg_value(r[c]) for c in columns])
            raw.commit()
        finally:
            raw.close()
        return
    with engine.begin() as conn:
        for i in range(0, len(full), BATCH):
            conn.execute(insert(sa_table), full[i : i + BATCH])


_DEFAULTS: dict[tuple[str, str], Callable[[], Any]] = {}


def _with_defaults(sa_table: Any, row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for c in sa_table.columns:
        if c.name in out:
            continue
        key = (sa_table.name, c.name)
        if key not in _DEFAULTS:
            default = c.default
            if default is None:
                _DEFAULTS[key] = lambda: None
            elif default.is_callable:
                fn = default.arg
                _DEFAULTS[key] = lambda fn=fn: fn(None)
            else:
                value = default.arg
                _DEFAULTS[key] = lambda value=value: value
        out[c.name] = _DEFAULTS[key]()
    return out


def _pg_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value)
    if hasattr(value, "value") and not isinstance(value, str | int | float | bool):  # enums
        return value.name
    return value


def load(engine: Engine, n_results: int, n_tasks: int, seed: int = 7) -> tuple[list[tuple[str, str]], dict[str, float]]:
    """Write the synthetic history; returns the tasks and the load times per table."""
    rng = random.Random(seed)
    names = [b.benchmark for b in benchmarks()]
    tasks = [(f"task-{i:02d}", names[i % len(names)]) for i in range(n_tasks)]
    jury_tasks = {tid for tid, bench in tasks if _is_jury(bench)}
    runs_per_task = max(1, n_results // (n_tasks * PER_RUN))
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = now - timedelta(hours=runs_per_task)
    degraded = {tid for tid, _ in tasks[:3]}
    times: dict[str, float] = {}

    runs: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    judged: dict[str, list[tuple[int, datetime]]] = {t: [] for t in jury_tasks}
    times["proberun"] = times["proberesult"] = 0.0

    def flush() -> None:
        """Write the rows generated so far and forget them (1M dicts at once would not fit)."""
        t0 = time.perf_counter()
        _insert(engine, ProbeRun, runs)
        times["proberun"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        _insert(engine, ProbeResult, results)
        times["proberesult"] += time.perf_counter() - t0
        runs.clear()
        results.clear()

    run_id = result_id = 0
    for k in range(runs_per_task):
        at = start + timedelta(hours=k + 1)
        late = k >= runs_per_task - 100
        for tid, bench in tasks:
            run_id += 1
            p = 0.55 if (tid in degraded and late) else 0.86
            total = 0.0
            scored = 0
            errors = 0
            for _ in range(PER_RUN):
                result_id += 1
                failed = rng.random() < 0.01
                score = None if failed else float(rng.random() < p)
                errors += failed
                if score is not None:
                    total += score
                    scored += 1
                tokens = 5 + (400 if tid in degraded and late else 0)
                jury = tid in jury_tasks and k >= runs_per_task - JUDGED_PER_TASK // PER_RUN
                row: dict[str, Any] = {
                    "id": result_id,
                    "run_id": run_id,
                    "task_id": tid,
                    "canary_id": f"c-{rng.randrange(500):03d}",
                    "pack": "bench",
                    "benchmark": bench,
                    "scorer": "exact_match",
                    "score": score,
                    "correct": None if score is None else score == 1.0,
                    "answer": None if failed else "A",
                    "prompt_tokens": None if failed else 120,
                    "completion_tokens": None if failed else tokens,
                    "cost_usd": None if failed else (120 * 5 + tokens * 15) / 1e6,
                    "latency_s": None if failed else rng.lognormvariate(-0.5, 0.6),
                    "finish_reason": None if failed else "stop",
                    "requested_model": "bench/model-v1",
                    "served_model": None
                    if failed
                    else ("bench/model-v2" if k > runs_per_task // 2 else "bench/model-v1"),
                    "system_fingerprint": None if failed else "fp1",
                    "error_type": "timeout" if failed else None,
                    "error": "timed out" if failed else None,
                    "refused": False,
                    "baseline_score": float(rng.random() < 0.86),
                    "tags": {"age_band": rng.choice(AGE), "sex": rng.choice(SEX)},
                    "created_at": at,
                }
                if jury and score is not None:
                    row |= {
                        "jury_mean": 4.0,
                        "jury_judges": 3,
                        "jury_agreement": rng.choice((1.0, 0.92, 0.83)),
                        "jury_unanimous": rng.random() < 0.6,
                    }
                    judged[tid].append((result_id, at))
                results.append(row)
            runs.append(
                {
                    "id": run_id,
                    "task_id": tid,
                    "deployment": "production",
                    "purpose": "reevaluation" if k == runs_per_task // 2 + 1 else "scheduled",
                    "status": RunStatus.complete,
                    "started_at": at - timedelta(seconds=30),
                    "finished_at": at,
                    "n_canaries": PER_RUN,
                    "n_errors": errors,
                    "mean_score": total / scored if scored else None,
                }
            )
        if len(results) >= 100_000:
            flush()
    flush()

    t0 = time.perf_counter()
    calls, verdicts = [], []
    call_id = verdict_id = 0
    for tid, items in judged.items():
        for rid, at in items:
            for judge in JUDGES:
                call_id += 1
                bad = rng.random() < 0.02
                status = ParseStatus.unparsed if bad else ParseStatus.ok
                calls.append(
                    {
                        "id": call_id,
                        "result_id": rid,
                        "task_id": tid,
                        "judge": judge,
                        "model": judge,
                        "parse_status": status,
                        "asks": 2 if bad else 1,
                        "attempts": 1,
                        "prompt_tokens": 400,
                        "completion_tokens": 80,
                        "cost_usd": 0.0032,
                        "latency_s": 0.8,
                        "error": "no JSON object" if bad else None,
                        "created_at": at,
                    }
                )
                for criterion in CRITERIA:
                    verdict_id += 1
                    verdicts.append(
                        {
                            "id": verdict_id,
                            "result_id": rid,
                            "call_id": call_id,
                            "task_id": tid,
                            "judge": judge,
                            "criterion": criterion,
                            "score": None if bad else rng.choice((3, 4, 4, 5)),
                            "parse_status": status,
                            "explanation": None,
                            "created_at": at,
                        }
                    )
    _insert(engine, JudgeCall, calls)
    _insert(engine, JuryVerdict, verdicts)
    times["jury"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    states, found, idents, alerts, events, notes = [], [], [], [], [], []
    for i, (tid, _) in enumerate(tasks):
        bad = tid in degraded
        for metric, direction in (
            ("score", "drop"),
            ("score_paired", "drop"),
            ("error_rate", "rise"),
            ("cost", "rise"),
            ("latency", "rise"),
            ("score[age_band=65+]", "drop"),
            ("score[sex=female]", "drop"),
            ("gap[sex=female]", "rise"),
        ):
            status = StreamStatus.degraded if bad and metric in ("score", "cost") else StreamStatus.ok
            states.append(
                {
                    "key": f"{tid}:{metric}:{direction}",
                    "task_id": tid,
                    "metric": metric,
                    "direction": direction,
                    "status": status,
                    "null_mean": 0.8,
                    "baseline_mean": 0.86,
                    "threshold": 4.0e6,
                    "evidence": 5e6 if status == StreamStatus.degraded else 0.4,
                    "n": runs_per_task * PER_RUN,
                    "state": {},
                    "updated_at": now,
                }
            )
        idents += [
            {"task_id": tid, "served_model": "bench/model-v1", "system_fingerprint": "fp1", "first_seen": start},
            {
                "task_id": tid,
                "served_model": "bench/model-v2",
                "system_fingerprint": "fp1",
                "first_seen": start + timedelta(hours=runs_per_task // 2 + 1),
            },
        ]
        found.append(
            {
                "task_id": tid,
                "metric": "served_model",
                "kind": "model_change",
                "summary": f"{tid}: model changed",
                "created_at": start + timedelta(hours=runs_per_task // 2 + 1),
            }
        )
        if bad:
            for metric in ("score", "cost"):
                found.append(
                    {
                        "task_id": tid,
                        "metric": metric,
                        "kind": "drift",
                        "direction": "drop",
                        "statistic": 5e6,
                        "threshold": 4e6,
                        "estimate": 0.55,
                        "ci_low": 0.45,
                        "ci_high": 0.65,
                        "n": 200,
                        "null_mean": 0.8,
                        "summary": f"{tid}: {metric} drifted",
                        "created_at": now,
                    }
                )
    alert_id = 0
    for j in range(120):
        tid = tasks[j % len(tasks)][0]
        alert_id += 1
        resolved = j >= 20
        at = now - timedelta(hours=240 - 2 * j)
        alerts.append(
            {
                "id": alert_id,
                "fingerprint": uuid.uuid4().hex[:16],
                "task_id": tid,
                "rule": "drift_drop",
                "labels": {"deployment": "production", "task": tid, "metric": f"m{j}", "rule": "drift_drop"},
                "severity": Severity.critical if j % 3 == 0 else Severity.warning,
                "status": AlertStatus.resolved if resolved else AlertStatus.firing,
                "summary": f"{tid}: synthetic alert {j}",
                "owner": "Dr. Owner",
                "starts_at": at,
                "last_seen_at": at,
                "ends_at": at + timedelta(hours=3) if resolved else None,
                "resolved_by": "owner@hospital.example" if resolved else None,
                "resolve_reason": "reviewed" if resolved else None,
            }
        )
        events.append({"alert_id": alert_id, "at": at, "actor": "medmon", "to_status": "firing"})
        if resolved:
            events.append(
                {
                    "alert_id": alert_id,
                    "at": at + timedelta(hours=3),
                    "actor": "owner@hospital.example",
                    "from_status": "firing",
                    "to_status": "resolved",
                    "note": "reviewed",
                }
            )
        for n in range(2):
            dead = j < 10 and n == 0
            notes.append(
                {
                    "alert_id": alert_id,
                    "route": "pager",
                    "idempotency_key": uuid.uuid4().hex,
                    "event": "firing" if n == 0 else "resolved",
                    "payload": {"summary": f"alert {j}"},
                    "status": NotificationStatus.dead if dead else NotificationStatus.delivered,
                    "attempts": 8 if dead else 1,
                    "last_error": "pager: 503" if dead else None,
                    "created_at": at,
                    "next_attempt_at": at,
                }
            )
    for table, rows in (
        (DetectorState, states),
        (FindingRecord, found),
        (ModelIdentity, idents),
        (Alert, alerts),
        (AlertEvent, events),
        (Notification, notes),
    ):
        _insert(engine, table, rows)
    with Session(engine) as session:
        for tid, bench in tasks:
            record_baseline(
                session,
                BaselineFigures(
                    benchmark=bench,
                    model="bench/model-v1",
                    metric="score",
                    value=0.86,
                    n=1000,
                    source_kind="helm",
                    source_sha256=uuid.uuid4().hex * 2,
                    source_files={"stats.json": uuid.uuid4().hex * 2},
                ),
            )
        audit.record_plan(session, plan_text(tasks, "bench"), "plan.yaml", "medmon", start)
        for j in range(300):
            audit.record(
                session,
                audit.AuditKind.alert_resolved,
                "owner@hospital.example",
                f"alert:{j}",
                {"reason": "reviewed"},
                start + timedelta(hours=j),
            )
        session.commit()
    times["service tables"] = time.perf_counter() - t0
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            for name in ("proberun", "proberesult", "judgecall", "juryverdict", "alert", "notification"):
                conn.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), (SELECT max(id) FROM {name}))")
                )
    t0 = time.perf_counter()
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE"))
    times["analyze"] = time.perf_counter() - t0
    return tasks, times


def _is_jury(benchmark: str) -> bool:
    from medmon.baselines import resolve

    return resolve(benchmark).llm_jury


def render(plan_path: Path, db_url: str, repeat: int) -> dict[str, list[float]]:
    """Seconds to render each page (AppTest), ``repeat`` times each, after one warm-up render;
    then each wider view, timed on the rerun its selection causes."""
    from streamlit.testing.v1 import AppTest

    os.environ["MEDMON_PLAN"] = str(plan_path)
    os.environ["MEDMON_DATABASE_URL"] = db_url
    AppTest.from_file(str(APP), default_timeout=120).run()  # imports and the engine pool, once per process
    out: dict[str, list[float]] = {p: [] for p in PAGES} | {v[0]: [] for v in VARIANTS}
    for _ in range(repeat):
        for page in PAGES:
            at = AppTest.from_file(str(APP), default_timeout=120)
            t0 = time.perf_counter()
            at.run()
            elapsed = time.perf_counter() - t0
            if page != "overview":
                t0 = time.perf_counter()
                at.switch_page(f"views/{page}.py").run()
                elapsed = time.perf_counter() - t0
            _check(at, page)
            out[page].append(elapsed)
        for label, page, key, value in VARIANTS:
            at = AppTest.from_file(str(APP), default_timeout=120).run()
            at.switch_page(f"views/{page}.py").run()
            at.selectbox(key=key).set_value(value)
            t0 = time.perf_counter()
            at.run()
            out[label].append(time.perf_counter() - t0)
            _check(at, label)
    return out


def _check(at: Any, label: str) -> None:
    if at.exception:
        raise RuntimeError(f"{label}: {at.exception[0].value}")


@contextmanager
def scratch_postgres(server: str, keep: bool = False) -> Iterator[str]:
    import psycopg
    from sqlalchemy.engine import make_url

    base = make_url(server)
    name = f"medmon_bench_{uuid.uuid4().hex[:10]}"
    admin = base.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        if keep:
            print(f"kept PostgreSQL database {name}")
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_backend(backend: str, args: argparse.Namespace, folder: Path) -> None:
    os.environ.pop("MEDMON_DATABASE_URL", None)  # it would override the URL given to make_engine
    if backend == "sqlite":
        ctx: Any = nullcontext(f"sqlite:///{folder / 'bench.db'}")
    else:
        ctx = scratch_postgres(args.pg_server, keep=args.keep is not None)
    with ctx as url:
        engine = make_engine(url)
        t0 = time.perf_counter()
        tasks, times = load(engine, args.results, args.tasks)
        loaded = time.perf_counter() - t0
        with engine.connect() as conn:
            n = conn.execute(text("SELECT count(*) FROM proberesult")).scalar_one()
            runs = conn.execute(text("SELECT count(*) FROM proberun")).scalar_one()
        engine.dispose()
        plan_path = folder / f"plan-{backend}.yaml"
        plan_path.write_text(plan_text(tasks, url))
        print(
            f"\n{backend}: {n:,} probe results, {runs:,} runs, {len(tasks)} tasks; loaded in {loaded:.1f} s "
            f"({', '.join(f'{k} {v:.1f} s' for k, v in times.items())})"
        )
        timings = render(plan_path, url, args.repeat)
        print(f"{'page':<18}{'median s':>10}{'max s':>8}   target < 2 s")
        for page, values in timings.items():
            verdict = "ok" if max(values) < 2.0 else "OVER"
            print(f"{page:<18}{statistics.median(values):>10.3f}{max(values):>8.3f}   {verdict}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pg-server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument(
        "--keep", type=Path, help="write the SQLite database here and keep it (and keep the PostgreSQL database)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for backend in args.backends.split(","):
            run_backend(backend.strip(), args, folder)


if __name__ == "__main__":
    main()
