"""Threshold changes are proposals until an owner approves them; until then the approved ones judge."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlmodel import Session
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, list_events, record_plan, verify
from medmon.monitor.governance.effective import threshold_proposals, thresholds_in_force
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.thresholds import approve_thresholds, in_force
from medmon.monitor.plan.model import load_plan, parse_plan
from medmon.monitor.storage import make_engine
from tests.conftest import plan_dict
from tests.signing import SIGNED_IN, make_key

runner = CliRunner()
OWNER = "owner@hospital.example"


def _plan_file(tmp_path: Path, db_url: str, **thresholds: Any) -> Path:
    data = plan_dict(storage={"url": db_url})
    data["tasks"][0]["thresholds"] |= thresholds
    keys = tmp_path / "owner.pub"
    if not keys.exists():  # the owner's signing key, registered beside them in the plan
        keys.write_text(make_key(tmp_path, "id_owner")[1])
    data["owners"]["clinical"]["keys"] = [keys.read_text()]
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _approvals(path: Path, *args: str) -> Any:
    """``medmon approvals``; an approval by the owner is signed with the owner's key."""
    signed = ["--key", str(path.parent / "id_owner")] if args[0] == "thresholds" and OWNER in args else []
    return runner.invoke(app, ["approvals", args[0], str(path), *args[1:], *signed])


