"""From ``medmon init`` to the clinician scale: the plan the CLI writes, its endpoints (model and judges) pointed at
the simulator over HTTP and its database at the test's, checked by ``medmon check``; its jury-scored task probed
through the real pipeline for two weeks, a clinician rating what the queue drew (``record_review``), and
``medmon oversight clinician-scale`` reading one stream per rubric criterion of the jury-scored task only."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.db import session_scope
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.cli.app import app as cli
from medmon.monitor.governance.clinician_scale import stream_key
from medmon.monitor.governance.review import record_review
from medmon.monitor.models import DetectorState, ReviewItem
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import load_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.packs import load_pack
from medmon.probes.simulator import SIMULATOR_MODEL, Phase, create_simulator
from tests.probes.simkit import JUDGE_MODELS

START = datetime(2026, 11, 2, 6, tzinfo=UTC)  # a Monday
TASK = "discharge-instructions"


def _init_plan(tmp_path: Path, url: str, db_url: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``medmon init``'s plan with its endpoints at the simulator and its database at ``db_url``."""
    path = tmp_path / "plan.yaml"
    runner = CliRunner()
    assert runner.invoke(cli, ["init", str(path)]).exit_code == 0
    data = yaml.safe_load(path.read_text())
    data["deployment"] |= {"base_url": f"{url}/v1", "model": SIMULATOR_MODEL, "max_retries": 0}
    for judge, model in zip(data["jury"]["judges"], JUDGE_MODELS, strict=True):
        judge |= {"base_url": f"{url}/v1", "model": model}
    data["storage"]["url"] = db_url
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    for name in ("MEDMON_MODEL_API_KEY", "MEDMON_WEBHOOK_SECRET"):
        monkeypatch.setenv(name, "sk-test")
    monkeypatch.setenv("MEDMON_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    checked = runner.invoke(cli, ["check", str(path), "--require-env"])
    assert checked.exit_code == 0, checked.output
    return path


def test_the_init_plan_watches_its_jury_scored_task_on_the_clinician_scale_per_criterion(
    engine: Engine, db_url: str, serve: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = create_simulator(load_pack("discharge_instructions").canaries, [Phase(0, accuracy=0.95)], seed=5)
    path = _init_plan(tmp_path, serve(sim).url, db_url, monkeypatch)
    plan = load_plan(path)
    assert plan.oversight.review.selection == "active" and plan.jury is not None
    task = next(t for t in plan.tasks if t.id == TASK)
    ctx = load_context(plan, task)
    rng, ratings = random.Random(1), random.Random(2)
    now = START
    for _ in range(16):  # two weeks, 8 probes a week
        run_task_probe(engine, plan, ctx, rng=rng, now=lambda t=now: t)
        with session_scope(engine) as s:
            oversight_pass(s, plan, now + timedelta(minutes=1))
        with session_scope(engine) as s:
            for item in s.exec(select(ReviewItem).where(ReviewItem.status == "open")).all():
                assert item.task_id == TASK  # the knowledge task was not probed here
                scores = {c: ratings.choice((4, 5, 5)) for c in plan.jury.criteria}
                record_review(
                    s, plan, item_id=item.id or 0, reviewer=item.reviewer, scores=scores, note="",
                    safety_concern=False, actor=item.reviewer, now=now + timedelta(hours=3),
                )  # fmt: skip
        now += timedelta(hours=21)
    with session_scope(engine) as s:
        oversight_pass(s, plan, now + timedelta(days=7))  # the last week closes and is streamed
    with Session(engine) as s:
        streams = {c: s.get(DetectorState, stream_key(TASK, c)) for c in plan.jury.criteria}
        drawn = s.exec(select(ReviewItem)).all()
    assert set(streams) == {"accuracy", "completeness", "clarity"}
    assert all(st is not None and st.n > 100 for st in streams.values())  # every criterion's stream ran
    assert drawn and all(i.inclusion_probability is not None and i.inclusion_probability >= 0.05 for i in drawn)
    shown = CliRunner().invoke(cli, ["oversight", "clinician-scale", str(path), "--json"])
    assert shown.exit_code == 0, shown.output  # no alarm: clinicians rate the answers 4-5
    rows = json.loads(shown.output)["tasks"]
    assert [(r["task_id"], r["criterion"]) for r in rows] == [(TASK, c) for c in plan.jury.criteria]
    assert all(r["ratings"] > 0 and r["clinician"] is not None and r["medhelm_icc"] == 0.47 for r in rows)
