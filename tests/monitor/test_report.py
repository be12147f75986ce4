"""The committee report and the plan document, from a demo-like run against the simulator.

Its figures are checked against SQL aggregates written independently of the report's queries.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.alerts import Alert, acknowledge, resolve
from medmon.alerts.silences import silence_alert
from medmon.baselines import Baseline
from medmon.db import session_scope
from medmon.monitor.cli.app import app
from medmon.monitor.governance.audit import AuditKind, list_events, record, record_plan
from medmon.monitor.governance.reports.committee import build_committee_report
from medmon.monitor.governance.reports.period import parse_period
from medmon.monitor.governance.reports.render import find_chromium, render_committee
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, load_plan
from medmon.monitor.runs.pipeline import run_task_probe
from medmon.monitor.service.webserver import serve_in_thread
from medmon.monitor.storage import make_engine
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict
from tests.signing import SIGNED_IN, register_owner

runner = CliRunner()
OWNER = {"name": "Dr. Owner", "email": "owner@hospital.example"}
V2 = "medmon-simulator/clinical-v2"
START = datetime(2026, 10, 31, 22, 0, tzinfo=UTC)  # two probes fall in October
NOVEMBER = ("2026-11-01", "2026-12-01")


@dataclass
class DemoRun:
    plan: Plan
    plan_path: Path
    db_url: str
    engine: Engine
    acted_on: int


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, module_db_url: str) -> Iterator[DemoRun]:
    """52 hourly probes: baseline accuracy, a drop after 500 requests, a model swap after 800."""
    folder = tmp_path_factory.mktemp("report")
    sim = serve_in_thread(
        create_simulator(
            load_pack("clinical_knowledge_mcq").canaries,
            [
                Phase(0, accuracy=0.85),
                Phase(500, accuracy=0.55, label="drop"),
                Phase(800, accuracy=0.55, model=V2, fingerprint="fp_sim_0002", label="swap"),
            ],
            seed=21,
        )
    )
    db_url = module_db_url
    data = plan_dict(
        storage={"url": db_url},
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
            "price": {"input_per_mtok": 5, "output_per_mtok": 15},
        },
    )
    register_owner(data, folder)  # the clinical owner's signing key: folder / "id_clinical_owner"
    data["tasks"][0]["owner"] = OWNER
    data["tasks"][0]["subgroups"] = ["age_band", "sex"]
    data["governance"] = {
        "evidence": {"limitations": ["Local questions differ from MedQA items."]},
        "approval": {"approved_by": OWNER, "approved_on": "2026-10-15", "committee": "AI committee"},
    }
    plan_path = folder / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(data, sort_keys=False))
    plan = load_plan(plan_path)
    engine = make_engine(db_url)
    ctx = load_context(plan, plan.tasks[0])
    rng, now = random.Random(5), [START]
    with session_scope(engine) as session:
        record_plan(session, plan_path.read_text(), str(plan_path), "medmon serve", START)
    for _ in range(52):
        run_task_probe(engine, plan, ctx, rng=rng, now=lambda: now[0])
        now[0] += timedelta(hours=1)
    with session_scope(engine) as session:  # what the dashboard does: the action and its audit entry together
        alert = session.exec(select(Alert).order_by(Alert.id)).first()
        assert alert is not None and alert.id is not None
        at = now[0]
        acknowledge(session, alert.id, "owner@hospital.example", "checking the pharmacology answers", at)
        record(
            session,
            AuditKind.alert_acknowledged,
            "owner@hospital.example",
            f"alert:{alert.id}",
            {"note": "checking the pharmacology answers"},
            at,
        )
        resolve(
            session,
            alert.id,
            "owner@hospital.example",
            "vendor rolled back the update",
            None,
            at + timedelta(minutes=90),
        )
        record(
            session,
            AuditKind.alert_resolved,
            "owner@hospital.example",
            f"alert:{alert.id}",
            {"reason": "vendor rolled back the update"},
            at + timedelta(minutes=90),
        )
        others = session.exec(select(Alert).where(Alert.id != alert.id)).all()
        for other in others[:1]:
            assert other.id is not None
            silence_alert(
                session,
                other.id,
                "tech@hospital.example",
                "known vendor issue",
                at + timedelta(days=2),
                at + timedelta(minutes=5),
            )
            record(
                session,
                AuditKind.alert_silenced,
                "tech@hospital.example",
                f"alert:{other.id}",
                {"reason": "known vendor issue"},
                at + timedelta(minutes=5),
            )
        acted_on = alert.id
    yield DemoRun(plan, plan_path, db_url, engine, acted_on)
    engine.dispose()
    sim.stop()


def sql(engine: Engine, query: str, **params: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text(query), params).one()


def expected_evidence(engine: Engine, start: str, end: str) -> dict[str, Any]:
    n, mean = sql(
        engine,
        "SELECT count(r.score), avg(r.score) FROM proberesult r JOIN proberun u ON u.id = r.run_id "
        "WHERE u.purpose <> 'reevaluation' AND r.score IS NOT NULL AND r.created_at >= :s "
        "AND r.created_at < :e",
        s=start,
        e=end,
    )
    runs = sql(
        engine,
        "SELECT count(*) FROM proberun WHERE purpose <> 'reevaluation' AND started_at >= :s AND started_at < :e",
        s=start,
        e=end,
    )[0]
    cost = sql(
        engine,
        "SELECT coalesce(sum(cost_usd), 0) FROM proberesult WHERE created_at >= :s AND created_at < :e",
        s=start,
        e=end,
    )[0]
    reeval_cost = sql(
        engine,
        "SELECT coalesce(sum(r.cost_usd), 0) FROM proberesult r JOIN proberun u "
        "ON u.id = r.run_id WHERE u.purpose = 'reevaluation' AND r.created_at >= :s "
        "AND r.created_at < :e",
        s=start,
        e=end,
    )[0]
    alerts = sql(
        engine, "SELECT count(*) FROM alert WHERE starts_at < :e AND (ends_at IS NULL OR ends_at >= :s)", s=start, e=end
    )[0]
    reevaluations = sql(
        engine, "SELECT count(*) FROM reevaluation WHERE started_at >= :s AND started_at < :e", s=start, e=end
    )[0]
    return {
        "n": n,
        "mean": mean,
        "runs": runs,
        "cost": cost,
        "reeval_cost": reeval_cost,
        "alerts": alerts,
        "reevaluations": reevaluations,
    }


def test_report_figures_match_the_database(demo: DemoRun) -> None:
    want = expected_evidence(demo.engine, *NOVEMBER)
    with Session(demo.engine) as session:
        report = build_committee_report(
            session, demo.plan, parse_period("2026-11"), now=datetime(2026, 12, 1, 9, tzinfo=UTC)
        )
    summary = report.summary()
    task = summary["tasks"][0]
    assert want["runs"] == 50 and want["n"] > 900  # two of the 52 probes were in October
    assert (task["runs"], task["n"]) == (want["runs"], want["n"])
    assert task["estimate"] == pytest.approx(want["mean"])
    assert task["ci_low"] < task["estimate"] < task["ci_high"]
    assert task["baseline"] == pytest.approx(0.85) and task["difference"] == pytest.approx(want["mean"] - 0.85)
    assert task["passed"] is (want["mean"] >= 0.7 and 0.85 - want["mean"] <= 0.05)
    assert summary["cost"]["production_usd"] == pytest.approx(want["cost"])
    assert summary["cost"]["reevaluation_usd"] == pytest.approx(want["reeval_cost"]) and want["reeval_cost"] > 0
    assert summary["cost"]["judge_usd"] is None and summary["cost"]["judge_calls"] == 0  # no jury in this plan
    assert summary["alerts"]["count"] == want["alerts"] > 0
    assert len(summary["reevaluations"]) == want["reevaluations"] == 1
    assert summary["reevaluations"][0]["served_model"] == V2
    assert summary["audit"]["ok"] is True

    html = render_committee(report)
    row = re.search(r'<tr data-task="knowledge-qa">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = dict(re.findall(r'data-field="(\w+)">([^<]*)<', row.group(1)))
    assert int(cells["n"]) == want["n"] and int(cells["runs"]) == want["runs"]
    assert cells["estimate"].startswith(f"{want['mean']:.3f} (")
    assert f"{want['cost']:,.4f}" in re.search(r'id="summary-cost">([^<]*)<', html).group(1)  # type: ignore[union-attr]


def test_report_shows_handling_changes_limitations_and_the_approved_plan(demo: DemoRun) -> None:
    with Session(demo.engine) as session:
        report = build_committee_report(
            session, demo.plan, parse_period("2026-11"), now=datetime(2026, 12, 1, tzinfo=UTC)
        )
    html = render_committee(report)
    acted = next(a for a in report.alerts if a.id == demo.acted_on)
    assert acted.handling[0].startswith("acknowledged by owner@hospital.example at 2026-11-")
    assert acted.handling[1].startswith("resolved by owner@hospital.example")
    assert acted.minutes_to_ack is not None and acted.minutes_to_resolve == acted.minutes_to_ack + 90
    assert "acknowledged by owner@hospital.example" in html and "vendor rolled back the update" in html
    kinds = {d["kind"] for d in report.decisions}
    assert {"alert_acknowledged", "alert_resolved"} <= kinds
    if len(report.alerts) > 1:
        assert report.silences and report.silences[0]["created_by"] == "tech@hospital.example"
    # the model swap: the new identity, the detected change and its re-evaluation
    assert any(m["served_model"] == V2 for m in report.identities)
    assert [(c["kind"], c["source"]) for c in report.changes] == [("model", "detected")]
    assert 'data-reevaluation="1"' in html and V2 in html
    assert "SIMULATED model" in html
    assert "Local questions differ from MedQA items." in report.limitations
    assert any("public benchmark" in item for item in report.limitations)
    assert report.plan_record is not None and report.plan_record["actor"] == "medmon serve"
    assert "min_score: 0.7" in report.plan_record["text"] and "The plan's text names Dr. Owner" in html
    assert "a statement in the file, not a recorded act" in html  # governance.approval is text, not an approval
    assert "Go-live not yet approved: no proven go-live approval is recorded" in html


def test_october_holds_only_the_october_runs(demo: DemoRun) -> None:
    want = expected_evidence(demo.engine, "2026-10-01", "2026-11-01")
    with Session(demo.engine) as session:
        summary = build_committee_report(
            session, demo.plan, parse_period("2026-10"), now=datetime(2026, 11, 1, tzinfo=UTC)
        ).summary()
    assert summary["tasks"][0]["runs"] == want["runs"] == 2
    assert summary["tasks"][0]["n"] == want["n"]
    assert summary["reevaluations"] == [] and summary["model_changes"] == 0


def test_cli_writes_the_report_and_its_json_summary(demo: DemoRun, tmp_path: Path) -> None:
    out = tmp_path / "nov.html"
    result = runner.invoke(
        app, ["report", str(demo.plan_path), "--period", "2026-11", "--output", str(out), "--no-pdf", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    want = expected_evidence(demo.engine, *NOVEMBER)
    assert summary["tasks"][0]["n"] == want["n"] and summary["outputs"] == {"html": str(out), "pdf": None}
    page = out.read_text()
    for heading in (
        "1. Use case and owners",
        "2. Each task",
        "3. Incidents and how they were handled",
        "4. Model changes and re-evaluations",
        "5. Cost",
        "6. Human oversight",
        "7. Limitations of the evidence",
        "8. The monitoring plan as recorded",
        "9. Audit log integrity",
    ):
        assert heading in page
    bad = runner.invoke(app, ["report", str(demo.plan_path), "--period", "2026-13", "--json"])
    assert bad.exit_code == 2 and "month must be 01-12" in bad.output


def test_plan_document_from_the_plan_file(demo: DemoRun, tmp_path: Path) -> None:
    data = yaml.safe_load(demo.plan_path.read_text())
    data["alerts"]["routes"] = [{"name": "pharmacy-oncall", "url": "https://hooks.example/services/s3cr3t-token"}]
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(data))
    out = tmp_path / "plan.html"
    result = runner.invoke(
        app, ["report", str(plan_path), "--plan-document", "--output", str(out), "--no-pdf", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["sha256"] == hashlib.sha256(plan_path.read_bytes()).hexdigest()
    page = out.read_text()
    for step in (
        "Step 1. Intended use",
        "Step 2. MedHELM mapping",
        "Step 3. Benchmark evidence",
        "Step 4. Local validation and thresholds",
        "Step 5. Controls",
    ):
        assert step in page
    assert "Providing Clinical Knowledge Support" in page and "owner@hospital.example" in page
    assert "No local validation is recorded" in page  # the plan states none
    assert "pharmacy-oncall (webhook)" in page and "s3cr3t-token" not in page  # routes by name, never their URL


def test_a_tampered_audit_log_shows_in_the_report(engine: Engine, make_plan: Callable[..., Plan]) -> None:
    at = datetime(2026, 11, 5, tzinfo=UTC)
    with session_scope(engine) as session:
        for i in range(3):
            record(session, AuditKind.alert_acknowledged, "owner@hospital.example", f"alert:{i}", {"note": "ok"}, at)
    with engine.begin() as conn:
        conn.execute(text("UPDATE auditevent SET actor = 'someone-else@hospital.example' WHERE seq = 2"))
    with Session(engine) as session:
        report = build_committee_report(session, make_plan(), parse_period("2026-11"), now=at, plan_text="x")
    html = render_committee(report)
    assert report.audit["ok"] is False and "did not verify" in html and "entry seq 2" in html
    assert "No plan is recorded in the audit log" in html


def test_the_report_masks_urls_as_the_dashboard_does_and_blanks_secrets(
    engine: Engine, make_plan: Callable[..., Plan], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Slack or Teams URL is the credential, and a storage URL carries a password: neither may
    reach paper; nor may an API key that an endpoint echoed into a stored error."""
    from medmon.dashboards.layout import masked_plan

    at = datetime(2026, 11, 5, tzinfo=UTC)
    monkeypatch.setenv("MEDMON_TEST_KEY", "sk-live-PAPERsecret77")
    plan_text = (
        "alerts:\n  routes:\n  - {name: chat, type: slack, url: https://hooks.slack.com/services/T0/B0/TOKEN9}\n"
        "storage:\n  url: postgresql://medmon:DBPASS42@db.internal/medmon\n"
        "deployment:\n  base_url: http://llm.internal/v1\n"
    )
    with session_scope(engine) as session:
        record(
            session,
            AuditKind.alert_acknowledged,
            "owner@hospital.example",
            "alert:1",
            {"note": "endpoint said: invalid key sk-live-PAPERsecret77"},
            at,
        )
    with Session(engine) as session:
        report = build_committee_report(session, make_plan(), parse_period("2026-11"), now=at, plan_text=plan_text)
    html = render_committee(report)
    for secret in ("TOKEN9", "DBPASS42", "sk-live-PAPERsecret77"):
        assert secret not in html
    assert report.plan_record["text"] == masked_plan(plan_text, report.plan)
    assert "http://llm.internal/v1" in html  # the model's address is not a secret
    assert "endpoint said: invalid key ***" in html


