"""Re-evaluation after a change: a simulated model swap re-runs the full canary set, and only an
owner can adopt the result as the baseline."""

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
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from medmon.db import session_scope
from medmon.monitor.cli.app import app
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.audit import AuditKind, list_events, verify
from medmon.monitor.governance.changes import pending_changes
from medmon.monitor.governance.reevaluation import approve, compare, reevaluate_pending
from medmon.monitor.models import BurnIn, ChangeRecord, ChangeStatus, Reevaluation, ReevaluationStatus
from medmon.monitor.plan.context import load_context, probe_baseline
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeResult, ProbeRun
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict
from tests.signing import SIGNED_IN, make_key

runner = CliRunner()
OWNER = {"name": "Dr. Owner", "email": "owner@hospital.example"}
V2, FP2 = "medmon-simulator/clinical-v2", "fp_sim_0002"
PACK = load_pack("clinical_knowledge_mcq")


class StepClock:
    def __init__(self) -> None:
        self.t = datetime(2026, 11, 2, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.t

    def tick(self) -> None:
        self.t += timedelta(hours=1)


COMPARISONS = {
    # case: (scores, baseline, min_score, tolerated_drop, passed, conclusive)
    "clear-pass": ([1.0] * 95 + [0.0] * 5, 0.85, 0.7, 0.05, True, True),
    "pass-but-undecided": ([1.0] * 27 + [0.0] * 5, 0.85, 0.7, 0.05, True, False),
    "fails-minimum": ([1.0] * 18 + [0.0] * 14, 0.85, 0.7, 0.05, False, True),
    "fails-tolerated-drop": ([1.0] * 760 + [0.0] * 240, 0.85, 0.6, 0.05, False, True),
    "bounded-scores": ([0.8, 0.9, 0.85, 0.95] * 10, 0.85, 0.7, 0.05, True, True),
    "no-scores": ([], 0.85, 0.7, 0.05, None, None),
}


@pytest.mark.parametrize("case", sorted(COMPARISONS))
def test_comparison_against_baseline_and_thresholds(case: str) -> None:
    scores, baseline, min_score, drop, passed, conclusive = COMPARISONS[case]
    c = compare(scores, baseline, min_score, drop)
    assert (c.passed, c.conclusive) == (passed, conclusive)
    if scores:
        assert c.estimate == pytest.approx(sum(scores) / len(scores))
        assert c.ci_low is not None and c.ci_high is not None and c.ci_low <= c.estimate <= c.ci_high
        assert c.difference == pytest.approx(c.estimate - baseline)


def _plan(sim_url: str, db_url: str, *, governance: bool = True, **thresholds: float) -> Plan:
    data = plan_dict(
        storage={"url": db_url},
        deployment={
            "base_url": f"{sim_url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
            "price": {"input_per_mtok": 5, "output_per_mtok": 15},
        },
    )
    data["tasks"][0]["owner"] = OWNER
    data["tasks"][0]["thresholds"] |= thresholds
    if governance:
        data["governance"] = {"controls": {"reevaluation": {"on_detected_change": True, "repeats": 1}}}
    return parse_plan(yaml.safe_dump(data))


@pytest.fixture
def swap(serve: Callable[..., Any], engine: Engine, db_url: str) -> Callable[..., tuple[Plan, list[Any]]]:
    """Probe hourly against a simulator that swaps to a worse model after 200 requests."""

    def run(*, governance: bool = True, probes: int = 12) -> tuple[Plan, list[Any]]:
        sim = serve(
            create_simulator(
                PACK.canaries,
                [Phase(0, accuracy=0.85), Phase(200, accuracy=0.45, model=V2, fingerprint=FP2, label="swap")],
                seed=4,
            )
        )
        plan = _plan(sim.url, db_url, governance=governance)
        ctx = load_context(plan, plan.tasks[0])
        clock, rng = StepClock(), random.Random(2)
        outcomes = []
        for _ in range(probes):
            outcomes.append(run_task_probe(engine, plan, ctx, rng=rng, now=clock))
            clock.tick()
        return plan, outcomes

    return run


def test_a_model_swap_leads_to_a_reevaluation_of_the_full_canary_set(swap: Callable[..., Any], engine: Engine) -> None:
    plan, outcomes = swap()
    triggered = [o for o in outcomes if o.reevaluation_id is not None]
    # Its 200th request met the new model: one answer of twenty is not yet a real share of
    # traffic (a pool may serve a stray answer); the next run, all new, records the change.
    assert len(triggered) == 1 and outcomes.index(triggered[0]) == 10
    with Session(engine) as session:
        change = session.exec(select(ChangeRecord)).one()
        row = session.get(Reevaluation, triggered[0].reevaluation_id)
        assert row is not None
        run = session.get(ProbeRun, row.run_id)
        mean, count, cost = session.exec(
            select(func.avg(ProbeResult.score), func.count(ProbeResult.score), func.sum(ProbeResult.cost_usd)).where(
                ProbeResult.run_id == row.run_id
            )
        ).one()
        purposes = dict(session.exec(select(ProbeRun.purpose, func.count()).group_by(ProbeRun.purpose)).all())
        kinds = [(e.kind, e.actor) for e in list_events(session)]
        assert verify(session).ok
    assert (change.kind, change.source, change.status) == ("model", "detected", ChangeStatus.reevaluated)
    assert change.reevaluation_id == row.id and change.details["served_model"] == V2
    replayable = sum(c.replayable for c in PACK.canaries)
    assert run is not None and run.purpose == "reevaluation" and run.n_canaries == replayable
    assert row.n == count == replayable and row.n_errors == 0
    assert row.estimate == pytest.approx(mean)
    assert row.baseline_value == pytest.approx(0.85) and row.served_model == V2 and row.system_fingerprint == FP2
    assert row.passed is False and row.conclusive is True  # 45% accurate against a 70% minimum
    assert row.cost_usd is not None and row.cost_usd > 0 and row.cost_usd == pytest.approx(cost)
    assert purposes == {"scheduled": 12, "reevaluation": 1}
    assert ("model_change", "medmon") in kinds and ("reevaluation", "medmon") in kinds


def test_only_an_owner_can_adopt_a_reevaluation_as_baseline(swap: Callable[..., Any], engine: Engine) -> None:
    plan, outcomes = swap()
    rid = next(o.reevaluation_id for o in outcomes if o.reevaluation_id)
    now = datetime(2026, 11, 3, tzinfo=UTC)
    with session_scope(engine) as session:
        with pytest.raises(
            GovernanceError,
            match="tech@hospital.example is not an owner of task 'knowledge-qa'; "
            "approval needs one of: owner@hospital.example",
        ):
            approve(session, plan, reevaluation_id=rid, task_id="knowledge-qa", by="tech@hospital.example", now=now)
        with pytest.raises(GovernanceError, match="needs a rationale"):
            approve(session, plan, reevaluation_id=rid, task_id="knowledge-qa", by="owner@hospital.example", now=now)
        # a failed re-evaluation below the approval minimum: an owner's say-so is not enough
        with pytest.raises(
            GovernanceError,
            match="below the approval minimum 0.700 of task 'knowledge-qa': "
            "approving it needs the committee's decision",
        ):
            approve(
                session,
                plan,
                reevaluation_id=rid,
                task_id="knowledge-qa",
                by="owner@hospital.example",
                now=now,
                reason="v2 is the contracted model",
                details=SIGNED_IN,
            )
        with pytest.raises(GovernanceError, match="is of task 'knowledge-qa', not 'other'"):
            approve(session, plan, reevaluation_id=rid, task_id="other", by="owner@hospital.example", now=now)
    with Session(engine) as session:
        before = session.get(BurnIn, "knowledge-qa")
        assert before is not None
        version = before.version
    with session_scope(engine) as session:
        baseline = approve(
            session,
            plan,
            reevaluation_id=rid,
            task_id="knowledge-qa",
            by="Owner@hospital.example",
            now=now,
            reason="v2 is the contracted model; a pharmacist reviews every answer meanwhile",
            committee_decision="AI committee 2026-11-03, minute 4",
            details=SIGNED_IN,
        )
    with Session(engine) as session:  # the adopted model's go-live reference is built from the next probes
        burn = session.get(BurnIn, "knowledge-qa")
        assert burn is not None and burn.version == version + 1 and not burn.complete and burn.instances == {}
    with session_scope(engine) as session:
        row = session.get(Reevaluation, rid)
        assert (
            row is not None
            and row.status == ReevaluationStatus.approved
            and row.approved_by == "Owner@hospital.example"
        )
        current = probe_baseline(session, plan, load_context(plan, plan.tasks[0]))
        approvals = list_events(session, kind=AuditKind.baseline_approved)
        with pytest.raises(GovernanceError, match="already approved"):
            approve(session, plan, reevaluation_id=rid, task_id="knowledge-qa", by="owner@hospital.example", now=now)
    assert (baseline.source_kind, baseline.model, baseline.approved_by) == (
        "reevaluation",
        V2,
        "Owner@hospital.example",
    )
    assert baseline.normalized == pytest.approx(row.estimate) and baseline.n == row.n
    assert current.id == baseline.id  # the task is now compared with the adopted baseline
    assert len(approvals) == 1 and approvals[0].actor == "Owner@hospital.example"
    assert approvals[0].details["reason"].startswith("v2 is the contracted model")
    assert approvals[0].details["committee_decision"] == "AI committee 2026-11-03, minute 4"


def test_without_governance_a_detected_change_waits_for_a_reevaluation(
    swap: Callable[..., Any], engine: Engine
) -> None:
    plan, outcomes = swap(governance=False)
    assert all(o.reevaluation_id is None for o in outcomes)
    with Session(engine) as session:
        assert [c.kind for c in pending_changes(session, "knowledge-qa")] == ["model"]
    done = reevaluate_pending(engine, plan, load_context(plan, plan.tasks[0]), now=lambda: datetime.now(UTC))
    assert done is not None and done.status == ReevaluationStatus.complete
    with Session(engine) as session:
        assert pending_changes(session, "knowledge-qa") == []


def test_declared_change_reevaluates_from_the_cli_and_an_owner_approves(
    serve: Callable[..., Any], engine: Engine, db_url: str, tmp_path: Path
) -> None:
    sim = serve(create_simulator(PACK.canaries, [Phase(0, accuracy=0.9)], seed=8))
    data = yaml.safe_load(
        yaml.safe_dump(
            _plan(sim.url, db_url, min_score=0.6, tolerated_drop=0.2).model_dump(mode="json", exclude_none=True)
        )
    )
    key, public = make_key(tmp_path)
    data["tasks"][0]["owner"]["keys"] = [public]
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    result = runner.invoke(
        app,
        [
            "change",
            "record",
            str(path),
            "--kind",
            "prompt",
            "--task",
            "knowledge-qa",
            "--note",
            "system prompt v3: cite guidelines",
            "--repeats",
            "2",
            "--json",
            "--by",
            "ds-team@hospital.example",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    reevaluation = summary["reevaluations"][0]
    replayable = sum(c.replayable for c in PACK.canaries)
    assert reevaluation["n"] == 2 * replayable and reevaluation["passed"] is True
    bad = runner.invoke(
        app,
        [
            "baseline",
            "approve",
            str(path),
            "--task",
            "knowledge-qa",
            "--reevaluation",
            str(reevaluation["id"]),
            "--by",
            "ds-team@hospital.example",
        ],
    )
    assert bad.exit_code == 2 and "not an owner" in bad.output
    good = runner.invoke(
        app,
        [
            "baseline",
            "approve",
            str(path),
            "--task",
            "knowledge-qa",
            "--reevaluation",
            str(reevaluation["id"]),
            "--by",
            "owner@hospital.example",
            "--json",
            "--reason",
            "prompt v3 keeps accuracy within tolerance",
            "--key",
            str(key),
        ],
    )
    assert good.exit_code == 0, good.output
    assert json.loads(good.stdout)["approved_by"] == "owner@hospital.example"
    listed = json.loads(runner.invoke(app, ["change", "reevaluations", str(path), "--json"]).stdout)
    assert listed[0]["approved_by"] == "owner@hospital.example"
    with Session(engine) as session:
        declared = list_events(session, kind=AuditKind.change_declared)
        change = session.exec(select(ChangeRecord)).one()
    assert declared[0].actor == "ds-team@hospital.example"
    assert declared[0].details["note"] == "system prompt v3: cite guidelines"
    assert (change.kind, change.source, change.status) == ("prompt", "declared", ChangeStatus.reevaluated)


def test_change_record_rejects_unknown_tasks(tmp_path: Path, db_url: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan_dict(storage={"url": db_url})))
    result = runner.invoke(app, ["change", "record", str(path), "--kind", "judge", "--task", "nope", "--note", "x"])
    assert result.exit_code == 2 and "--task: not in" in result.output and "knowledge-qa" in result.output
    engine = make_engine(db_url)
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(ChangeRecord)).one() == 0
    engine.dispose()


def test_a_truncated_or_emptied_audit_log_fails_verify_even_with_a_consistent_head(
    swap: Callable[..., Any], engine: Engine
) -> None:
    """Deleting the newest entries and moving the head back leaves a consistent chain; the records
    those entries covered (an approval, a re-evaluation, a change) still say they are missing."""
    from sqlalchemy import text

    plan, outcomes = swap()
    rid = next(o.reevaluation_id for o in outcomes if o.reevaluation_id)
    with session_scope(engine) as session:
        approve(
            session,
            plan,
            reevaluation_id=rid,
            task_id="knowledge-qa",
            by="owner@hospital.example",
            now=datetime(2026, 11, 3, tzinfo=UTC),
            reason="contracted model; pharmacist review",
            committee_decision="AI committee 2026-11-03, minute 4",
            operator="ops@host via medmon baseline approve",
            details=SIGNED_IN,
        )
        entry = list_events(session, kind=AuditKind.baseline_approved)[0]
        assert verify(session).ok
    assert (
        entry.actor == "owner@hospital.example" and entry.details["operator"] == "ops@host via medmon baseline approve"
    )
    with engine.begin() as conn:
        top = conn.execute(text("SELECT max(seq) FROM auditevent")).scalar_one()
        conn.execute(text("DELETE FROM auditevent WHERE seq = :s"), {"s": top})
        seq, digest = conn.execute(text("SELECT seq, hash FROM auditevent ORDER BY seq DESC LIMIT 1")).one()
        conn.execute(text("UPDATE audithead SET seq = :s, hash = :h"), {"s": seq, "h": digest})
    with Session(engine) as session:
        report = verify(session)
    assert not report.ok and [str(p) for p in report.problems] == [
        f"approval of re-evaluation {rid} has no audit entry: entries were deleted"
    ]
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM auditevent"))
        conn.execute(text("DELETE FROM audithead"))
    with Session(engine) as session:
        report = verify(session)
    assert report.entries == 0 and not report.ok
    problems = " | ".join(str(p) for p in report.problems)
    assert "change" in problems and f"re-evaluation {rid} has no audit entry" in problems


def test_a_malformed_audit_entry_is_named_not_crashed_on(engine: Engine) -> None:
    from sqlalchemy import text

    from medmon.monitor.governance.audit import record

    with session_scope(engine) as session:
        for i in range(3):
            record(
                session,
                AuditKind.plan_change,
                "owner@hospital.example",
                f"plan:{i}",
                {"n": i},
                datetime(2026, 11, 1, tzinfo=UTC),
            )
    with engine.begin() as conn:
        conn.execute(text("UPDATE auditevent SET details = '[1, 2]' WHERE seq = 2"))
    with Session(engine) as session:
        report = verify(session)
    assert not report.ok and str(report.problems[0]).startswith("entry seq 2")
    assert "malformed entry: details of the wrong type" in str(report.problems[0])
