"""A realistic dashboard database: the real pipeline against the simulator, then a few extras.

Two tasks are probed hour by hour (on a stepped clock) while the SIMULATED model holds its
baseline, then loses accuracy and costs more, then is silently swapped for another version.
The result has runs, scores, detector states, findings, model changes and alerts exactly as
the service writes them; a HELM-style baseline, three judges' verdicts and
an undeliverable notification are added so every page has something to show.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import Session, col, select

from medmon.alerts import DeliveryPolicy, deliver_due
from medmon.baselines import BaselineFigures, record_baseline
from medmon.monitor.governance.audit import seal_run
from medmon.monitor.governance.change_control import record_plan_file
from medmon.monitor.governance.reevaluation import reevaluate_pending
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import load_plan
from medmon.monitor.plan.routing import build_channels
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.webserver import serve_in_thread
from medmon.monitor.storage import make_engine
from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus, ProbeResult, ProbeRun
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import fresh_postgres_database, plan_dict

OWNER = "owner@hospital.example"
TECH = "tech@hospital.example"
CALC_OWNER = "pharmacy-lead@hospital.example"
OUTSIDER = "visitor@hospital.example"
ROUNDS = 24
PER_ROUND = 40  # two tasks x 20 canaries
JUDGES = ("judge-a", "judge-b", "judge-c")
JUDGED = 60
DEAD_ROUTE_URL = "http://127.0.0.1:9/medmon"  # the discard port: nothing listens, delivery fails


@dataclass(frozen=True)
class Seeded:
    """A seeded database file and the plan that points at it."""

    plan_path: Path
    db_path: Path
    db_url: str
    start: datetime


def seed_plan(db_url: str, base_url: str = "http://127.0.0.1:9/v1") -> dict[str, Any]:
    """The two-task plan the seeded database belongs to."""
    return plan_dict(
        use_case={
            "name": "Medication knowledge assistant",
            "risk_tier": "high",
            "intended_use": "Answer clinicians' pharmacology and dosing questions.",
            "intended_users": ["hospitalists", "clinical pharmacists"],
            "workflow": "Advisory; a clinician verifies before acting.",
            "consequence_of_error": "A wrong answer could lead to a medication error.",
        },
        deployment={
            "base_url": base_url,
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "MEDMON_TEST_KEY",
            "price": {"input_per_mtok": 5, "output_per_mtok": 15},
            "timeout_s": 5,
            "max_retries": 0,
            # One call at a time: the simulator draws each answer's fate from one random
            # stream in arrival order, so the same seed gives the same database every run.
            "max_concurrency": 1,
        },
        tasks=[
            {
                "id": "knowledge-qa",
                "benchmark": "med_qa",
                "canaries": {"pack": "clinical_knowledge_mcq"},
                "schedule": "1h",
                "sample_size": 20,
                "subgroups": ["age_band", "sex"],
                "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5},
            },
            {
                "id": "dose-calc",
                "benchmark": "medcalc_bench",
                "canaries": {"pack": "medical_calculations"},
                "schedule": "1h",
                "sample_size": 20,
                "subgroups": ["age_band", "sex"],
                "owner": {"name": "Pharmacy Lead", "email": CALC_OWNER},
                "thresholds": {"min_score": 0.6, "cost_budget_per_call": 0.002, "latency_slo_s": 5},
            },
        ],
        alerts={"routes": [{"name": "pager", "url": DEAD_ROUTE_URL}], "repeat_interval": "4h"},
        detection={"probes_between_false_alarms": 500},
        governance={
            "evidence": {
                "summary": "MedQA and MedCalc-Bench results of the approved model (MedHELM v2.0.0).",
                "limitations": ["LLM-jury agreement with clinicians is moderate (ICC 0.47)."],
            },
            "controls": {
                "decision_criteria": "Suspend when the score interval falls under the threshold.",
                "human_review": "Pharmacist review of every dosing answer.",
                "reevaluation": {"on_detected_change": False},
            },
            "approval": {
                "approved_by": {"name": "Dr. Chair", "email": "chair@hospital.example"},
                "approved_on": "2026-10-01",
                "committee": "Clinical AI Committee",
                "reference": "CAIC-2026-14",
            },
        },
        storage={"url": db_url},
    )


def _phases() -> list[Phase]:
    return [
        Phase(0, accuracy=0.9, label="baseline"),
        Phase(10 * PER_ROUND, accuracy=0.45, extra_completion_tokens=400, label="accuracy drop + cost rise"),
        Phase(
            16 * PER_ROUND,
            accuracy=0.45,
            extra_completion_tokens=400,
            model="medmon-simulator/clinical-v2",
            fingerprint="fp_sim_0002",
            label="silent model swap",
        ),
    ]


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.t = start

    def __call__(self) -> datetime:
        return self.t


def seed(folder: Path, *, db_url: str | None = None, rounds: int = ROUNDS) -> Seeded:
    """Write a seeded database (a SQLite file under ``folder`` unless ``db_url`` names another)
    and its plan under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    db_path = folder / "seed.db"
    db_url = db_url or f"sqlite:///{db_path}"
    canaries = load_pack("clinical_knowledge_mcq").canaries + load_pack("medical_calculations").canaries
    sim = serve_in_thread(create_simulator(canaries, _phases(), seed=7))
    try:
        plan_path = folder / "plan.yaml"
        plan_path.write_text(yaml.safe_dump(seed_plan(db_url, f"{sim.url}/v1"), sort_keys=False))
        plan = load_plan(plan_path)
        engine = make_engine(db_url)
        contexts = [load_context(plan, t) for t in plan.tasks]
        now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        start = now - timedelta(hours=rounds)
        clock, rng = _Clock(start), random.Random(3)
        channels = build_channels(plan)
        policy = DeliveryPolicy(max_attempts=1, rng=random.Random(0))
        for _ in range(rounds):
            for ctx in contexts:
                run_task_probe(engine, plan, ctx, rng=rng, now=clock)
            deliver_due(engine, channels, clock, policy)
            clock.t += timedelta(hours=1)
        reevaluate_pending(engine, plan, contexts[0], now=clock)  # the swap, replayed in full for one task
        record_plan_file(engine, plan_path, "medmon", start)
        with Session(engine) as session:
            _add_helm_baseline(session)
            judged = _add_verdicts(session)
            for run in session.exec(select(ProbeRun).where(col(ProbeRun.id).in_(judged))).all():
                seal_run(session, run, clock(), actor="medmon (test seed: jury verdicts added)")  # evidence changed
            session.commit()
        engine.dispose()
    finally:
        sim.stop()
    return Seeded(plan_path, db_path, db_url, start)


