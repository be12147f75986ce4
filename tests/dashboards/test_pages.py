"""Every page renders the seeded database with what a governance owner looks for."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select
from streamlit.testing.v1 import AppTest

from medmon.alerts import Alert, Incident, Notification, NotificationStatus, beat
from medmon.alerts.lifecycle import OPEN
from medmon.db import session_scope
from medmon.monitor.alerting.signals import HEARTBEAT
from medmon.monitor.models import BurnIn
from medmon.monitor.read.overview import SCHEDULER_HEARTBEAT
from medmon.probes.models import JudgeCall, ProbeResult
from tests.conftest import plan_dict
from tests.dashboards.conftest import APP
from tests.dashboards.seed import DEAD_ROUTE_URL, Seeded

PAGES = ["overview", "task", "alerts", "costs", "jury", "baselines", "changes", "governance"]


def frame(at: AppTest, column: str) -> pd.DataFrame:
    """The page's table that has ``column`` (tables are found by what they show)."""
    found = [df.value for df in at.dataframe if column in df.value.columns]
    assert len(found) == 1, f"{len(found)} tables have a {column!r} column"
    return found[0]


def _texts(at: AppTest) -> str:
    parts = [
        e.value
        for kind in ("markdown", "caption", "info", "warning", "error", "success", "title", "subheader")
        for e in at.get(kind)
    ]
    return "\n".join(str(p) for p in parts)


