"""Benchmark: what human oversight adds to the service's alert pass.

The service runs ``oversight_pass`` before every alert pass (``medmon serve``'s delivery job), so
its cost is paid every few seconds. Figures, on a temporary SQLite file (and PostgreSQL with
``--postgres``), for a plan with ``--tasks`` reviewed tasks, each with ``--answers`` answers this
week judged by three judges on three criteria (rows bulk-inserted as the pipeline stores them):

1. the first pass: queues each task's weekly sample (stratified draw over the week's answers);
2. a steady-state pass: nothing new (the usual case between reviews);
3. the pass after ``--reviews`` answers per task were rated by clinicians (half by two):
   agreement recomputed per task and criterion (ICC via pingouin, alpha, biases), with the
   one-time ``import pingouin`` reported apart;
4. ``task_agreement`` alone for one task (the statistics without the queue or the alerts).

Usage::

    .venv/bin/python benchmarks/oversight.py [--tasks 3] [--answers 2000] [--reviews 200] [--postgres]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from sqlalchemy import insert  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session, col, select  # noqa: E402

from medmon.db import session_scope  # noqa: E402
from medmon.monitor.alerting.oversight import oversight_pass  # noqa: E402
from medmon.monitor.governance.clinician_agreement import task_agreement  # noqa: E402
from medmon.monitor.governance.review import record_review  # noqa: E402
from medmon.monitor.models import ReviewItem  # noqa: E402
from medmon.monitor.plan.model import Plan, parse_plan  # noqa: E402
from medmon.monitor.storage import make_engine  # noqa: E402
from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus, ProbeResult, ProbeRun, RunStatus  # noqa: E402
from tests.conftest import fresh_postgres_database, plan_dict  # noqa: E402

CRITERIA = ("accuracy", "completeness", "clarity")
JUDGES = ("judge-a", "judge-b", "judge-c")
NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)  # a Friday: most of a week of answers


def build_plan(url: str, tasks: int, reviews: int) -> Plan:
    data = plan_dict(storage={"url": url})
    base = data["tasks"][0]
    data["tasks"] = [
        base | {"id": f"task-{k}", "human_review_required": True, "subgroups": ["age_band", "sex"]}
        for k in range(tasks)
    ]
    ids = [t["id"] for t in data["tasks"]]
    data["oversight"] = {
        "reviewers": [
            {"name": "A", "email": "a@h.example", "tasks": ids},
            {"name": "B", "email": "b@h.example", "tasks": ids},
        ],
        "review": {"rate": 1.0, "weekly_quota": reviews, "double_rate": 0.5},
        "agreement": {"min_items": 20, "window": reviews},
    }
    return parse_plan(yaml.safe_dump(data))


def fill(engine: Engine, plan: Plan, answers: int, rng: random.Random) -> None:
    """Each task's week of answers, three judges x three criteria each, as the pipeline stores them."""
    start = NOW - timedelta(days=4)
    with session_scope(engine) as s:
        for task in plan.tasks:
            run = ProbeRun(task_id=task.id, status=RunStatus.complete, started_at=start, n_canaries=answers)
            s.add(run)
            s.flush()
            first = s.exec(select(ProbeResult.id).order_by(col(ProbeResult.id).desc()).limit(1)).first() or 0
            results, calls, verdicts = [], [], []
            for i in range(answers):
                rid = first + i + 1
                truth = rng.randint(1, 5)
                results.append(
                    {
                        "id": rid,
                        "run_id": run.id,
                        "task_id": task.id,
                        "canary_id": f"c{i % 50}",
                        "scorer": "jury",
                        "answer": "Start with the first-line option.",
                        "jury_mean": float(truth),
                        "jury_agreement": rng.choice((0.5, 0.9, 1.0)),
                        "tags": {"age_band": rng.choice(("18-64", "65+")), "sex": rng.choice("FM")},
                        "created_at": start + timedelta(seconds=30 * i),
                    }
                )
                for j, judge in enumerate(JUDGES):
                    call_id = (rid - 1) * len(JUDGES) + j + 1
                    calls.append(
                        {
                            "id": call_id,
                            "result_id": rid,
                            "task_id": task.id,
                            "judge": judge,
                            "parse_status": ParseStatus.ok,
                            "created_at": start,
                        }
                    )
                    verdicts += [
                        {
                            "result_id": rid,
                            "call_id": call_id,
                            "task_id": task.id,
                            "judge": judge,
                            "criterion": c,
                            "score": max(1, min(5, truth + rng.choice((-1, 0, 0, 1)))),
                            "parse_status": ParseStatus.ok,
                            "created_at": start,
                        }
                        for c in CRITERIA
                    ]
            s.execute(insert(ProbeResult), results)
            s.execute(insert(JudgeCall), calls)
            s.execute(insert(JuryVerdict), verdicts)


def timed(fn: object) -> float:
    t0 = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - t0


@contextmanager
def database(postgres: bool) -> Iterator[str]:
    if postgres:
        with fresh_postgres_database("medmon_bench_oversight") as url:
            yield url
        return
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{Path(folder) / 'oversight.db'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--answers", type=int, default=2000, help="answers per task this week")
    parser.add_argument("--reviews", type=int, default=200, help="answers per task rated by clinicians")
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    rng = random.Random(1)
    with database(args.postgres) as url:
        plan = build_plan(url, args.tasks, args.reviews)
        engine = make_engine(url)
        fill(engine, plan, args.answers, rng)

        def one_pass(at: datetime) -> None:
            with session_scope(engine) as s:
                oversight_pass(s, plan, at)

        backend = "PostgreSQL" if args.postgres else "SQLite"
        print(f"{backend}: {args.tasks} reviewed tasks x {args.answers} answers this week, 3 judges x 3 criteria")
        print(f"1. first pass (queues {args.reviews} answers per task): {timed(lambda: one_pass(NOW)) * 1000:.0f} ms")
        steady = [timed(lambda: one_pass(NOW + timedelta(seconds=k + 1))) for k in range(5)]
        print(f"2. steady-state pass (nothing new), median of 5: {sorted(steady)[2] * 1000:.1f} ms")
        with session_scope(engine) as s:
            for item in s.exec(select(ReviewItem).where(ReviewItem.status == "open")).all():
                score = rng.randint(1, 5)
                record_review(
                    s,
                    plan,
                    item_id=item.id or 0,
                    reviewer=item.reviewer,
                    scores={c: score for c in CRITERIA},
                    note="",
                    safety_concern=False,
                    actor=item.reviewer,
                    now=NOW + timedelta(minutes=1),
                )
        t_import = timed(lambda: __import__("pingouin"))
        after = timed(lambda: one_pass(NOW + timedelta(minutes=2)))
        print(
            f"3. pass after {args.reviews} rated answers per task (half double-reviewed): {after * 1000:.0f} ms "
            f"(plus import pingouin once: {t_import:.2f} s)"
        )
        with Session(engine) as s:
            alone = [timed(lambda: task_agreement(s, "task-0", window=args.reviews)) for _ in range(3)]
        print(
            f"4. task_agreement for one task ({args.reviews} answers x 3 criteria), median of 3: "
            f"{sorted(alone)[1] * 1000:.0f} ms"
        )
        engine.dispose()


if __name__ == "__main__":
    main()
