"""Evidence in the chain: an edited, deleted or inserted result makes `medmon audit verify` fail, naming the run.

Real probe runs against the simulator (an OpenAI-compatible HTTP server), stored through the
service's pipeline; the tampering is done with SQL, as someone with database access would.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import load_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.models import ProbeResult, ProbeRun
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict

runner = CliRunner()


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 11, 2, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.t += timedelta(seconds=1)
        return self.t


@pytest.fixture
def probed(tmp_path: Path, engine: Engine, db_url: str, serve: Callable[..., Any]) -> tuple[Path, list[int]]:
    """A plan recorded by `medmon check` and two finished probe runs of its task."""
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(0, accuracy=0.8)], seed=5))
    data = plan_dict(
        storage={"url": db_url},
        deployment={"base_url": f"{sim.url}/v1", "model": "medmon-simulator/clinical-v1", "api_key_env": "X"},
    )
    data["tasks"][0]["sample_size"] = 6
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    plan, clock = load_plan(path), Clock()
    ctx = load_context(plan, plan.tasks[0])
    runs = [run_task_probe(engine, plan, ctx, rng=random.Random(i), now=clock).run_id for i in (1, 2)]
    return path, [r for r in runs if r is not None]


def verify(path: Path) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["audit", "verify", str(path), "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_every_finished_run_is_sealed_and_verifies(probed: tuple[Path, list[int]], engine: Engine) -> None:
    path, runs = probed
    with Session(engine) as session:
        seals = list_events(session, kind=AuditKind.run_sealed)
        stored = session.exec(select(ProbeResult).where(ProbeResult.run_id == runs[0])).all()
    assert [e.details["run_id"] for e in seals] == runs
    assert seals[0].details["n_results"] == len(stored) == 6
    code, report = verify(path)
    assert code == 0 and report["ok"] and report["runs_sealed"] == 2 and report["results_checked"] == 12
    human = runner.invoke(app, ["audit", "verify", str(path)])
    assert "stored results of 2 sealed probe runs (12 results) match their seals" in " ".join(human.output.split())


def _one_result(engine: Engine, run_id: int) -> int:
    with Session(engine) as session:
        first = session.exec(
            select(ProbeResult.id).where(ProbeResult.run_id == run_id).order_by(col(ProbeResult.id))
        ).first()
    assert first is not None
    return first


def test_an_edited_score_fails_verify_naming_the_run_and_the_result(
    probed: tuple[Path, list[int]], engine: Engine
) -> None:
    path, runs = probed
    result_id = _one_result(engine, runs[1])
    with engine.begin() as conn:
        # A wrong answer becomes right, or a right one wrong: one score, nothing else.
        conn.execute(text("UPDATE proberesult SET score = 1.0 - score WHERE id = :i"), {"i": result_id})
    code, report = verify(path)
    assert code == 1 and not report["ok"]
    [problem] = report["problems"]
    assert (
        f"run {runs[1]} of task knowledge-qa" in problem["what"] and f"result(s) {result_id} edited" in problem["what"]
    )
    human = runner.invoke(app, ["audit", "verify", str(path)])
    assert human.exit_code == 1 and "TAMPERED" in human.output and f"run {runs[1]}" in human.output
    html = path.parent / "nov.html"
    made = runner.invoke(app, ["report", str(path), "--period", "2026-11", "--output", str(html), "--no-pdf"])
    assert made.exit_code == 0, made.output
    page = html.read_text("utf-8")
    assert "The audit log or the evidence did not verify" in page and f"run {runs[1]} of task knowledge-qa" in page
    assert "audit log and evidence did not verify" in page  # the board digest


def test_a_deleted_and_an_inserted_result_fail_verify_naming_the_run(
    probed: tuple[Path, list[int]], engine: Engine
) -> None:
    path, runs = probed
    gone = _one_result(engine, runs[0])
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM proberesult WHERE id = :i"), {"i": gone})
    code, report = verify(path)
    assert code == 1 and any(
        f"run {runs[0]} of task knowledge-qa" in p["what"] and f"result(s) {gone} deleted" in p["what"]
        for p in report["problems"]
    )
    with Session(engine) as session:
        template = session.exec(select(ProbeResult).where(ProbeResult.run_id == runs[1])).first()
        assert template is not None
        extra = ProbeResult(**(template.model_dump(exclude={"id"}) | {"score": 1.0}))
        session.add(extra)
        session.commit()
        extra_id = extra.id
    code, report = verify(path)
    assert code == 1 and any(
        f"run {runs[1]} of task knowledge-qa" in p["what"] and f"result(s) {extra_id} inserted" in p["what"]
        for p in report["problems"]
    )


def test_a_run_inserted_after_sealing_began_is_named(probed: tuple[Path, list[int]], engine: Engine) -> None:
    path, runs = probed
    with Session(engine) as session:
        source = session.get(ProbeRun, runs[1])
        assert source is not None
        fake = ProbeRun(**(source.model_dump(exclude={"id"})))
        session.add(fake)
        session.flush()
        for r in session.exec(select(ProbeResult).where(ProbeResult.run_id == runs[1])).all():
            session.add(ProbeResult(**(r.model_dump(exclude={"id"}) | {"run_id": fake.id, "score": 1.0})))
        session.commit()
        fake_id = fake.id
    code, report = verify(path)
    assert code == 1 and any(f"run(s) {fake_id} finished after sealing began" in p["what"] for p in report["problems"])