def test_overview_puts_degraded_tasks_first_with_their_evidence(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("overview")
    assert any(e.value.startswith("2 task(s) degraded") for e in at.error)  # after the decision block
    table = detail = at.dataframe[0].value  # the figures drawn, every column on demand
    assert set(table["task"]) == {"knowledge-qa", "dose-calc"} and list(detail["task"]) == list(table["task"])
    assert list(table["status"]) == ["degraded", "degraded"]
    assert all(r.startswith(("Score ", "A drift detector found the score")) for r in detail["why"])
    with Session(seeded_engine) as s:
        open_count = dict(
            s.exec(
                select(Incident.task_id, func.count())
                .where(col(Incident.closed_at).is_(None), col(Incident.task_id).in_(list(table["task"])))
                .group_by(Incident.task_id)
            ).all()
        )
    assert dict(zip(detail["task"], detail["open incidents"], strict=True)) == open_count
    assert (table["score now"] < table["baseline"]).all()
    assert dict(zip(table["task"], table["minimum in force"], strict=True)) == {"knowledge-qa": 0.7, "dose-calc": 0.6}
    # What matters first (the browser test checks these are in view at 1,400 px).
    drawn = list(at.dataframe[0].proto.column_order)
    assert drawn == ["task", "status", "score now", "95% CI", "minimum in force", "baseline"]
    assert list(detail.columns[6:8]) == ["owner", "why"]  # on demand: tick a row to read them
    assert any("Tick rows" in c.value and "owner, why" in c.value for c in at.caption)
    assert "SIMULATED" in _texts(at) and "Unauthenticated" in _texts(at)


def test_task_detail_shows_score_band_evidence_slices_and_answers(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("task")
    assert at.selectbox(key="task").value == "knowledge-qa"
    charts = at.get("plotly_chart")
    assert len(charts) == 4  # score, cost and latency, one per subgroup tag
    detectors = frame(at, "progress to alarm")
    score = detectors[detectors["stream"] == "score (drop)"].iloc[0]
    # the score stream is compared with the go-live reference (the seeded probes built it), not the benchmark's 0.85
    assert score["status"] == "degraded" and score["reference"] < score["baseline"]
    with Session(seeded_engine) as s:
        table = s.get(BurnIn, "knowledge-qa").reference
    assert score["baseline"] == pytest.approx(sum(v[1] for v in table.values()) / sum(v[0] for v in table.values()))
    assert score["progress to alarm"] == 1.0  # an alarmed detector is all the way there
    assert at.error[0].value.startswith("**knowledge-qa: degraded**")
    assert at.expander[0].label.startswith("Statistics")
    gaps = frame(at, "gap now")
    assert set(gaps["tag"]) == {"age_band", "sex"}
    answers = frame(at, "judges")
    assert len(answers) == 20
    assert (answers["question"].str.len() > 20).all() and (answers["reference"].str.len() > 0).all()
    assert set(answers["served model"]) == {"medmon-simulator/clinical-v2"}
    assert answers["judges"].str.contains("judge-a/accuracy").sum() == 20  # the seeded jury judged these


def test_task_detail_follows_the_task_chosen(seeded: Seeded, open_page: Callable[..., AppTest]) -> None:
    at = open_page("task")
    at.selectbox(key="task").set_value("dose-calc").run()
    assert not at.exception
    answers = frame(at, "judges")
    assert (answers["canary"].str.startswith("calc-")).all()
    assert set(answers["judges"]) == {"no jury verdict"}
    assert "Pharmacy Lead" in _texts(at)


def test_overview_says_when_the_monitor_service_stopped(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    assert SCHEDULER_HEARTBEAT == HEARTBEAT  # the name the service beats under
    at = open_page("overview")
    assert any(i.value.startswith("The monitor service has not run") for i in at.info)
    with session_scope(seeded_engine) as s:
        beat(s, HEARTBEAT, datetime.now(UTC) - timedelta(hours=2), tolerance=timedelta(minutes=5))
    at.run()
    assert any(e.value.startswith("The monitor service last beat 2 h ago") for e in at.error)
    with session_scope(seeded_engine) as s:
        beat(s, HEARTBEAT, datetime.now(UTC), tolerance=timedelta(minutes=5))
    at.run()
    assert not [e for e in at.error if "monitor service" in e.value]
    assert any(c.value.startswith("Monitor service alive") for c in at.caption)


def test_an_alerts_link_opens_its_task(seeded: Seeded) -> None:
    """Notifications link to ``<dashboard_url>/task?task=<id>``: the page opens on that task."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.query_params["task"] = "dose-calc"
    at.switch_page("views/task.py").run()
    assert not at.exception
    assert at.selectbox(key="task").value == "dose-calc"
    assert (frame(at, "judges")["canary"].str.startswith("calc-")).all()


def test_alerts_page_lists_open_incidents_with_their_signals_and_dead_letters(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("alerts")
    with Session(seeded_engine) as s:
        n_open = s.exec(select(func.count()).select_from(Incident).where(col(Incident.closed_at).is_(None))).one()
        n_alerts = s.exec(select(func.count()).select_from(Alert).where(col(Alert.status).in_(OPEN))).one()
        n_dead = s.exec(
            select(func.count()).select_from(Notification).where(Notification.status == NotificationStatus.dead)
        ).one()
    table = frame(at, "silenced until")
    assert len(table) == n_open > 0
    assert n_alerts > n_open  # several signals of one problem are one incident
    assert table["severity"].iloc[0] == "critical"  # worst first
    assert table["signals"].sum() == n_alerts
    links = table["task page"]
    pooled = table["incident"].str.contains(r"^(?:↳ )?#\d+ category:")  # "#5 category:...: accuracy"
    on_tasks = links[~pooled]
    assert len(on_tasks) >= 2
    assert on_tasks.str.fullmatch(r"\./task\?task=(knowledge-qa|dose-calc)&at=\d{4}-\d\d-\d\dT\d\d%3A\d\d.*").all()
    assert pooled.any() and set(links[pooled]) <= {"./"}  # pooled: shown on the overview
    signals = [df.value for df in at.dataframe if "rule" in df.value.columns]
    assert len(signals) == n_open and sum(len(f) for f in signals) == n_alerts
    dead = frame(at, "last error")
    assert len(dead) == n_dead > 0
    assert set(dead["route"]) == {"pager"} and dead["last error"].str.len().min() > 0
    assert DEAD_ROUTE_URL not in dead.to_string()  # a route's URL never shows


def test_cost_page_keeps_judges_apart_from_the_production_model(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("costs")
    with Session(seeded_engine) as s:
        production = s.exec(select(func.sum(ProbeResult.cost_usd))).one()
        judges = s.exec(select(func.sum(JudgeCall.cost_usd))).one()
        over = s.exec(select(func.count()).select_from(ProbeResult).where(col(ProbeResult.cost_usd) > 0.002)).one()
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["Production model (USD)"]) == pytest.approx(production, abs=1e-4)
    assert float(metrics["Judges (USD)"]) == pytest.approx(judges, abs=1e-4)
    table = frame(at, "judges (USD)")
    assert table["calls over budget"].sum() == over
    assert set(table["within budget"]) == {"NO"}  # the simulated cost rise
    assert len(at.get("plotly_chart")) == 3


def test_jury_page_shows_agreement_judges_and_unparsed_verdicts(
    seeded: Seeded, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("jury")
    alphas = frame(at, "answers")
    assert list(alphas["task"]) == ["knowledge-qa"] and 0 < float(alphas.iloc[0, 1]) <= 1
    unread = frame(at, "asked")
    assert len(unread) == 3 and set(unread["judge"]) == {"judge-c"} and set(unread["status"]) == {"unparsed"}
    assert len(at.get("plotly_chart")) == 2


def test_baselines_page_lists_evidence_with_source_and_sha256(
    seeded: Seeded, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("baselines")
    table = frame(at, "approved by")
    helm = table[table["benchmark"] == "head_qa"].iloc[0]
    assert helm["n"] == 1000 and helm["95% CI"].count("-") == 1
    # The figures lead; where they come from is in the expander's table.
    assert list(table.columns[:7]) == ["benchmark", "task", "model", "metric", "value", "n", "95% CI"]
    sources = frame(at, "source path")
    source = sources[sources["benchmark"] == "head_qa"].iloc[0]
    assert source["source"] == "helm" and source["SHA-256"].startswith("3f1c")
    assert source["category"] == "Clinical Decision Support" and source["unreadable"] == "6"
    # Columns where another baseline has no re-scoring read as text, "—" in that baseline's cell.
    assert (helm["scored by medmon"], helm["HELM vs medmon differ"]) == ("0.810", "3.10%")
    assert "—" in set(table["scored by medmon"])
    assert any("31 of 1000 instances differently (3.1%, above 2%)" in w.value for w in at.warning)
    assert set(table[table["task"] != ""]["task"]) == {"knowledge-qa", "dose-calc"}
    files = [df.value for df in at.dataframe if "file" in df.value.columns]
    assert files and set(files[0]["file"]) == {"run_spec.json", "stats.json", "scenario_state.json"}


def test_model_changes_page_shows_the_silent_swap_and_its_reevaluation(
    seeded: Seeded, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("changes")
    served = frame(at, "before")
    swaps = served[served["before"] != "go-live"]
    assert set(swaps["task"]) == {"knowledge-qa", "dose-calc"}
    assert set(swaps["served model"]) == {"medmon-simulator/clinical-v2"}
    assert at.warning[0].value.startswith("2 change(s)")
    changes = frame(at, "kind").set_index("task")
    assert changes.loc["knowledge-qa", "status"] == "reevaluated" and changes.loc["dose-calc", "status"] == "pending"
    assert changes.loc["knowledge-qa", "verdict"] == "FAILED"  # the swapped model is worse than approved
    reevals = frame(at, "adopted by")
    assert list(reevals["task"]) == ["knowledge-qa"] and reevals["why"][0].startswith("estimate")
    assert float(reevals["score"][0]) < float(reevals["approval threshold"][0])


def test_governance_page_shows_the_plan_as_recorded_and_a_sound_audit_chain(
    seeded: Seeded, open_page: Callable[..., AppTest]
) -> None:
    at = open_page("governance")
    text = _texts(at)
    assert "A wrong answer could lead to a medication error." in text
    assert "pharmacy-lead@hospital.example" in text  # a task owner may act on alerts
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.success[0].value.startswith("Hash chain verified")
    plan_code = at.get("code")[0].value
    assert "min_score: 0.7" in plan_code
    assert DEAD_ROUTE_URL not in plan_code and "•••• (masked)" in plan_code  # webhook URLs can carry tokens
    assert "differs from the plan as recorded" not in text
    assert (
        "names **Dr. Chair**" in text
        and "a statement in the file, not a recorded act" in text
        and "CAIC-2026-14" in text
    )
    assert [w.value for w in at.warning if "go-live" in w.value] == [
        "Go-live not yet approved: no proven go-live approval is recorded"
    ]
    assert "LLM-jury agreement with clinicians is moderate" in text
    thresholds = frame(at, "approval threshold")
    assert list(thresholds["approval threshold"]) == [0.7, 0.6]
    assert list(thresholds["owner"]) == ["Dr. Owner", "Pharmacy Lead"]


def test_governance_page_says_where_the_audit_chain_was_tampered_with(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    with seeded_engine.begin() as conn:
        conn.execute(text("UPDATE auditevent SET actor = 'someone else' WHERE seq = 1"))
    at = open_page("governance")
    assert not at.success or not at.success[0].value.startswith("Hash chain verified")
    problem = at.error[0].value
    assert problem.startswith("The audit log's hash chain does not hold") and "entry seq 1" in problem


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_an_empty_database(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_page: Callable[..., AppTest]
) -> None:
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan_dict(storage={"url": f"sqlite:///{tmp_path / 'empty.db'}"})))
    monkeypatch.setenv("MEDMON_PLAN", str(plan_path))
    monkeypatch.delenv("MEDMON_DATABASE_URL", raising=False)
    at = open_page(page)
    assert at.title[0].value  # the page drew its header and stopped nowhere
    if page == "jury":
        assert at.info[0].value.startswith("No jury configured")
    if page == "overview":  # a task never probed is not a task that holds its baseline
        assert not at.success
        assert at.info[-1].value.startswith("No data yet for 1 of 1 task(s)")
        assert set(at.dataframe[0].value["status"]) == {"no data yet"}
    if page == "task":
        assert at.info[-1].value.startswith("No probe has run for this task yet")
        assert "No probe has run for this task yet" in at.info[0].value
