"""The governance record: what the committee relies on cannot change behind its back.

Each test reproduces a defect found in an audit against the governance requirements: another
model's import silently becoming a task's baseline, alerts that reach nobody, prompt and
decoding changes that were not changes, and approvals nobody could check.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.db import session_scope
from medmon.monitor.cli.app import app
from medmon.monitor.errors import PlanError
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.governance.changes import list_changes, pending_changes
from medmon.monitor.governance.checks import check_plan
from medmon.monitor.models import ChangeStatus
from medmon.monitor.plan.context import load_context, probe_baseline
from medmon.monitor.plan.model import load_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.models import ProbeRun
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict
from tests.signing import make_key

runner = CliRunner()
OWNER = {"name": "Dr. Owner", "email": "owner@hospital.example"}
ROUTE = {"name": "default", "url": "http://127.0.0.1:9/hook"}


def write(tmp_path: Path, data: dict[str, Any], name: str = "plan.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def refusals(path: Path) -> str:
    with pytest.raises(PlanError) as info:
        check_plan(path)
    return str(info.value)


# Alerts that reach nobody --------------------------------------------------------------------


def test_a_plan_without_routes_is_refused_naming_what_reaches_nobody(tmp_path: Path) -> None:
    data = plan_dict()
    data["alerts"] = {"routes": []}
    found = refusals(write(tmp_path, data))
    assert "alerts.routes" in found
    assert "(knowledge-qa, critical)" in found and "(knowledge-qa, warning)" in found


def test_a_critical_only_route_with_an_unresolved_on_call_route_is_refused(tmp_path: Path) -> None:
    data = plan_dict()
    data["alerts"] = {"routes": [ROUTE | {"name": "pager", "matchers": ["severity=critical"]}]}
    data["owners"]["on_call_route"] = "oncall"  # names no route
    found = refusals(write(tmp_path, data))
    assert "owners.on_call_route" in found and "'oncall'" in found and "pager" in found
    assert "(knowledge-qa, warning)" in found  # the model-swap alert is a warning: it would go nowhere
    assert "(knowledge-qa, critical)" not in found
    data["owners"]["on_call_route"] = "pager"  # unmatched alerts now fall back to the pager route
    check_plan(write(tmp_path, data))
    data["owners"]["on_call_route"] = "oncall"
    data["alerts"]["routes"].append(ROUTE | {"name": "ward", "matchers": ["severity=~warning|info"]})
    check_plan(write(tmp_path, data))


# Another model's baseline silently replacing the task's -----------------------------------------


def test_an_import_for_another_model_does_not_replace_the_task_baseline(
    tmp_path: Path, engine: Engine, db_url: str
) -> None:
    data = plan_dict(storage={"url": db_url})
    data["alerts"]["routes"] = [ROUTE]
    key, public = make_key(tmp_path)
    data["tasks"][0]["owner"] = OWNER | {"keys": [public]}
    path = write(tmp_path, data)
    plan = load_plan(path)
    ctx = load_context(plan, plan.tasks[0])
    with session_scope(engine) as session:
        before = probe_baseline(session, plan, ctx)
    assert before.normalized == pytest.approx(0.85)
    scores = tmp_path / "other.csv"
    scores.write_text("model,benchmark,metric,value,n,source\nother/model-x,med_qa,exact_match,0.99,1273,leaderboard\n")
    assert runner.invoke(app, ["baseline", "import", str(scores), "--db", db_url]).exit_code == 0
    with session_scope(engine) as session:
        after = probe_baseline(session, plan, ctx)
    assert after.id == before.id and after.normalized == pytest.approx(0.85)  # pinned: an import is a proposal

    listed = runner.invoke(app, ["baseline", "proposals", str(path), "--json"])
    assert listed.exit_code == 0, listed.output
    proposals = json.loads(listed.stdout)
    assert [(p["task"], p["model"]) for p in proposals] == [("knowledge-qa", "other/model-x")]
    proposed = proposals[0]["baseline_id"]

    stranger = runner.invoke(
        app,
        [
            "baseline",
            "approve",
            str(path),
            "--task",
            "knowledge-qa",
            "--baseline",
            str(proposed),
            "--by",
            "someone@else.example",
            "--reason",
            "newer figure",
        ],
    )
    assert stranger.exit_code == 2 and "not an owner" in stranger.output
    silent = runner.invoke(
        app,
        [
            "baseline",
            "approve",
            str(path),
            "--task",
            "knowledge-qa",
            "--baseline",
            str(proposed),
            "--by",
            OWNER["email"],
        ],
    )
    assert silent.exit_code == 2 and "rationale" in silent.output
    done = runner.invoke(
        app,
        [
            "baseline",
            "approve",
            str(path),
            "--task",
            "knowledge-qa",
            "--baseline",
            str(proposed),
            "--by",
            OWNER["email"],
            "--reason",
            "vendor's certified figure",
        ],
    )
    assert done.exit_code == 3, done.output  # typed, not proven: recorded as unauthenticated, nothing pinned
    with session_scope(engine) as session:
        assert probe_baseline(session, plan, ctx).id == before.id
    done = runner.invoke(
        app,
        [
            "baseline",
            "approve",
            str(path),
            "--task",
            "knowledge-qa",
            "--baseline",
            str(proposed),
            "--by",
            OWNER["email"],
            "--reason",
            "vendor's certified figure",
            "--key",
            str(key),
        ],
    )
    assert done.exit_code == 0, done.output
    with session_scope(engine) as session:
        assert probe_baseline(session, plan, ctx).id == proposed
    with Session(engine) as session:
        approvals = list_events(session, kind=AuditKind.baseline_approved)
    assert len(approvals) == 1 and approvals[0].actor == OWNER["email"]
    assert approvals[0].details["baseline_id"] == proposed
    assert approvals[0].details["previous_baseline_id"] == before.id
    assert approvals[0].details["reason"] == "vendor's certified figure"


# Prompt and decoding changes are changes -------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = datetime(2026, 11, 2, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.t


def test_a_prompt_or_decoding_change_in_the_plan_opens_a_change_and_a_reevaluation(
    tmp_path: Path, engine: Engine, db_url: str, serve: Callable[..., Any]
) -> None:
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(0, accuracy=0.85)], seed=3))
    data = plan_dict(
        storage={"url": db_url},
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        },
    )
    data["alerts"]["routes"] = [ROUTE]
    data["tasks"][0]["owner"] = OWNER
    data["governance"] = {"controls": {"reevaluation": {"on_plan_change": True, "repeats": 1}}}
    path = write(tmp_path, data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    data["deployment"] |= {"system_prompt": "You are a careful clinical assistant.", "temperature": 0.7}
    write(tmp_path, data)
    result = runner.invoke(app, ["check", str(path)])
    assert result.exit_code == 0, result.output
    with Session(engine) as session:
        pending = pending_changes(session, "knowledge-qa")
        declared = list_events(session, kind=AuditKind.change_declared)
    assert sorted(c.kind for c in pending) == ["decoding", "prompt"]
    assert all(c.source == "plan" for c in pending)
    assert {"deployment.system_prompt", "deployment.temperature"} == {f for c in pending for f in c.details["fields"]}
    assert len(declared) == 2 and all(e.details["plan_sha256"] == declared[0].details["plan_sha256"] for e in declared)

    plan = load_plan(path)
    outcome = run_task_probe(engine, plan, load_context(plan, plan.tasks[0]), rng=random.Random(1), now=Clock())
    assert outcome.reevaluation_id is not None  # the change-control section says: re-evaluate at once
    with Session(engine) as session:
        assert pending_changes(session, "knowledge-qa") == []
        statuses = {c.kind: c.status for c in list_changes(session, task_id="knowledge-qa")}
        prompts = {r.prompt_sha256 for r in session.exec(select(ProbeRun)).all()}
    assert statuses == {"decoding": ChangeStatus.reevaluated, "prompt": ChangeStatus.reevaluated}
    assert len(prompts) == 1 and "" not in prompts  # every run records the prompt it was produced with


def test_a_threshold_edit_is_recorded_as_a_change_not_of_the_deployment(
    tmp_path: Path, engine: Engine, db_url: str
) -> None:
    data = plan_dict(storage={"url": db_url})
    data["alerts"]["routes"] = [ROUTE]
    path = write(tmp_path, data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    data["tasks"][0]["thresholds"]["min_score"] = 0.5
    write(tmp_path, data)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    with Session(engine) as session:
        assert pending_changes(session, "knowledge-qa") == []  # thresholds need approval, not a re-evaluation
        assert len(list_events(session, kind=AuditKind.threshold_change)) == 1
