"""What applies to a task is resolved once: an unapproved threshold edit is shown as proposed on every
surface (page, report, alert, ``medmon check``) while the approved value judges; reading never pins."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, func, select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from medmon.baselines import BaselineFigures, record_baseline
from medmon.monitor.cli.app import app
from medmon.monitor.governance.effective import effective_task
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.render import render_committee
from medmon.monitor.models import BaselinePin
from medmon.monitor.plan.context import load_context, probe_baseline
from medmon.monitor.plan.model import load_plan
from medmon.monitor.read import baseline_band, task_overview
from medmon.monitor.storage import make_engine
from tests.conftest import plan_dict
from tests.dashboards.conftest import open_page, seeded, seeded_engine, seeded_master  # noqa: F401 (fixtures)
from tests.dashboards.seed import Seeded
from tests.signing import register_owner

runner = CliRunner()
OWNER = "owner@hospital.example"


def _edit_min_score(path: Path, task_id: str, value: float) -> None:
    data = yaml.safe_load(path.read_text("utf-8"))
    next(t for t in data["tasks"] if t["id"] == task_id)["thresholds"]["min_score"] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_an_unapproved_minimum_is_shown_as_proposed_on_the_pages_the_report_and_medmon_check(
    seeded: Seeded,  # noqa: F811 (a fixture)
    seeded_engine: Engine,  # noqa: F811
    open_page: Callable[..., AppTest],  # noqa: F811
    tmp_path: Path,
) -> None:
    _edit_min_score(seeded.plan_path, "knowledge-qa", 0.9)  # the approved minimum is 0.7; nobody approved 0.9

    overview = open_page("overview")
    table = next(df.value for df in overview.dataframe if "minimum in force" in df.value.columns)
    rows = {r["task"]: r for r in table.to_dict("records")}
    assert rows["knowledge-qa"]["minimum in force"] == 0.7 and rows["knowledge-qa"]["proposed minimum"] == "0.90"
    assert rows["dose-calc"]["minimum in force"] == 0.6
    warned = "\n".join(str(w.value) for w in overview.warning)
    assert "min_score 0.9 is proposed in the plan file" in warned and "not yet approved" in warned
    assert "0.7 (the first recorded plan's, recorded by" in warned

    task = open_page("task")
    [minimum] = [m for m in task.metric if m.label == "Minimum in force"]
    assert minimum.value == "0.70" and minimum.delta == "proposed 0.90, not approved"
    assert any("min_score 0.9 is proposed in the plan file" in str(w.value) for w in task.warning)

    governance = open_page("governance")
    in_force = next(df.value for df in governance.dataframe if "approval threshold" in df.value.columns)
    assert dict(zip(in_force["task"], in_force["approval threshold"], strict=True)) == {
        "knowledge-qa": 0.7,
        "dose-calc": 0.6,
    }
    assert any("thresholds of knowledge-qa that are not recorded yet" in str(i.value) for i in governance.info)

    data = yaml.safe_load(seeded.plan_path.read_text("utf-8"))  # 'medmon check' wants every task owned
    for t in data["tasks"]:
        t.setdefault("owner", {"name": "Dr. Owner", "email": OWNER})
    seeded.plan_path.write_text(yaml.safe_dump(data, sort_keys=False))
    checked = runner.invoke(app, ["check", str(seeded.plan_path)])  # records the edit: a proposal with who and when
    assert checked.exit_code == 0, checked.output
    [note] = [line for line in checked.output.splitlines() if "min_score" in line]
    assert "min_score 0.9 is proposed by" in note and "not approved" in note
    assert "0.7 (the first recorded plan's, recorded by medmon on" in note and "not yet approved" in note
    assert "stays in force" in note

    out = tmp_path / "report.html"
    made = runner.invoke(app, ["report", str(seeded.plan_path), "--output", str(out), "--no-pdf"])
    assert made.exit_code == 0, made.output
    html = out.read_text("utf-8")
    row = html[html.index('<tr data-task="knowledge-qa">') :]
    row = row[: row.index("</tr>")]
    assert "min 0.700" in row and "proposed, not approved: min_score 0.9" in row
    assert "min 0.900" not in html

    with Session(seeded_engine) as session:  # the read layer says the same
        [qa] = task_overview(session, load_plan(seeded.plan_path), ["knowledge-qa"])
        assert (qa.min_score, qa.proposed_min_score) == (0.7, 0.9)


def test_the_below_minimum_alert_judges_with_the_approved_minimum_and_names_the_proposal(
    tmp_path: Path, db_url: str, serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'medmon probe run' against the simulator: approved 0.99 judges; the proposed 0.3 is named, not used."""
    from medmon.probes.packs import load_pack
    from medmon.probes.simulator import create_simulator

    monkeypatch.setenv("MEDMON_TEST_KEY", "k")
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, seed=5)).url
    data = plan_dict(storage={"url": db_url})
    key = register_owner(data, tmp_path)
    data["deployment"]["base_url"] = f"{sim}/v1"
    data["tasks"][0] |= {"sample_size": 32, "thresholds": {"min_score": 0.99}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    make_engine(db_url).dispose()  # the deployment's database exists: 'medmon check' records the plan in it
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # the go-live plan: 0.99
    _edit_min_score(path, "knowledge-qa", 0.3)
    checked = runner.invoke(app, ["check", str(path), "--json"])
    assert checked.exit_code == 0, checked.output
    notes = json.loads(checked.stdout)["notes"]
    assert any("min_score 0.3 is proposed" in n and "0.99" in n for n in notes), notes

    done = runner.invoke(app, ["probe", "run", str(path), "--json"])
    [run] = json.loads(done.stdout)["runs"]
    assert run["mean_score"] < 0.99
    [alert] = [a for a in run["alerts"] if "below the minimum in force" in a]
    assert "below the minimum in force 0.99," in alert and "(the first recorded plan's" in alert
    assert "not yet approved" in alert
    assert "a plan edit proposes 0.300, not approved" in alert and "approved minimum" not in alert

    approved = runner.invoke(
        app,
        [
            "approvals",
            "thresholds",
            str(path),
            "--task",
            "knowledge-qa",
            "--by",
            OWNER,
            "--reason",
            "alarm fatigue",
            "--committee-decision",
            "minute 7",
            "--key",
            str(key),
        ],
    )
    assert approved.exit_code == 0, approved.output
    engine = make_engine(db_url)
    with Session(engine) as session:  # only now is 0.3 worded "approved", and nothing is proposed
        effective = effective_task(session, load_plan(path), "knowledge-qa")
        assert effective.thresholds.min_score == 0.3 and effective.proposals == ()
        assert effective.in_force_words.startswith(f"approved by {OWNER} on ")
    engine.dispose()


def test_reading_and_reporting_never_pin_a_baseline(tmp_path: Path, db_url: str) -> None:
    data = plan_dict(storage={"url": db_url})
    data["tasks"][0].pop("baseline", None)  # no inline figures: the stored import is found
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    engine = make_engine(db_url)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0
    plan = load_plan(path)
    with Session(engine) as session:
        stored, _ = record_baseline(
            session,
            BaselineFigures(benchmark="med_qa", model="m", metric="exact_match", value=0.8, n=500, source_kind="helm"),
        )
        session.commit()
        effective = effective_task(session, plan, "knowledge-qa")
        assert effective.baseline.baseline is not None and effective.baseline.baseline.id == stored.id
        assert effective.baseline.why == "the task's first probe pins it as the go-live baseline"
        assert effective.thresholds.min_score == 0.7 and effective.proposals == ()
        report = build_committee_report(session, plan, parse_period("2026-11"), now=datetime(2026, 12, 1, tzinfo=UTC))
        html = render_committee(report)
        band = baseline_band(session, plan, "knowledge-qa")
        task_overview(session, plan)
        session.commit()
    assert report.tasks[0].baseline == pytest.approx(0.8) and band is not None and band.value == pytest.approx(0.8)
    assert "0.800" in html
    made = runner.invoke(app, ["report", str(path), "--output", str(tmp_path / "r.html"), "--no-pdf"])
    assert made.exit_code == 0, made.output
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(BaselinePin)).one() == 0
    engine.dispose()