def test_the_report_recommends_per_task_by_the_plan_rules_and_groups_alerts_into_incidents(demo: DemoRun) -> None:
    with Session(demo.engine) as session:
        report = build_committee_report(
            session, demo.plan, parse_period("2026-11"), now=datetime(2026, 12, 1, tzinfo=UTC)
        )
    (rec,) = report.recommendations
    task = report.tasks[0]
    # The month's mean mixes the weeks before the drop; the latest answers are under the minimum.
    assert task.ci_high is not None and task.ci_high > task.min_score
    assert rec.action == "suspend" and rec.reasons[0].startswith("at the end of the period the score 0.5")
    assert "latest 200 answers) is below the minimum in force 0.70" in rec.reasons[0]
    assert any(r.startswith("the served model changed") for r in rec.reasons)
    assert {i.cause for i in report.incidents} >= {"accuracy", "model_change"}
    assert sum(i.signals for i in report.incidents) == len(report.alerts) > len(report.incidents)
    html = render_committee(report)
    assert 'data-recommendation="knowledge-qa"' in html and "Committee decision and sign-off" in html
    assert html.index('id="recommendation"') < html.index('id="summary"')  # the decision leads
    assert html.index('id="plan-summary"') < html.index('id="appendix-plan"')  # the plan's YAML is an appendix
    assert report.summary()["recommendations"] == [
        {"task": "knowledge-qa", "action": "suspend", "reasons": list(rec.reasons)}
    ]


