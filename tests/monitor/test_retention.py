"""Retention: a setting below the regime's floor is refused; a purge is an audit entry and verify still holds.

Real probe runs against the simulator, stored through the service's pipeline; tampering by SQL.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.errors import PlanError
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.governance.retention import purge
from medmon.monitor.plan.model import load_plan
from medmon.probes.models import ProbeResult, ProbeRun
from tests.conftest import plan_dict
from tests.monitor.test_evidence_seals import probed, verify  # noqa: F401  (the fixture)

runner = CliRunner()


def test_a_setting_below_the_floor_is_refused_naming_the_field(tmp_path: Path) -> None:
    data = plan_dict(retention={"regime": "eu", "results": "3000d"})
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    message = str(caught.value)
    assert "retention.results is 3000d" in message and "at least 10 years" in message
    data["retention"] = {"regime": "hipaa", "results": "3000d"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    assert load_plan(path).retention.results == "3000d"


def test_purge_is_recorded_and_verify_still_catches_a_tampered_kept_result(
    probed: tuple[Path, list[int]],  # noqa: F811
    engine: Engine,
) -> None:
    path, runs = probed
    plan = load_plan(path)
    with Session(engine) as session:
        kept = session.get(ProbeRun, runs[1])
        assert kept is not None and kept.finished_at is not None
        later = kept.finished_at + timedelta(days=2190)  # run 1 ended before run 2: only it is past retention
    dry = purge(engine, plan, later, dry_run=True)
    assert dry.run_ids == [runs[0]] and dry.results == 6 and dry.audit_seq is None
    done = purge(engine, plan, later)
    assert done.run_ids == [runs[0]] and done.results == 6
    with Session(engine) as session:
        assert session.get(ProbeRun, runs[0]) is None
        assert not session.exec(select(ProbeResult).where(ProbeResult.run_id == runs[0])).all()
        (entry,) = list_events(session, kind=AuditKind.retention_purge)
        seal = [e for e in list_events(session, kind=AuditKind.run_sealed) if e.details["run_id"] == runs[0]][0]
        kept_result = session.exec(select(ProbeResult.id).where(ProbeResult.run_id == runs[1])).first()
    assert entry.details["run_ids"] == [runs[0]] and entry.details["results"] == 6
    assert entry.details["seal_digests"] == {str(runs[0]): seal.details["digest"]}
    code, report = verify(path)
    assert code == 0 and report["ok"] and report["runs_sealed"] == 1
    with engine.begin() as conn:
        conn.execute(text("UPDATE proberesult SET score = 1.0 - score WHERE id = :i"), {"i": kept_result})
    code, report = verify(path)
    assert code != 0 and f"run {runs[1]}" in json.dumps(report)


def test_cli_dry_run_with_nothing_past_retention(probed: tuple[Path, list[int]]) -> None:  # noqa: F811
    path, _ = probed
    result = runner.invoke(app, ["retention", "purge", str(path), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["run_ids"] == []


def _service_job(engine: Engine, path: Path, at: datetime) -> tuple[Any, Any]:
    """The service's scheduler as ``medmon serve`` builds it, on a clock at ``at``, and its retention job."""
    from medmon.monitor.service.scheduler import build_service_scheduler

    scheduler = build_service_scheduler(engine, load_plan(path), "retention-test", {}, now=lambda: at)
    job = scheduler.get_job("retention", jobstore="local")
    assert job is not None and job.trigger.interval == timedelta(days=1)  # daily, on the same grid every restart
    assert job.trigger.start_date == datetime(2000, 1, 1, tzinfo=UTC)
    return scheduler, job


def test_the_service_purges_daily_what_is_past_retention_and_verify_names_the_runs(
    probed: tuple[Path, list[int]],  # noqa: F811
    engine: Engine,
) -> None:
    path, runs = probed
    with Session(engine) as session:
        kept = session.get(ProbeRun, runs[1])
        assert kept is not None and kept.finished_at is not None
        later = kept.finished_at + timedelta(days=2190)
    scheduler, job = _service_job(engine, path, later)
    try:
        job.func(*job.args)  # as the scheduler fires it
    finally:
        scheduler.shutdown(wait=False)
    with Session(engine) as session:
        assert session.get(ProbeRun, runs[0]) is None and session.get(ProbeRun, runs[1]) is not None
        (entry,) = list_events(session, kind=AuditKind.retention_purge)
    assert entry.details["status"] == "done" and entry.details["run_ids"] == [runs[0]]
    assert entry.actor.endswith("via medmon serve (daily retention purge)")
    code, report = verify(path)
    assert code == 0 and report["runs_purged"] == {str(runs[0]): entry.seq}
    human = " ".join(runner.invoke(app, ["audit", "verify", str(path)]).output.split())
    assert (
        f"purged: 1 sealed run(s) ({runs[0]}) deleted past retention by the purge recorded at audit seq {entry.seq}"
        in (human)
    )
    assert "not tampered with" in human
    out = path.parent / "report.html"
    written = runner.invoke(app, ["report", str(path), "--output", str(out), "--no-pdf"])
    assert written.exit_code == 0, written.output
    page = " ".join(out.read_text("utf-8").split())
    assert 'id="audit-verified"' in page and 'id="audit-purged"' in page
    assert f"1 sealed run(s) ({runs[0]}) deleted past retention by the purge recorded at audit seq {entry.seq}" in page


def test_a_failing_scheduled_purge_is_logged_recorded_and_retried(
    probed: tuple[Path, list[int]],  # noqa: F811
    engine: Engine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path, runs = probed
    with Session(engine) as session:
        kept = session.get(ProbeRun, runs[1])
        assert kept is not None and kept.finished_at is not None
        later = kept.finished_at + timedelta(days=2190)
    with engine.begin() as conn:  # the purge cannot delete what it must: the database refuses
        conn.execute(text("DROP TABLE juryverdict"))
    scheduler, job = _service_job(engine, path, later)
    try:
        with caplog.at_level(logging.ERROR, logger="medmon.scheduler"):
            job.func(*job.args)
        retry = scheduler.get_job("retention-retry", jobstore="local")
        assert retry is not None and retry.func is job.func
        assert timedelta(minutes=59) < retry.trigger.run_date - datetime.now(UTC) <= timedelta(hours=1)
    finally:
        scheduler.shutdown(wait=False)
    with Session(engine) as session:
        assert session.get(ProbeRun, runs[0]) is not None  # nothing went: the purge is one transaction
        (entry,) = list_events(session, kind=AuditKind.retention_purge)
    assert entry.details["status"] == "failed" and entry.details["run_ids"] == []
    assert "juryverdict" in entry.details["error"]
    assert any("retention purge failed (recorded at audit seq" in r.getMessage() for r in caplog.records)