def test_an_edited_threshold_is_a_proposal_until_an_owner_approves_it(tmp_path: Path, db_url: str) -> None:
    path = _plan_file(tmp_path, db_url)
    engine = make_engine(db_url)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # records the go-live plan: min_score 0.7
    _plan_file(tmp_path, db_url, min_score=0.8, latency_slo_s=3)  # tighter: an owner may approve alone

    listed = _approvals(path, "list", "--json")
    assert listed.exit_code == 0, listed.output
    pending = {
        (p["task"], p["threshold"]): (p["in_force"], p["proposed"], p["looser"])
        for p in json.loads(listed.output)["thresholds"]
    }
    assert pending == {
        ("knowledge-qa", "min_score"): (0.7, 0.8, False),
        ("knowledge-qa", "latency_slo_s"): (5.0, 3.0, False),
    }

    detection = in_force(engine, load_plan(path))  # what 'medmon serve' and 'medmon worker' judge with
    assert detection.tasks[0].thresholds.min_score == 0.7 and detection.tasks[0].thresholds.latency_slo_s == 5

    refused = _approvals(
        path, "thresholds", "--task", "knowledge-qa", "--by", "someone@else.example", "--reason", "stricter"
    )
    assert refused.exit_code == 2 and "not an owner of task 'knowledge-qa'" in refused.output
    unexplained = _approvals(path, "thresholds", "--task", "knowledge-qa", "--by", OWNER)
    assert unexplained.exit_code == 2 and "needs a rationale" in unexplained.output
    with Session(engine) as session:
        assert thresholds_in_force(session, "knowledge-qa").thresholds["min_score"] == 0.7

    done = _approvals(
        path,
        "thresholds",
        "--task",
        "knowledge-qa",
        "--by",
        OWNER,
        "--reason",
        "local validation supports 0.8",
        "--json",
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["thresholds"]["min_score"] == 0.8
    assert in_force(engine, load_plan(path)).tasks[0].thresholds.min_score == 0.8
    with Session(engine) as session:
        [approval] = list_events(session, kind=AuditKind.threshold_approved)
        assert approval.actor == OWNER and approval.details["reason"] == "local validation supports 0.8"
        assert {(c["threshold"], c["old"], c["new"]) for c in approval.details["changes"]} == {
            ("min_score", 0.7, 0.8),
            ("latency_slo_s", 5.0, 3.0),
        }
        assert threshold_proposals(session) == [] and verify(session).ok
    again = _approvals(path, "thresholds", "--task", "knowledge-qa", "--by", OWNER, "--reason", "again")
    assert again.exit_code == 2 and "no threshold change" in again.output
    engine.dispose()


def test_lowering_the_approval_minimum_needs_a_committee_decision(tmp_path: Path, db_url: str) -> None:
    path = _plan_file(tmp_path, db_url, subgroup_min_score=0.6)
    engine = make_engine(db_url)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    _plan_file(tmp_path, db_url, min_score=0.5, subgroup_min_score=0.4)

    refused = _approvals(path, "thresholds", "--task", "knowledge-qa", "--by", OWNER, "--reason", "too many alarms")
    assert refused.exit_code == 2, refused.output
    assert "below the approval minimum 0.700" in refused.output and "--committee-decision" in refused.output
    with Session(engine) as session:
        assert list_events(session, kind=AuditKind.threshold_approved) == []

    done = _approvals(
        path,
        "thresholds",
        "--task",
        "knowledge-qa",
        "--by",
        OWNER,
        "--reason",
        "too many alarms",
        "--committee-decision",
        "AI committee 2026-11-12, minute 7",
    )
    assert done.exit_code == 0, done.output
    with Session(engine) as session:
        [approval] = list_events(session, kind=AuditKind.threshold_approved)
        assert approval.details["committee_decision"] == "AI committee 2026-11-12, minute 7"
        assert {c["threshold"]: c["looser"] for c in approval.details["changes"]} == {
            "min_score": True,
            "subgroup_min_score": True,
        }
    assert in_force(engine, load_plan(path)).tasks[0].thresholds.min_score == 0.5
    engine.dispose()


def test_a_period_is_judged_by_the_thresholds_in_force_then_and_shows_the_proposal(engine: Any) -> None:
    go_live = yaml.safe_dump(plan_dict())
    edited_data = plan_dict()
    edited_data["tasks"][0]["thresholds"]["min_score"] = 0.9
    edited = yaml.safe_dump(edited_data)
    plan = parse_plan(edited)
    november, december = parse_period("2026-11"), parse_period("2026-12")
    with Session(engine) as session:
        record_plan(session, go_live, "plan.yaml", "tech@hospital.example", datetime(2026, 10, 1, tzinfo=UTC))
        record_plan(session, edited, "plan.yaml", "tech@hospital.example", datetime(2026, 11, 20, tzinfo=UTC))
        session.commit()
        report = build_committee_report(session, plan, november, now=datetime(2026, 12, 2, tzinfo=UTC))
        assert report.tasks[0].min_score == 0.7  # the edit was never approved during November
        [ask] = [d for d in report.decisions_requested if d["kind"] == "threshold change"]
        assert "min_score 0.7 -> 0.9" in ask["ask"] and "0.7 is in force" in ask["ask"]
        with pytest.raises(GovernanceError, match="not an owner"):
            approve_thresholds(
                session,
                plan,
                task_id="knowledge-qa",
                by="tech@hospital.example",
                reason="x",
                now=datetime(2026, 12, 3, tzinfo=UTC),
            )
        approve_thresholds(
            session,
            plan,
            task_id="knowledge-qa",
            by=OWNER,
            reason="validated",
            now=datetime(2026, 12, 3, tzinfo=UTC),
            details=SIGNED_IN,
        )
        session.commit()
        later = datetime(2027, 1, 2, tzinfo=UTC)
        again = build_committee_report(session, plan, november, now=later)
        assert again.tasks[0].min_score == 0.7 and again.sha256 == report.sha256  # November's record is unchanged
        dec = build_committee_report(session, plan, december, now=later)
        assert dec.tasks[0].min_score == 0.9
        assert not [d for d in dec.decisions_requested if d["kind"] == "threshold change"]
        assert any("thresholds approved: min_score 0.7 -> 0.9" in d["what"] for d in dec.decisions)


def test_detection_follows_the_approved_minimum_not_the_edited_file(
    tmp_path: Path, db_url: str, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'medmon probe run' against the simulator: an unapproved 0.99 minimum raises nothing; approved, it fires."""
    from medmon.probes.packs import load_pack
    from medmon.probes.simulator import create_simulator

    monkeypatch.setenv("MEDMON_TEST_KEY", "k")
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, seed=5)).url
    data = plan_dict(storage={"url": db_url})
    data["owners"]["clinical"]["keys"] = [make_key(tmp_path, "id_owner")[1]]
    data["deployment"]["base_url"] = f"{sim}/v1"
    data["tasks"][0] |= {"sample_size": 32, "thresholds": {"min_score": 0.3}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    engine = make_engine(db_url)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    data["tasks"][0]["thresholds"]["min_score"] = 0.99
    path.write_text(yaml.safe_dump(data))
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # records the edit: a proposal

    def probe() -> list[str]:
        done = runner.invoke(app, ["probe", "run", str(path), "--json"])
        [run] = json.loads(done.stdout)["runs"]
        assert run["results"] == 32 and run["mean_score"] < 0.99
        return run["alerts"]

    assert not [a for a in probe() if "below the minimum in force" in a]  # 0.3 is in force
    assert (
        _approvals(
            path, "thresholds", "--task", "knowledge-qa", "--by", OWNER, "--reason", "stricter after validation"
        ).exit_code
        == 0
    )
    assert [
        a for a in probe() if "below the minimum in force 0.99," in a and "(approved by owner@hospital.example" in a
    ]
    engine.dispose()