@pytest.mark.slow
@pytest.mark.skipif(
    find_chromium() is None or shutil.which("pdftotext") is None,
    reason="no Chromium to print a PDF with, or no pdftotext (poppler-utils) to read it",
)
def test_pdf_has_page_numbers_recommendations_and_a_sign_off_block(demo: DemoRun, tmp_path: Path) -> None:
    out = tmp_path / "nov.html"
    result = runner.invoke(app, ["report", str(demo.plan_path), "--period", "2026-11", "--output", str(out), "--json"])
    assert result.exit_code == 0, result.output
    pdf = Path(json.loads(result.stdout)["outputs"]["pdf"])
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000
    pages = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout.split("\f")
    pages = [p for p in pages if p.strip()]
    total = len(pages)
    assert total >= 3
    for number, page in enumerate(pages, start=1):  # poppler reads the footer Chromium printed on every page
        assert re.search(rf"Page {number} of {total}\s*$", page.rstrip()), page[-300:]
    text = "\n".join(pages)
    assert re.search(r"knowledge-qa\s+Suspend\s+.{0,3}At the end of the period the score", text), text[:3000]
    assert "Committee decision and sign-off" in text and "Clinical owner" in text and "Signature" in text
    assert "Appendix A. The monitoring plan as recorded" in pages[-1] or "Appendix A" in pages[-2]