def test_a_baseline_approval_is_held_to_the_approved_minimum_not_to_an_unapproved_edit(
    tmp_path: Path, db_url: str
) -> None:
    data = plan_dict(storage={"url": db_url})
    key = register_owner(data, tmp_path)
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    engine = make_engine(db_url)
    assert runner.invoke(app, ["check", str(path)]).exit_code == 0  # the go-live plan: min_score 0.7
    _edit_min_score(path, "knowledge-qa", 0.95)  # proposed, not approved
    plan = load_plan(path)
    with Session(engine) as session:
        probe_baseline(session, plan, load_context(plan, plan.tasks[0]))  # the first probe pins the pack's card
        stored, _ = record_baseline(
            session,
            BaselineFigures(
                benchmark="med_qa", model="vendor/v2", metric="exact_match", value=0.9, n=1273, source_kind="helm"
            ),
        )
        session.commit()
        baseline_id = stored.id
    done = runner.invoke(
        app,
        [
            "baseline",
            "approve",
            str(path),
            "--task",
            "knowledge-qa",
            "--baseline",
            str(baseline_id),
            "--by",
            OWNER,
            "--reason",
            "vendor's certified figure",
            "--key",
            str(key),
        ],
    )
    assert done.exit_code == 0, done.output  # 0.9 is above the approved 0.7: no committee decision needed
    with Session(engine) as session:
        effective = effective_task(session, plan, "knowledge-qa")
        assert effective.baseline.baseline is not None and effective.baseline.baseline.id == baseline_id
        assert effective.baseline.source == "approved" and effective.proposed("min_score") == 0.95
    engine.dispose()
