"""Benchmark: real-traffic ingest, span-to-stream time, the traffic page at 10 million spans, cost-rise delay.

1. **Ingest throughput.** The receiver ``medmon serve`` starts (``create_receiver`` from a plan,
   served by uvicorn) runs in a process of its own; this process posts OTLP/HTTP protobuf
   exports of 512 GenAI spans (the SDK's ``BatchSpanProcessor`` batch size, encoded by the SDK's
   own encoder) from 4 threads, on SQLite and PostgreSQL. Figure: spans stored per second
   (target: 5,000/s into PostgreSQL).
2. **Span to stream.** ``medmon serve``'s own service (``run_service``, SQLite, the plan's
   default ``traffic.detect_every`` of 5 s) with a complete reference; the real OTLP exporter
   sends one span at a time; figure: seconds from ``export()`` to the task's cost stream having
   counted it.
3. **Traffic page at 10 million spans.** Hourly rollups for 10 million calls (4 tasks and the
   unmatched, 90 days); the Production traffic page rendered with Streamlit's AppTest for 30 and
   90 days (target: under 2 s).
4. **Detection delay.** The traffic pass (as the service runs it) on 1,000 calls an hour: a day
   of reference, then the median cost per call up 20%; calls until the cost alert, over
   several seeds, and the same run without a rise (false alarms).
5. **Call volume.** The traffic pass on a clinical rhythm peaking at 1,000 calls an hour (busy
   8:00-18:00, a twentieth of that at night; day-to-day and hour-to-hour spread of 5% each, then
   Poisson): three days of real spans as the reference (hour of the day), then hour after hour
   the counts the rollup step writes; calls halved in working hours from a Thursday 08:00:
   working hours until the collapse alert; and ``--volume-days`` days without change: false alarms.
   ``--volume-weekends --volume-reference-days 7``: quieter weekends and a week of reference.

Usage::

    .venv/bin/python benchmarks/traffic.py [--parts ingest,e2e,page,delay,volume] [--backends sqlite,postgresql]
        [--spans 100000] [--trials 5] [--volume-days 60] [--pg-server postgresql://postgres@127.0.0.1:5432]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DO_NOT_TRACK", "1")

import httpx  # noqa: E402
import yaml  # noqa: E402
from sqlalchemy import insert, text  # noqa: E402
from sqlmodel import Session, func, select  # noqa: E402

from benchmarks.dashboard_render import scratch_postgres  # noqa: E402
from medmon.db import session_scope, utcnow  # noqa: E402
from medmon.monitor.models import LATENCY_BUCKETS, DetectorState, TrafficRollup, TrafficSpan  # noqa: E402
from medmon.monitor.plan.model import Plan  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.monitor.traffic.ingest import Ingestor, store_calls  # noqa: E402
from medmon.monitor.traffic.spans import CallRecord, Decoded, Limits  # noqa: E402
from medmon.monitor.traffic.streams import traffic_pass  # noqa: E402
from tests.conftest import plan_dict  # noqa: E402
from tests.monitor.traffic_helpers import (  # noqa: E402
    calls_in_hours,
    clinic_counts,
    export_body,
    genai_attributes,
    make_spans,
    working_hour,
)

BATCH = 512
MODEL = "medmon-simulator/clinical-v1"
TASKS = ["discharge", "triage", "coding", "summaries"]


def plan_data(db_url: str, **traffic: Any) -> dict[str, Any]:
    return plan_dict(
        deployment={
            "base_url": "http://127.0.0.1:9/v1",
            "model": MODEL,
            "api_key_env": "MEDMON_TEST_KEY",
            "price": {"input_per_mtok": 5.0, "output_per_mtok": 15.0},
        },
        tasks=[
            {
                "id": t,
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1d",
                "baseline": {"value": 0.85, "n": 500},
                "thresholds": {"min_score": 0.7},
            }
            for t in TASKS
        ],
        storage={"url": db_url},
        traffic={
            "token_env": None,
            "routes": [{"task": t, "attributes": {"medmon.task": t}} for t in TASKS],
            **traffic,
        },
    )


# 1. ingest -------------------------------------------------------------------------------------------


def _serve_receiver(db_url: str, port_queue: Any, stop: Any) -> None:
    from medmon.monitor.service.receiver import create_receiver
    from medmon.monitor.service.webserver import serve_in_thread

    plan = Plan.model_validate(plan_data(db_url))
    engine = make_engine(db_url)
    server = serve_in_thread(create_receiver(engine, plan, token=None))
    port_queue.put(server.url)
    stop.wait()
    server.stop()


def _bodies(n_spans: int) -> list[bytes]:
    rng = random.Random(1)
    bodies = []
    for start in range(0, n_spans, BATCH):
        specs = [
            genai_attributes(tokens=(rng.randint(200, 900), rng.randint(20, 400)), **{"medmon.task": rng.choice(TASKS)})
            for _ in range(min(BATCH, n_spans - start))
        ]
        bodies.append(export_body(make_spans(specs, duration_s=rng.uniform(0.3, 3.0))))
    return bodies


def ingest(db_url: str, n_spans: int, threads: int = 4) -> dict[str, float]:
    make_engine(db_url).dispose()  # tables first, outside the timing
    bodies = _bodies(n_spans)
    ctx = multiprocessing.get_context("spawn")
    urls, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve_receiver, args=(db_url, urls, stop), daemon=True)
    proc.start()
    url = urls.get(timeout=60)
    pending = list(range(len(bodies)))
    lock = threading.Lock()

    def post() -> None:
        with httpx.Client(timeout=60) as client:
            while True:
                with lock:
                    if not pending:
                        return
                    i = pending.pop()
                r = client.post(
                    f"{url}/v1/traces", content=bodies[i], headers={"Content-Type": "application/x-protobuf"}
                )
                r.raise_for_status()

    t0 = time.perf_counter()
    workers = [threading.Thread(target=post) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    stop.set()
    proc.join(30)
    engine = make_engine(db_url)
    with Session(engine) as s:
        stored = int(s.exec(select(func.count()).select_from(TrafficSpan)).one())
    engine.dispose()
    if stored != n_spans:
        raise RuntimeError(f"stored {stored} of {n_spans} spans")
    return {"spans": stored, "seconds": elapsed, "spans_per_s": stored / elapsed}


# 2. span to stream -------------------------------------------------------------------------------------


def _calls(
    rng: random.Random, n: int, start: datetime, per_hour: float, task: str, factor: float = 1.0
) -> list[CallRecord]:
    out = []
    for i in range(n):
        end = start + timedelta(seconds=i * 3600 / per_hour)
        tin, tout = rng.lognormvariate(6.0, 0.4) * factor, rng.lognormvariate(5.0, 0.5) * factor
        out.append(
            CallRecord(
                trace_id=f"{rng.getrandbits(128):032x}",
                span_id=f"{rng.getrandbits(64):016x}",
                service="app",
                span_name=f"chat {MODEL}",
                operation="chat",
                request_model=MODEL,
                response_model=MODEL,
                system_fingerprint=None,
                started_at=end - timedelta(seconds=1),
                ended_at=end,
                input_tokens=round(tin),
                output_tokens=round(tout),
                finish_reason="stop",
                error_type=None,
                prompt=None,
                completion=None,
                attributes={"medmon.task": task},
                duration_s=rng.uniform(0.4, 3.0),
            )
        )
    return out


def span_to_stream(workdir: Path, trials: int) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from medmon.monitor.service.serve import ServiceOptions, run_service

    db_url = f"sqlite:///{workdir / 'e2e.db'}"
    data = plan_data(db_url, reference_window="1h", reference_min_calls=200)
    plan_path = workdir / "e2e.yaml"
    plan_path.write_text(yaml.safe_dump(data))
    plan = Plan.model_validate(data)
    engine = make_engine(db_url)
    now = utcnow()
    ingestor = Ingestor(plan, lambda s: s, Limits())
    store_calls(
        engine, ingestor, Decoded(_calls(random.Random(2), 1000, now - timedelta(hours=3), 500, "discharge")), now
    )
    with session_scope(engine) as s:
        traffic_pass(s, plan, now)
    os.environ.setdefault("MEDMON_TEST_KEY", "unused")  # the service refuses an unset key; no model is called
    stop = threading.Event()
    port = _free_port()
    service = threading.Thread(
        target=run_service,
        args=(plan_path, stop),
        kwargs={"options": ServiceOptions(traffic_port=port, install_signals=False)},
    )
    service.start()
    url = f"http://127.0.0.1:{port}"
    delays = []
    try:
        while True:  # until the receiver answers
            try:
                httpx.post(f"{url}/v1/traces", content=b"", headers={"Content-Type": "application/x-protobuf"})
                break
            except httpx.TransportError:
                if not service.is_alive():
                    raise RuntimeError("the service stopped before its traffic receiver answered") from None
                time.sleep(0.1)
        exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces")
        key = "discharge:traffic_cost:rise"
        rng = random.Random(9)
        for _ in range(trials):
            with Session(engine) as s:
                before = s.get(DetectorState, key).n if s.get(DetectorState, key) else 0
            spans = make_spans([genai_attributes(**{"medmon.task": "discharge"})])
            time.sleep(rng.uniform(0, 5))  # at any moment of the pass cycle, not just after a pass
            t0 = time.perf_counter()
            exporter.export(spans)
            while True:
                with Session(engine) as s:
                    row = s.get(DetectorState, key)
                    if row is not None and row.n > before:
                        break
                time.sleep(0.02)
            delays.append(time.perf_counter() - t0)
    finally:
        stop.set()
        service.join(60)
    return {
        "detect_every": plan.traffic.detect_every if plan.traffic else None,
        "trials": len(delays),
        "median_s": statistics.median(delays),
        "max_s": max(delays),
        "min_s": min(delays),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# 3. the traffic page at 10 million spans --------------------------------------------------------------------


def load_rollups(db_url: str, spans: int, days: int = 90) -> int:
    engine = make_engine(db_url)
    groups = [(t, MODEL) for t in TASKS] + [("", "gpt-other")]
    hours = days * 24
    per_row = spans // (hours * len(groups))
    rng = random.Random(5)
    end = utcnow().replace(minute=0, second=0, microsecond=0)
    rows = []
    for h in range(hours):
        hour = end - timedelta(hours=hours - h)
        for task, model in groups:
            calls = per_row
            hist = [0] * len(LATENCY_BUCKETS)
            for _ in range(calls // 50):
                hist[min(int(rng.lognormvariate(1.2, 0.5)), len(LATENCY_BUCKETS) - 1)] += 50
            hist[3] += calls - sum(hist)
            rows.append(
                {
                    "hour": hour,
                    "task_id": task,
                    "model": model,
                    "calls": calls,
                    "errors": calls // 50,
                    "input_tokens": calls * 500,
                    "output_tokens": calls * 150,
                    "cost_usd": calls * 0.00475,
                    "latency_sum_s": calls * 1.4,
                    "latency_max_s": 40.0,
                    "truncated": calls // 100,
                    "with_content": 0,
                    "refusals": 0,
                    **{f"latency_b{i}": n for i, n in enumerate(hist)},
                }
            )
    with engine.begin() as conn:
        for i in range(0, len(rows), 2000):
            conn.execute(insert(TrafficRollup.__table__), rows[i : i + 2000])
        if conn.dialect.name == "postgresql":
            conn.execute(text("ANALYZE trafficrollup"))
    engine.dispose()
    return per_row * len(rows)


def render_page(plan_path: Path, db_url: str, repeat: int = 3) -> dict[str, list[float]]:
    from streamlit.testing.v1 import AppTest

    os.environ["MEDMON_PLAN"] = str(plan_path)
    os.environ["MEDMON_DATABASE_URL"] = db_url
    app = str(ROOT / "dashboards" / "app.py")
    AppTest.from_file(app, default_timeout=120).run()
    out: dict[str, list[float]] = {"30 days": [], "90 days": []}
    for _ in range(repeat):
        for label in out:
            at = AppTest.from_file(app, default_timeout=120).run()
            at.switch_page("views/traffic.py").run()
            if label != "30 days":
                at.selectbox(key="traffic_period").set_value(label)
            t0 = time.perf_counter()
            at.run() if label != "30 days" else at.switch_page("views/traffic.py").run()
            out[label].append(time.perf_counter() - t0)
            if at.exception:
                raise RuntimeError(at.exception[0].value)
    del os.environ["MEDMON_PLAN"], os.environ["MEDMON_DATABASE_URL"]  # MEDMON_DATABASE_URL wins over any URL
    return out


# 4. detection delay --------------------------------------------------------------------------------------


def delay(workdir: Path, trials: int, rise: float = 1.2, per_hour: int = 1000) -> dict[str, Any]:
    found, false_alarms, hours_clean = [], 0, 0.0
    t0 = datetime(2026, 3, 2, tzinfo=UTC)
    for seed in range(trials):
        for factor in (rise, 1.0):
            db = workdir / f"delay-{seed}-{factor}.db"
            db.unlink(missing_ok=True)
            url = f"sqlite:///{db}"
            plan = Plan.model_validate(plan_data(url, reference_window="1d"))
            engine = make_engine(url)
            ingestor = Ingestor(plan, lambda s: s, Limits(max_age=timedelta(days=3650)))
            rng = random.Random(seed)
            store_calls(engine, ingestor, Decoded(_calls(rng, 24 * per_hour, t0, per_hour, "discharge")), t0)
            _drain(engine, plan, t0 + timedelta(days=1, seconds=1))
            start = t0 + timedelta(days=1, seconds=2)
            step = per_hour // 60  # a minute of calls per pass
            sent, alarmed = 0, False
            while sent < 12 * per_hour and not alarmed:
                batch = _calls(
                    rng, step, start + timedelta(seconds=sent * 3600 / per_hour), per_hour, "discharge", factor
                )
                store_calls(engine, ingestor, Decoded(batch), start)
                sent += step
                alarmed = _drain(engine, plan, start + timedelta(seconds=sent * 3600 / per_hour))
            if factor != 1.0:
                found.append(sent if alarmed else None)
            else:
                false_alarms += alarmed
                hours_clean += sent / per_hour
            engine.dispose()
    calls = [c for c in found if c is not None]
    return {
        "rise": rise,
        "calls_per_hour": per_hour,
        "trials": trials,
        "detected": len(calls),
        "median_calls": statistics.median(calls) if calls else None,
        "median_hours": statistics.median(calls) / per_hour if calls else None,
        "max_hours": max(calls) / per_hour if calls else None,
        "false_alarms_without_rise": false_alarms,
        "hours_without_rise": hours_clean,
    }


def _drain(engine: Any, plan: Plan, now: datetime) -> bool:
    alarm = False
    while True:
        with session_scope(engine) as s:
            done = traffic_pass(s, plan, now)
        alarm = alarm or any(u.finding is not None and u.spec.metric == "traffic_cost" for u in done.updates)
        if done.spans < 5000:
            return alarm


# 5. call volume -----------------------------------------------------------------------------------------


def _volume_alarm(engine: Any, plan: Plan, now: datetime) -> bool:
    with session_scope(engine) as s:
        done = traffic_pass(s, plan, now)
    return any(u.finding is not None and u.spec.metric == "traffic_calls" for u in done.updates)


def volume(
    workdir: Path, trials: int, days: int, peak: int = 1000, reference_days: int = 3, weekends: bool = False
) -> dict[str, Any]:
    """Working hours until a halving is found, and false alarms over ``days`` days without change, per seed."""
    t0 = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
    delays: list[int | None] = []
    false_alarms, hours_clean = 0, 0
    for seed in range(trials):
        for change in (0.5, 1.0):
            db = workdir / f"volume-{seed}-{change}.db"
            db.unlink(missing_ok=True)
            url = f"sqlite:///{db}"
            plan = Plan.model_validate(plan_data(url, reference_window=f"{reference_days}d"))
            engine = make_engine(url)
            ingestor = Ingestor(plan, lambda s: s, Limits(max_age=timedelta(days=3650)))
            reference = clinic_counts(seed, t0, 24 * reference_days, peak, weekends=weekends)
            store_calls(
                engine,
                ingestor,
                Decoded(calls_in_hours(seed, reference, service="app", attributes={"medmon.task": "discharge"})),
                t0,
            )
            _drain(engine, plan, t0 + timedelta(days=reference_days, minutes=11))
            start = t0 + timedelta(days=reference_days)
            at = start + timedelta(days=(3 - start.weekday()) % 7, hours=8)  # the next Thursday 08:00
            span = int((at - start).total_seconds() // 3600) + 48 if change != 1.0 else 24 * days  # Thu and Fri
            hours = clinic_counts(seed + 1000, start, span, peak, weekends=weekends, change_at=at, change=change)
            working, alarms = 0, 0
            for hour, n in hours:
                with session_scope(engine) as s:  # the hour's calls, as the rollup step writes them
                    s.add(TrafficRollup(hour=hour, task_id="discharge", model=MODEL, calls=n))
                working += hour >= at and working_hour(hour)
                if _volume_alarm(engine, plan, hour + timedelta(hours=1, minutes=11)):
                    alarms += 1
                    if change != 1.0:
                        break
            if change != 1.0:
                delays.append(working if alarms else None)
            else:
                false_alarms += alarms
                hours_clean += len(hours)
            engine.dispose()
    found = [d for d in delays if d is not None]
    return {
        "peak": peak,
        "reference_days": reference_days,
        "weekends": weekends,
        "trials": trials,
        "detected": len(found),
        "median_hours": statistics.median(found) if found else None,
        "max_hours": max(found) if found else None,
        "false_alarms": false_alarms,
        "hours_clean": hours_clean,
    }


@contextmanager
def database(backend: str, folder: Path, name: str, pg_server: str) -> Iterator[str]:
    if backend == "postgresql":
        with scratch_postgres(pg_server) as url:
            yield url
    else:
        yield f"sqlite:///{folder / f'{name}.db'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="ingest,e2e,page,delay,volume")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--spans", type=int, default=100_000)
    parser.add_argument("--page-spans", type=int, default=10_000_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--volume-days", type=int, default=60, help="days without change per seed (call volume)")
    parser.add_argument("--volume-reference-days", type=int, default=3, help="the reference's days (call volume)")
    parser.add_argument(
        "--volume-weekends",
        action="store_true",
        help="weekends at 40%% of a weekday's calls (call volume; give a reference of 7 days or more)",
    )
    parser.add_argument("--pg-server", default="postgresql://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    parts = args.parts.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "ingest" in parts:
            for backend in args.backends.split(","):
                with database(backend, folder, "ingest", args.pg_server) as url:
                    r = ingest(url, args.spans)
                print(
                    f"ingest {backend:10} {r['spans']:>8} spans in {r['seconds']:.1f}s: "
                    f"{r['spans_per_s']:,.0f} spans/s (OTLP/HTTP protobuf, 512 per export, 4 senders)",
                    flush=True,
                )
        if "e2e" in parts:
            r = span_to_stream(folder, args.trials * 2)
            print(
                f"span to stream (SQLite, detect_every {r['detect_every']}): median {r['median_s']:.2f}s, "
                f"min {r['min_s']:.2f}s, max {r['max_s']:.2f}s over {r['trials']} spans",
                flush=True,
            )
        if "page" in parts:
            for backend in args.backends.split(","):
                with database(backend, folder, "page", args.pg_server) as url:
                    n = load_rollups(url, args.page_spans)
                    plan_path = folder / f"page-{backend}.yaml"
                    plan_path.write_text(yaml.safe_dump(plan_data(url)))
                    times = render_page(plan_path, url)
                for label, ts in times.items():
                    print(
                        f"traffic page {backend:10} {n:,} spans as rollups, {label}: "
                        f"median {statistics.median(ts):.2f}s (max {max(ts):.2f}s, {len(ts)} renders)",
                        flush=True,
                    )
        if "delay" in parts:
            r = delay(folder, args.trials)
            print(
                f"detection delay, median cost +{(r['rise'] - 1):.0%} at {r['calls_per_hour']} calls/h: "
                f"detected {r['detected']}/{r['trials']}, median {r['median_calls']} calls "
                f"({r['median_hours']:.2f} h), max {r['max_hours']:.2f} h; without a rise: "
                f"{r['false_alarms_without_rise']} false alarm(s) in {r['hours_without_rise']:.0f} h",
                flush=True,
            )
        if "volume" in parts:
            r = volume(
                folder,
                args.trials,
                args.volume_days,
                reference_days=args.volume_reference_days,
                weekends=args.volume_weekends,
            )
            print(
                f"call volume halved in working hours at {r['peak']} calls/h (day-night cycle"
                f"{', quieter weekends' if r['weekends'] else ''}; {r['reference_days']}-day reference): detected "
                f"{r['detected']}/{r['trials']}, median {r['median_hours']} working hour(s), max {r['max_hours']}; "
                f"without change: {r['false_alarms']} false alarm(s) in {r['hours_clean']} h "
                f"({r['hours_clean'] / 24:.0f} days)",
                flush=True,
            )


if __name__ == "__main__":
    main()