def _add_helm_baseline(session: Session) -> None:
    """A baseline as `medmon baseline import` stores it from a HELM run: files and their SHA-256."""
    record_baseline(
        session,
        BaselineFigures(
            benchmark="head_qa",
            model="openai/gpt-4o-2024-05-13",
            metric="exact_match",
            value=0.83,
            n=1000,
            source_kind="helm",
            source_path="benchmark_output/runs/v2.0.0/head_qa:model=openai_gpt-4o",
            source_sha256="3f1c" + "0" * 60,
            suite="v2.0.0",
            rescored_value=0.81,
            rescored_n=994,
            rescored_unparsed=6,
            disagreements=31,
            compared=1000,
            source_files={"run_spec.json": "a1" * 32, "stats.json": "b2" * 32, "scenario_state.json": "c3" * 32},
        ),
    )


def _add_verdicts(session: Session) -> set[int]:
    """Three judges on the latest knowledge answers, as the jury stores them: a call per judge with
    its own cost, a verdict per criterion, and the answer's agreement; a few calls unparsed."""
    results = session.exec(
        select(ProbeResult)
        .where(ProbeResult.task_id == "knowledge-qa")
        .order_by(col(ProbeResult.id).desc())
        .limit(JUDGED)
    ).all()
    for i, r in enumerate(results):
        assert r.id is not None
        base = 5 if r.correct else 2
        scores: list[int] = []
        for j, judge in enumerate(JUDGES):
            unread = judge == "judge-c" and i % 20 == 0
            status = ParseStatus.unparsed if unread else ParseStatus.ok
            call = JudgeCall(
                result_id=r.id,
                task_id=r.task_id,
                judge=judge,
                model=f"medmon-simulator/{judge}",
                parse_status=status,
                asks=2 if unread else 1,
                attempts=2 if unread else 1,
                prompt_tokens=420,
                completion_tokens=60,
                cost_usd=0.0004,
                error="no JSON object in the judge's answer" if unread else None,
                created_at=r.created_at,
            )
            session.add(call)
            session.flush()
            assert call.id is not None
            score = None if unread else max(1, base - int(j == 2 and i % 3 == 0))
            if score is not None:
                scores.append(score)
            session.add(
                JuryVerdict(
                    result_id=r.id,
                    call_id=call.id,
                    task_id=r.task_id,
                    judge=judge,
                    criterion="accuracy",
                    score=score,
                    parse_status=status,
                    explanation=None if unread else "Matches the reference.",
                    created_at=r.created_at,
                )
            )
        pairs = [(a, b) for k, a in enumerate(scores) for b in scores[k + 1 :]]
        r.jury_mean = sum(scores) / len(scores)
        r.jury_judges = len(scores)
        r.jury_agreement = 1 - sum(abs(a - b) for a, b in pairs) / len(pairs) / 4 if pairs else None
        r.jury_unanimous = len(set(scores)) == 1
        session.add(r)
    session.flush()
    return {r.run_id for r in results}


@contextmanager
def copy_seeded(seeded: Seeded, folder: Path) -> Iterator[Seeded]:
    """A private copy of the seeded database (tests change it): a file copy on SQLite, a database
    made from it as template on PostgreSQL (dropped afterwards). The plan file is copied unchanged,
    so point ``MEDMON_DATABASE_URL`` at the copy (as `medmon dashboard` does)."""
    folder.mkdir(parents=True, exist_ok=True)
    plan_path = folder / "plan.yaml"
    shutil.copyfile(seeded.plan_path, plan_path)
    db_path = folder / "dash.db"
    if seeded.db_url.startswith("postgresql"):
        with fresh_postgres_database("medmon_dash", template=seeded.db_url) as url:
            yield Seeded(plan_path, db_path, url, seeded.start)
        return
    shutil.copyfile(seeded.db_path, db_path)
    yield Seeded(plan_path, db_path, f"sqlite:///{db_path}", seeded.start)
