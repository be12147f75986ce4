"""``medmon drift report|list``, the service's periodic report job and its plan field."""

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
from medmon.monitor.cli.app import app
from medmon.monitor.detection.reports import RenderedReport, report_shortfall
from medmon.monitor.errors import PlanError
from medmon.monitor.models import DriftReport
from medmon.monitor.plan.model import Plan
from medmon.monitor.service.scheduler import build_service_scheduler, drift_report_job
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult, ProbeRun
from tests.conftest import plan_dict

runner = CliRunner(env={"COLUMNS": "220"})
T0 = datetime(2026, 11, 1, tzinfo=UTC)
TASK = "knowledge-qa"


def seed(engine: Engine, task_id: str, runs: int, longer_from: int, failed_per_run: int = 0) -> None:
    """``runs`` runs of 20 answers; from run ``longer_from`` on, outputs are four times longer."""
    rng = random.Random(1)
    with session_scope(engine) as s:
        for i in range(runs):
            run = ProbeRun(task_id=task_id, started_at=T0 + timedelta(hours=i))
            s.add(run)
            s.flush()
            assert run.id is not None
            for _ in range(20):
                tokens = rng.randint(40, 60) * (4 if i >= longer_from else 1)
                s.add(
                    ProbeResult(
                        run_id=run.id,
                        task_id=task_id,
                        canary_id=f"c{rng.randint(0, 39)}",
                        score=float(rng.random() < 0.8),
                        completion_tokens=tokens,
                        cost_usd=tokens * 15e-6,
                        latency_s=rng.uniform(0.5, 1.5),
                        created_at=T0 + timedelta(hours=i),
                    )
                )
            for _ in range(failed_per_run):
                s.add(
                    ProbeResult(
                        run_id=run.id,
                        task_id=task_id,
                        canary_id="c0",
                        error_type="timeout",
                        created_at=T0 + timedelta(hours=i),
                    )
                )


def fake_render(reference: dict[str, list[float]], current: dict[str, list[float]]) -> RenderedReport:
    """Stands in for evidently (seconds to import): flags output length when its mean moved."""
    ref, cur = reference["output_tokens"], current["output_tokens"]
    moved = abs(sum(cur) / len(cur) - sum(ref) / len(ref)) > 10
    summary = {
        "output_tokens": {"method": "ks", "p_value": 1e-9 if moved else 0.5, "threshold": 0.05, "drift": moved},
        "latency_s": {"method": "ks", "p_value": 0.4, "threshold": 0.05, "drift": False},
    }
    return RenderedReport(
        f"<html><body>rows {len(ref)}/{len(cur)}</body></html>",
        '{"metrics": []}',
        ["output_tokens", "latency_s"],
        ["output_tokens"] if moved else [],
        summary,
    )


@pytest.fixture
def plan_file(tmp_path: Path, db_url: str) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(storage={"url": db_url})))
    return path


