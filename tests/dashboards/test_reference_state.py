"""A fresh deployment, probed for real a few times, is "building the reference" on every surface,
never green: the drift detectors have no go-live reference to test against yet (issue 31)."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session
from streamlit.testing.v1 import AppTest

from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.render import render_committee
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.read import task_overview
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict

APP = str(Path(__file__).resolve().parents[2] / "dashboards" / "app.py")
START = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=5)


@pytest.fixture
def fresh(
    tmp_path: Path, db_url: str, engine: Engine, serve: Callable[[object], Any], monkeypatch: pytest.MonkeyPatch
) -> Plan:
    """The test plan against the simulator, probed 4 times (80 answers): the reference is incomplete."""
    canaries = load_pack("clinical_knowledge_mcq").canaries
    url = serve(create_simulator(canaries, [Phase(accuracy=0.9)], seed=3)).url
    data = plan_dict(storage={"url": db_url})
    data["deployment"] = {**data["deployment"], "base_url": f"{url}/v1", "api_key_env": "MEDMON_TEST_KEY"}
    monkeypatch.setenv("MEDMON_TEST_KEY", "sk-test")
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("MEDMON_PLAN", str(path))
    monkeypatch.delenv("MEDMON_DATABASE_URL", raising=False)
    plan = load_plan(path)
    ctx = load_context(plan, plan.tasks[0])
    for i in range(4):
        outcome = run_task_probe(engine, plan, ctx, rng=random.Random(i), now=lambda i=i: START + timedelta(hours=i))
        assert outcome.results == 20 and outcome.errors == 0
    return plan


def test_no_surface_is_green_while_the_go_live_reference_is_incomplete(fresh: Plan, engine: Engine) -> None:
    with Session(engine) as s:
        row = task_overview(s, fresh)[0]
    assert row.n == 80 and row.status == "building the reference"
    assert row.reference is not None and row.reference.building and 0 < row.reference.share < 1
    # 80 of the needed answers are in; the rest arrive 20 a run, one run an hour (the plan's schedule).
    assert row.reference.time_left == timedelta(hours=row.reference.runs_left) and row.reference.runs_left >= 1
    assert row.reasons[0].startswith("Building the go-live reference: 80 of ")

    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert not at.success, [s.value for s in at.success]
    assert any(i.value.startswith("Building the go-live reference for 1 of 1 task(s)") for i in at.info)
    assert list(at.dataframe[0].value["status"]) == ["building the reference"]
    at.switch_page("views/task.py").run()
    assert not at.exception
    assert not at.success, [s.value for s in at.success]
    assert any("knowledge-qa: building the reference" in i.value for i in at.info)

    period = parse_period(f"{START:%Y-%m}")
    with Session(engine) as s:
        report = build_committee_report(s, fresh, period, now=START + timedelta(hours=5))
    assert report.digest()["status"] == "building the reference"
    assert [e["status"] for e in report.executive] == ["building the reference"]
    assert any("drift detection is not armed yet" in why for why in report.recommendations[0].reasons)
    html = render_committee(report)
    assert "ON TRACK" not in html and "BUILDING THE REFERENCE" in html