@pytest.mark.slow
@pytest.mark.skipif(
    find_chromium() is None or shutil.which("pdftotext") is None,
    reason="no Chromium to print a PDF with, or no pdftotext (poppler-utils) to read it",
)
def test_no_printed_page_ends_with_a_heading_and_page_one_is_the_decision(demo: DemoRun, tmp_path: Path) -> None:
    """A heading (with the introduction its section opens with) is never left at a page's foot with its
    content on the next page; page 1 holds the title and the committee's decision, not a cover alone."""
    out = tmp_path / "nov.html"
    result = runner.invoke(app, ["report", str(demo.plan_path), "--period", "2026-11", "--output", str(out)])
    assert result.exit_code == 0, result.output
    headings = {
        html.unescape(re.sub(r"<[^>]+>", "", h)).strip()
        for h in re.findall(r"<h[23][^>]*>(.*?)</h[23]>", out.read_text(), flags=re.S)
    }
    pages = subprocess.run(
        ["pdftotext", "-layout", str(out.with_suffix(".pdf")), "-"], capture_output=True, text=True, check=True
    ).stdout.split("\f")
    pages = [p for p in pages if p.strip()]
    assert "What the committee decides" in pages[0] and "recommendation" in pages[0]
    texts = [[line.strip() for line in page.splitlines() if line.strip()][:-1] for page in pages]  # no footer
    for number, (lines, after) in enumerate(zip(texts, [*texts[1:], []], strict=True), start=1):
        at = [i for i, line in enumerate(lines) if any(line.startswith(h) for h in headings)]
        complete = not after or any(after[0].startswith(h) for h in headings)  # the next page opens a section
        if at and not complete:
            assert len(lines) - at[-1] - 1 >= 4, f"page {number} ends with a heading: {lines[at[-1] :]}"


