"""A realistic dashboard database: the real pipeline against the simulator, then a few extras.

Two tasks are probed hour by hour (on a stepped clock) while the SIMULATED model holds its
baseline, then loses accuracy and costs more, then is silently swapped for another version.
The result has runs, scores, detector states, findings, model changes and alerts exactly as
the service writes them; a HELM-style baseline, jury verdicts (where the jury table exists) and
an undeliverable notification are added so every page has something to show.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import Session, col, select

from alerts import DeliveryPolicy, deliver_due
from baselines import BaselineFigures, record_baseline
from monitor.context import load_context
from monitor.pipeline import run_task_probe
from monitor.plan import load_plan
from monitor.routing import build_channels
from monitor.storage import make_engine
from monitor.webserver import serve_in_thread
from probes import models as probe_models
from probes.models import ProbeResult
from probes.packs import load_pack
from probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict

OWNER = "owner@hospital.example"
TECH = "tech@hospital.example"
CALC_OWNER = "pharmacy-lead@hospital.example"
OUTSIDER = "visitor@hospital.example"
ROUNDS = 24
PER_ROUND = 40  # two tasks x 20 canaries
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
        use_case={"name": "Medication knowledge assistant", "risk_tier": "high",
                  "intended_use": "Answer clinicians' pharmacology and dosing questions.",
                  "intended_users": ["hospitalists", "clinical pharmacists"],
                  "workflow": "Advisory; a clinician verifies before acting.",
                  "consequence_of_error": "A wrong answer could lead to a medication error."},
        deployment={"base_url": base_url, "model": "medmon-simulator/clinical-v1", "api_key_env": "MEDMON_TEST_KEY",
                    "price": {"input_per_mtok": 5, "output_per_mtok": 15}, "timeout_s": 5, "max_retries": 0},
        tasks=[
            {"id": "knowledge-qa", "benchmark": "med_qa", "canaries": {"pack": "clinical_knowledge_mcq"},
             "schedule": "1h", "sample_size": 20, "subgroups": ["age_band", "sex"],
             "thresholds": {"min_score": 0.7, "cost_budget_per_call": 0.002, "latency_slo_s": 5}},
            {"id": "dose-calc", "benchmark": "medcalc_bench", "canaries": {"pack": "medical_calculations"},
             "schedule": "1h", "sample_size": 20, "subgroups": ["age_band", "sex"],
             "owner": {"name": "Pharmacy Lead", "email": CALC_OWNER},
             "thresholds": {"min_score": 0.6, "cost_budget_per_call": 0.002, "latency_slo_s": 5}},
        ],
        alerts={"routes": [{"name": "pager", "url": DEAD_ROUTE_URL}], "repeat_interval": "4h"},
        detection={"probes_between_false_alarms": 500},
        storage={"url": db_url},
    )


def _phases() -> list[Phase]:
    return [Phase(0, accuracy=0.9, label="baseline"),
            Phase(10 * PER_ROUND, accuracy=0.45, extra_completion_tokens=400, label="accuracy drop + cost rise"),
            Phase(16 * PER_ROUND, accuracy=0.45, extra_completion_tokens=400, model="medmon-simulator/clinical-v2",
                  fingerprint="fp_sim_0002", label="silent model swap")]


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.t = start

    def __call__(self) -> datetime:
        return self.t


def seed(folder: Path, *, rounds: int = ROUNDS) -> Seeded:
    """Write a seeded database and its plan under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    db_path = folder / "seed.db"
    db_url = f"sqlite:///{db_path}"
    canaries = load_pack("clinical_knowledge_mcq").canaries + load_pack("medical_calculations").canaries
    sim = serve_in_thread(create_simulator(canaries, _phases(), seed=7))
    try:
        plan_path = folder / "plan.yaml"
        plan_path.write_text(yaml.safe_dump(seed_plan(db_url, f"{sim.url}/v1"), sort_keys=False))
        plan = load_plan(plan_path)
        engine = make_engine(db_url)
        contexts = [load_context(plan, t) for t in plan.tasks]
        now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
        start = now - timedelta(hours=rounds)
        clock, rng = _Clock(start), random.Random(3)
        channels = build_channels(plan)
        policy = DeliveryPolicy(max_attempts=1, rng=random.Random(0))
        for _ in range(rounds):
            for ctx in contexts:
                run_task_probe(engine, plan, ctx, rng=rng, now=clock)
            deliver_due(engine, channels, clock, policy)
            clock.t += timedelta(hours=1)
        with Session(engine) as session:
            _add_helm_baseline(session)
            _add_verdicts(session)
            session.commit()
        engine.dispose()
    finally:
        sim.stop()
    return Seeded(plan_path, db_path, db_url, start)


def _add_helm_baseline(session: Session) -> None:
    """A baseline as `medmon baseline import` stores it from a HELM run: files and their SHA-256."""
    record_baseline(session, BaselineFigures(
        benchmark="head_qa", model="openai/gpt-4o-2024-05-13", metric="exact_match", value=0.83,
        n=1000, source_kind="helm", source_path="benchmark_output/runs/v2.0.0/head_qa:model=openai_gpt-4o",
        source_sha256="3f1c" + "0" * 60, suite="v2.0.0",
        source_files={"run_spec.json": "a1" * 32, "stats.json": "b2" * 32, "scenario_state.json": "c3" * 32}))


def _add_verdicts(session: Session) -> None:
    """Three judges' verdicts on the latest knowledge answers, one of them unparsed."""
    table = getattr(probe_models, "JuryVerdict", None)
    if table is None:
        return
    results = session.exec(select(ProbeResult).where(ProbeResult.task_id == "knowledge-qa")
                           .order_by(col(ProbeResult.id).desc()).limit(60)).all()
    for i, r in enumerate(results):
        base = 5 if r.correct else 2
        for j, judge in enumerate(("judge-a", "judge-b", "judge-c")):
            unparsed = judge == "judge-c" and i % 20 == 0
            session.add(table(result_id=r.id, judge=judge, criterion="accuracy",
                              score=None if unparsed else max(1, base - (j == 2 and i % 3 == 0)),
                              parse_status="unparsed" if unparsed else "ok",
                              explanation="The answer is mostly right." if unparsed else "",
                              cost_usd=0.0004))


def copy_seeded(seeded: Seeded, folder: Path) -> Seeded:
    """A private copy of the seeded database (tests change it) with a plan pointing at it."""
    folder.mkdir(parents=True, exist_ok=True)
    db_path = folder / "dash.db"
    shutil.copyfile(seeded.db_path, db_path)
    db_url = f"sqlite:///{db_path}"
    plan_path = folder / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(seed_plan(db_url), sort_keys=False))
    return Seeded(plan_path, db_path, db_url, seeded.start)