@pytest.fixture
def fast_render(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("medmon.monitor.detection.reports.render_drift_report", fake_render)


def drift(*args: str) -> Any:
    return runner.invoke(app, ["drift", *args])


def test_report_is_stored_written_and_listed(
    plan_file: Path, engine: Engine, tmp_path: Path, fast_render: None
) -> None:
    seed(engine, TASK, runs=30, longer_from=20, failed_per_run=2)
    out = tmp_path / "out" / "report.html"
    made = drift("report", str(plan_file), "--task", TASK, "--output", str(out), "--json")
    assert made.exit_code == 0, made.output
    body = json.loads(made.stdout)
    assert body["task"] == TASK and body["drifted"] == ["output_tokens"] and body["html"] == str(out)
    assert (body["reference"]["n"], body["current"]["n"]) == (200, 200)  # failed answers are not counted
    assert body["reference"]["from"].startswith("2026-11-01T00:00") and body["current"]["to"].startswith(
        "2026-11-02T05"
    )
    assert {c["column"]: c["drift"] for c in body["columns"]} == {"output_tokens": True, "latency_s": False}
    assert out.read_text("utf-8") == "<html><body>rows 200/200</body></html>"
    assert "comparing the first 200 answers" in made.stderr and "wrote" in made.stderr
    with Session(engine) as s:
        (row,) = s.exec(select(DriftReport)).all()
    assert row.id == body["id"] and row.html == out.read_text("utf-8")

    listed = drift("list", str(plan_file), "--json")
    assert listed.exit_code == 0, listed.output
    (item,) = json.loads(listed.stdout)
    assert item["id"] == body["id"] and item["drifted"] == ["output_tokens"]
    text = drift("list", str(plan_file))
    assert text.exit_code == 0 and TASK in text.stdout and "drifted: output_tokens" in text.stdout


def test_report_in_words_names_each_column(plan_file: Path, engine: Engine, fast_render: None) -> None:
    seed(engine, TASK, runs=20, longer_from=99)
    made = drift("report", str(plan_file), "--task", TASK, "--window", "100")
    assert made.exit_code == 0, made.output
    assert "drifted: none" in made.stdout and "output_tokens" in made.stdout and "DRIFT" not in made.stdout


def test_unknown_task_exits_2_naming_the_tasks(plan_file: Path, engine: Engine) -> None:
    result = drift("report", str(plan_file), "--task", "nope")
    assert result.exit_code == 2
    assert "task 'nope' is not in" in result.stderr and TASK in result.stderr


def test_too_few_answers_exits_2_saying_how_many(plan_file: Path, engine: Engine) -> None:
    seed(engine, TASK, runs=15, longer_from=99, failed_per_run=3)
    result = drift("report", str(plan_file), "--task", TASK)
    assert result.exit_code == 2
    assert "has 300 successful answers" in result.stderr and "needs 400" in result.stderr
    small = drift("report", str(plan_file), "--task", TASK, "--window", "10")
    assert small.exit_code == 2 and "window 10 is too small" in small.stderr
    with Session(engine) as s:
        assert s.exec(select(DriftReport)).all() == []


def test_bad_plan_and_empty_list(plan_file: Path, tmp_path: Path, engine: Engine) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ntasks: nope\n")
    assert drift("report", str(bad), "--task", TASK).exit_code == 2
    empty = drift("list", str(plan_file))
    assert empty.exit_code == 0 and empty.stdout == "" and "no drift report stored yet" in empty.stderr
    assert json.loads(drift("list", str(plan_file), "--json").stdout) == []


def test_report_job_stores_one_per_ready_task_and_skips_the_rest(
    engine: Engine, make_plan: Callable[..., Plan], fast_render: None
) -> None:
    second = dict(plan_dict()["tasks"][0], id="dose-calc")
    plan = make_plan(tasks=[plan_dict()["tasks"][0], second], detection={"drift_report_window": 100})
    seed(engine, TASK, runs=12, longer_from=6)
    seed(engine, "dose-calc", runs=3, longer_from=99)
    drift_report_job(engine, plan, lambda: T0 + timedelta(days=2))
    with Session(engine) as s:
        rows = s.exec(select(DriftReport)).all()
        assert report_shortfall(s, "dose-calc", 100) is not None
    assert [(r.task_id, r.drifted, r.n_reference, r.created_at.replace(tzinfo=UTC)) for r in rows] == [
        (TASK, ["output_tokens"], 100, T0 + timedelta(days=2))
    ]


@pytest.mark.parametrize(("every", "expected"), [("1d", 86400.0), ("6h", 21600.0), (None, None)])
def test_service_scheduler_has_the_report_job_the_plan_asks_for(
    db_url: str, make_plan: Callable[..., Plan], every: str | None, expected: float | None
) -> None:
    plan = make_plan(detection={"drift_report_every": every}, storage={"url": db_url})
    eng = make_engine(db_url)
    scheduler = build_service_scheduler(eng, plan, "drift-test", {})
    try:
        job = scheduler.get_job("drift-reports", jobstore="local")
        if expected is None:
            assert job is None
        else:
            assert job is not None and job.trigger.interval.total_seconds() == expected
            assert job.trigger.start_date == datetime(2000, 1, 1, tzinfo=UTC)  # the same grid every restart
    finally:
        scheduler.shutdown(wait=False)
        eng.dispose()


@pytest.mark.parametrize("every", ["10s", "daily"])
def test_plan_rejects_a_bad_report_interval(make_plan: Callable[..., Plan], every: str) -> None:
    with pytest.raises(PlanError, match="drift_report_every"):
        make_plan(detection={"drift_report_every": every})


@pytest.mark.slow
def test_evidently_report_flags_longer_outputs_through_the_cli(plan_file: Path, engine: Engine, tmp_path: Path) -> None:
    seed(engine, TASK, runs=30, longer_from=20)
    out = tmp_path / "report.html"
    made = drift("report", str(plan_file), "--task", TASK, "--output", str(out), "--json")
    assert made.exit_code == 0, made.output
    body = json.loads(made.stdout)
    assert set(body["drifted"]) == {"output_tokens", "cost_usd"}  # latency and score did not move
    p = {c["column"]: c["p_value"] for c in body["columns"]}
    assert p["output_tokens"] < 0.05 < p["latency_s"]
    assert "<html" in out.read_text("utf-8").lower()


@pytest.mark.slow
def test_evidently_report_notes_what_it_cannot_compare_and_a_constant_that_jumped(
    plan_file: Path, engine: Engine, tmp_path: Path
) -> None:
    """The demo's cost rise: every answer 1 token, then every answer 401; no price, so no cost at all."""
    rng = random.Random(2)
    with session_scope(engine) as s:
        for i in range(20):
            run = ProbeRun(task_id=TASK, started_at=T0 + timedelta(hours=i))
            s.add(run)
            s.flush()
            assert run.id is not None
            for _ in range(20):
                s.add(
                    ProbeResult(
                        run_id=run.id,
                        task_id=TASK,
                        canary_id=f"c{rng.randint(0, 39)}",
                        score=float(rng.random() < 0.8),
                        completion_tokens=1 if i < 10 else 401,
                        cost_usd=None,
                        latency_s=rng.uniform(0.5, 1.5),
                        created_at=T0 + timedelta(hours=i),
                    )
                )
    out = tmp_path / "report.html"
    made = drift("report", str(plan_file), "--task", TASK, "--window", "100", "--output", str(out), "--json")
    assert made.exit_code == 0, made.output
    body = json.loads(made.stdout)
    tokens = next(c for c in body["columns"] if c["column"] == "output_tokens")
    assert tokens["drift"] is True and "output_tokens" in body["drifted"]
    assert "1 → 401" in tokens["note"]
    assert {c["column"] for c in body["columns"]} == {"output_tokens", "latency_s", "score"}
    assert body["not_compared"] == [
        {
            "column": "cost_usd",
            "why": "not compared: no values in either window (a KS test needs 30 in each); the plan sets no price",
        }
    ]
    page = out.read_text("utf-8")
    assert 'id="medmon-notes"' in page and "the plan sets no price" in page and "1 → 401" in page
    text = drift("report", str(plan_file), "--task", TASK, "--window", "100")
    assert text.exit_code == 0, text.output
    assert "output_tokens" in text.stdout and "DRIFT" in text.stdout and "cost_usd" in text.stdout
    assert "no values in either window" in text.stdout