PERIODS = {
    "month": ("2026-11", "2026-11-01", "2026-12-01"),
    "december": ("2026-12", "2026-12-01", "2027-01-01"),
    "quarter": ("2026-Q4", "2026-10-01", "2027-01-01"),
    "year": ("2026", "2026-01-01", "2027-01-01"),
    "range": ("2026-11-01..2026-11-15", "2026-11-01", "2026-11-16"),
}


@pytest.mark.parametrize("case", sorted(PERIODS))
def test_periods(case: str) -> None:
    label, start, end = PERIODS[case]
    period = parse_period(label)
    assert (period.start.date().isoformat(), period.end.date().isoformat()) == (start, end)
    assert period.start.tzinfo is not None


@pytest.mark.parametrize("bad", ["2026-13", "Nov 2026", "2026-11-15..2026-11-01", "2026-02-30..2026-03-01"])
def test_bad_periods_say_what_is_expected(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_period(bad)


def _edited_plan(demo: DemoRun, folder: Path) -> Path:
    """The plan file as someone edits it after the period, without recording it: looser thresholds."""
    data = yaml.safe_load(demo.plan_path.read_text())
    data["tasks"][0]["thresholds"] |= {"min_score": 0.3, "tolerated_drop": 0.5}
    path = folder / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_past_period_is_judged_by_the_plan_and_baseline_in_force_then(demo: DemoRun, tmp_path: Path) -> None:
    from medmon.monitor.governance.approvals import approve_baseline

    november, october = parse_period("2026-11"), parse_period("2026-10")
    with Session(demo.engine) as session:
        first = build_committee_report(
            session, demo.plan, november, now=datetime(2026, 12, 1, tzinfo=UTC), plan_text=demo.plan_path.read_text()
        )
        first_october = build_committee_report(session, demo.plan, october, now=datetime(2026, 12, 1, tzinfo=UTC))
    assert first.tasks[0].passed is False and first.plan_file_matches is True
    # After the period: the file's thresholds are loosened and another model's figure is imported and approved.
    edited = _edited_plan(demo, tmp_path)
    scores = tmp_path / "other.csv"
    scores.write_text("model,benchmark,metric,value,n,source\nother/model-x,med_qa,exact_match,0.55,1273,x\n")
    assert runner.invoke(app, ["baseline", "import", str(scores), "--db", demo.db_url]).exit_code == 0
    with session_scope(demo.engine) as session:
        proposal = session.exec(select(Baseline).where(Baseline.model == "other/model-x")).one()
        assert proposal.id is not None
        approve_baseline(
            session,
            demo.plan,
            task_id="knowledge-qa",
            baseline_id=proposal.id,
            by="owner@hospital.example",
            reason="figure for the replacement model",
            committee_decision="AI committee, December minutes 3",
            now=datetime(2026, 12, 5, tzinfo=UTC),
            details=SIGNED_IN,
        )
    with Session(demo.engine) as session:
        again = build_committee_report(
            session, load_plan(edited), november, now=datetime(2026, 12, 6, tzinfo=UTC), plan_text=edited.read_text()
        )
        again_october = build_committee_report(
            session, load_plan(edited), october, now=datetime(2026, 12, 6, tzinfo=UTC)
        )
    assert again.summary()["tasks"] == first.summary()["tasks"]  # same estimate, thresholds, baseline, verdict
    assert again.tasks[0].min_score == 0.7 and again.tasks[0].passed is False
    assert again.tasks[0].baseline_id == first.tasks[0].baseline_id != proposal.id
    assert again.plan_file_matches is False and again.plan_recorded is True
    html = render_committee(again)
    assert "differs from the plan in force during this period" in html
    # October closed before any of it: the very same record, so the very same hash.
    assert again_october.sha256 == first_october.sha256 and len(first_october.sha256) == 64


def test_generating_and_signing_a_report_are_audited_with_its_hash(demo: DemoRun, tmp_path: Path) -> None:
    out = tmp_path / "oct.html"
    made = runner.invoke(
        app, ["report", str(demo.plan_path), "--period", "2026-10", "--output", str(out), "--no-pdf", "--json"]
    )
    assert made.exit_code == 0, made.output
    digest = json.loads(made.stdout)["sha256"]
    assert digest in out.read_text()  # the report carries its own hash
    stranger = runner.invoke(
        app,
        [
            "report",
            str(demo.plan_path),
            "--period",
            "2026-10",
            "--output",
            str(out),
            "--no-pdf",
            "--sign",
            "someone@else.example",
            "--hash",
            digest,
        ],
    )
    assert stranger.exit_code == 2 and "may not sign" in stranger.output
    stale = runner.invoke(
        app,
        [
            "report",
            str(demo.plan_path),
            "--period",
            "2026-10",
            "--output",
            str(out),
            "--no-pdf",
            "--sign",
            "owner@hospital.example",
            "--hash",
            "0" * 64,
        ],
    )
    assert stale.exit_code == 2 and "is not this report's hash" in stale.output
    signed = runner.invoke(
        app,
        [
            "report",
            str(demo.plan_path),
            "--period",
            "2026-10",
            "--output",
            str(out),
            "--no-pdf",
            "--sign",
            "owner@hospital.example",
            "--hash",
            digest,
            "--statement",
            "Reviewed at the November committee",
            "--json",
            "--key",
            str(demo.plan_path.parent / "id_clinical_owner"),
        ],
    )
    assert signed.exit_code == 0, signed.output
    summary = json.loads(signed.stdout)
    assert summary["sha256"] == digest
    assert [s["by"] for s in summary["signatures"]] == ["owner@hospital.example"]
    assert "Reviewed at the November committee" in out.read_text()
    with Session(demo.engine) as session:
        generated = list_events(session, kind=AuditKind.report_generated, subject="report:2026-10")
        signs = list_events(session, kind=AuditKind.report_signed, subject="report:2026-10")
    assert {e.details["sha256"] for e in generated} == {digest} and len(generated) == 2  # refusals roll back
    assert len(signs) == 1 and signs[0].actor == "owner@hospital.example" and signs[0].details["sha256"] == digest


def test_the_report_holds_the_sections_a_committee_expects(demo: DemoRun) -> None:
    with Session(demo.engine) as session:
        report = build_committee_report(
            session, demo.plan, parse_period("2026-11"), now=datetime(2026, 12, 1, tzinfo=UTC)
        )
    summary = report.summary()
    assert [e["status"] for e in summary["executive"]] == ["fails thresholds"]
    asks = {d["kind"] for d in summary["decisions_requested"]}
    assert "failing task" in asks and "re-evaluation result" in asks  # the swap's re-evaluation awaits a decision
    assert summary["digest"]["status"] == "attention needed" and summary["digest"]["tasks"] == 1
    trend = report.tasks[0].trend
    assert [t["period"] for t in trend] == ["2026-08", "2026-09", "2026-10"] and trend[-1]["n"] > 0
    equity = {(e.tag): e for e in report.equity}
    assert set(equity) == set(demo.plan.tasks[0].subgroups) and equity
    for row in equity.values():
        for sub in row.subgroups:
            assert sub.ci_low is not None and sub.ci_low <= (sub.estimate or 0) <= (sub.ci_high or 1)
            assert sub.too_little_data is (sub.n < 30)
    health = report.health[0]
    assert health.runs == 50 and health.complete + health.failed + health.interrupted == 50
    # hourly probes for two days, then nothing: the monitor's own silence shows up as staleness
    assert health.longest_gap_hours is not None and health.longest_gap_hours > 24 and health.stale is True
    assert health.expected_runs is not None and health.expected_runs > health.runs
    assert "score" in " ".join(health.streams_alarmed)
    with Session(demo.engine) as session:
        october = build_committee_report(
            session, demo.plan, parse_period("2026-10"), now=datetime(2026, 12, 1, tzinfo=UTC)
        ).health[0]
    assert (october.runs, october.longest_gap_hours, october.stale) == (2, 1.0, False)
    from medmon.monitor.plan.context import canaries_sha256

    pack = canaries_sha256(load_pack("clinical_knowledge_mcq").canaries)
    assert {p["pack_sha256"] for p in report.tasks[0].provenance} == {pack}  # results name the pack version
    assert sum(p["runs"] for p in report.tasks[0].provenance) == 51  # 50 monitoring runs and the re-evaluation
    assert all(p["scorer_version"].startswith("multiple_choice (medmon ") for p in report.tasks[0].provenance)
    ops = summary["alert_operations"]
    assert ops["targets_set"] is False and sum(r["alerts"] for r in ops["by_severity"]) == len(report.alerts)
    assert summary["privacy"]["redactor"] == "builtin"
