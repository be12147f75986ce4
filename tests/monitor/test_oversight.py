"""Human oversight: the review queue, the jury validated against clinicians (figures checked against
pingouin, krippendorff and Shrout and Fleiss's published table), safety-event clocks on an injected
clock, and suspend/resume through a signed webhook received by a real server on 127.0.0.1."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from medmon.alerts import Alert, AlertStatus, open_alerts
from medmon.alerts import verify as verify_signature
from medmon.db import session_scope
from medmon.monitor.alerting.oversight import oversight_pass
from medmon.monitor.errors import GovernanceError, PlanError
from medmon.monitor.governance import safety, suspension
from medmon.monitor.governance.audit import AuditKind, list_events, verify
from medmon.monitor.governance.clinician_agreement import icc, task_agreement
from medmon.monitor.governance.reevaluation import run_reevaluation
from medmon.monitor.governance.review import queue_reviews, record_review
from medmon.monitor.models import ReviewItem
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan, parse_plan
from medmon.probes.models import ProbeResult
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Phase, create_simulator
from tests.conftest import plan_dict
from tests.monitor.oversight_data import CRITERIA, OVERSIGHT, REVIEWER_A, REVIEWER_B, store_answers, truth_of

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)  # a Wednesday
OWNER, SECOND = "owner@hospital.example", "tech@hospital.example"
SECRET = "whsec-test-suspend"


def _plan(**extra: Any) -> Plan:
    data = plan_dict(oversight={**OVERSIGHT, **extra})
    data["tasks"][0] |= {"human_review_required": True, "subgroups": ["age_band", "sex"]}
    return parse_plan(yaml.safe_dump(data))


def _rate_all(engine: Engine, plan: Plan, at: datetime, rng: random.Random, *, noise: int = 0) -> int:
    """Every open item rated by its reviewer on the answer's true quality (give or take ``noise``)."""
    with session_scope(engine) as s:
        items = s.exec(select(ReviewItem).where(ReviewItem.status == "open")).all()
        for item in items:
            answer = s.get(ProbeResult, item.result_id)
            assert answer is not None
            base = truth_of(int(answer.canary_id.removeprefix("c")))
            scores = {c: max(1, min(5, base + rng.randint(-noise, noise))) for c in CRITERIA}
            record_review(
                s,
                plan,
                item_id=item.id or 0,
                reviewer=item.reviewer,
                scores=scores,
                note="",
                safety_concern=False,
                actor=item.reviewer,
                now=at,
            )
        return len(items)


def test_plan_names_only_known_tasks_for_reviewers() -> None:
    data = plan_dict(oversight={"reviewers": [{"name": "X", "email": "x@h.example", "tasks": ["no-such-task"]}]})
    with pytest.raises(
        PlanError, match="oversight names tasks the plan does not have: reviewer x@h.example: 'no-such-task'"
    ):
        parse_plan(yaml.safe_dump(data))


def test_the_queue_samples_a_rate_within_the_weekly_quota_spread_over_strata(engine: Engine) -> None:
    plan = _plan()
    with session_scope(engine) as s:
        store_answers(s, "knowledge-qa", 16, NOW - timedelta(hours=2))
        first = queue_reviews(s, plan, NOW, random.Random(0))
    answers = {i.result_id for i in first}
    assert len(answers) == 8  # rate 0.5 of 16
    strata = Counter(i.stratum.split(" · jury")[0] for i in first if i.reviewer == first[0].reviewer or not i.double)
    assert {k.split(" · ")[0] for k in strata} == {"age_band=18-64", "age_band=65+"}  # both subgroups drawn
    per_answer = Counter(i.result_id for i in first)
    assert {n for n in per_answer.values()} <= {1, 2} and any(n == 2 for n in per_answer.values())
    assert all(i.double == (per_answer[i.result_id] == 2) for i in first)
    with session_scope(engine) as s:
        store_answers(s, "knowledge-qa", 40, NOW - timedelta(hours=1), seed=2)
        more = queue_reviews(s, plan, NOW, random.Random(1))
        again = queue_reviews(s, plan, NOW, random.Random(2))
    assert len({i.result_id for i in more}) == 4 and again == []  # the weekly quota (12) is reached


def test_a_review_is_checked_against_the_rubric_and_the_assignment_and_audited(engine: Engine) -> None:
    plan = _plan()
    with session_scope(engine) as s:
        store_answers(s, "knowledge-qa", 4, NOW - timedelta(hours=1))
        item = queue_reviews(s, plan, NOW, random.Random(0))[0]
    other = REVIEWER_B if item.reviewer == REVIEWER_A else REVIEWER_A
    good = {"accuracy": 4, "completeness": 3, "clarity": 5}
    with session_scope(engine) as s:
        with pytest.raises(GovernanceError, match=f"not assigned to {other}"):
            record_review(
                s,
                plan,
                item_id=item.id or 0,
                reviewer=other,
                scores=good,
                note="",
                safety_concern=False,
                actor=other,
                now=NOW,
            )
        with pytest.raises(ValueError, match="clarity: expected an integer from 1 to 5, got 6"):
            record_review(
                s,
                plan,
                item_id=item.id or 0,
                reviewer=item.reviewer,
                scores=good | {"clarity": 6},
                note="",
                safety_concern=False,
                actor=item.reviewer,
                now=NOW,
            )
        with pytest.raises(ValueError, match="missing completeness"):
            record_review(
                s,
                plan,
                item_id=item.id or 0,
                reviewer=item.reviewer,
                scores={"accuracy": 4, "clarity": 5},
                note="",
                safety_concern=False,
                actor=item.reviewer,
                now=NOW,
            )
        record_review(
            s,
            plan,
            item_id=item.id or 0,
            reviewer=item.reviewer,
            scores=good,
            note=" Omits renal dosing ",
            safety_concern=True,
            actor=item.reviewer,
            now=NOW,
        )
    with Session(engine) as s:
        [entry] = list_events(s, kind=AuditKind.clinician_review)
        assert verify(s).ok
    assert entry.actor == item.reviewer and entry.details["scores"] == good
    assert entry.details["note"] == "Omits renal dosing" and entry.details["safety_concern"] is True


def test_icc_matches_shrout_and_fleiss_published_table() -> None:
    # Shrout and Fleiss (1979), Table 2: six targets, four judges; ICC(1,1) .17, ICC(2,1) .29.
    table = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    assert round(icc(table, "ICC(1,1)")[0] or 0, 2) == 0.17
    assert round(icc(table, "ICC(A,1)")[0] or 0, 2) == 0.29


def test_jury_clinician_agreement_figures_are_the_libraries_own(engine: Engine) -> None:
    plan = _plan(review={"rate": 1.0, "weekly_quota": 40, "double_rate": 0.5})
    with session_scope(engine) as s:
        store_answers(s, "knowledge-qa", 30, NOW - timedelta(hours=1))
        queue_reviews(s, plan, NOW, random.Random(0))
    _rate_all(engine, plan, NOW, random.Random(5), noise=1)
    with Session(engine) as s:
        stats = {(a.statistic, a.criterion): a for a in task_agreement(s, "knowledge-qa", min_items=10)}
        from medmon.monitor.governance.clinician_agreement import rated

        rows = [r for r in rated(s, "knowledge-qa", 200) if r.criterion == "accuracy"]
    pairs = pd.DataFrame(
        [
            (k, rater, v)
            for k, r in enumerate(rows)
            for rater, v in (("jury", r.jury_mean), ("clinicians", r.clinician_mean))
        ],
        columns=["item", "rater", "score"],
    )
    oracle = pingouin.intraclass_corr(pairs, "item", "rater", "score").set_index("Type").loc["ICC(A,1)"]
    jury = stats[("jury_icc", "accuracy")]
    assert jury.n == 30 and jury.value == pytest.approx(oracle["ICC"])
    assert (jury.ci_low, jury.ci_high) == tuple(oracle["CI95"])
    assert jury.value > 0.6  # judges within a point of the truth, clinicians within a point too
    matrix = np.array([[r.jury_mean for r in rows], [r.clinician_mean for r in rows]], dtype=float)
    assert stats[("jury_alpha", "accuracy")].value == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    )
    double = [r for r in rows if len(r.clinicians) == 2]
    reviewer = stats.get(("reviewer_icc", "accuracy"))
    assert reviewer is not None and reviewer.n == len(double) >= 10
    bias = stats[("bias[judge-a]", "accuracy")]
    diffs = [r.judges["judge-a"] - r.clinician_mean for r in rows]
    assert bias.value == pytest.approx(np.mean(diffs)) and bias.ci_low < bias.value < bias.ci_high


def test_a_jury_that_disagrees_with_clinicians_raises_its_alert(engine: Engine) -> None:
    plan = _plan(review={"rate": 1.0, "weekly_quota": 40, "double_rate": 0.0})
    inverted = lambda i, judge, criterion: 6 - truth_of(i)  # noqa: E731  (the jury rates good answers bad)
    with session_scope(engine) as s:
        store_answers(s, "knowledge-qa", 24, NOW - timedelta(hours=1), judge_score=inverted)
        oversight_pass(s, plan, NOW)  # queues the sample
    assert _rate_all(engine, plan, NOW, random.Random(5)) == 24
    with session_scope(engine) as s:
        signals = oversight_pass(s, plan, NOW + timedelta(minutes=1))
    with Session(engine) as s:
        alerts = [a for a in open_alerts(s) if a.rule == "jury_not_validated"]
        bias = [a for a in open_alerts(s) if a.rule == "judge_bias"]
    assert {a.labels["metric"] for a in alerts} == {f"jury_icc:{c}" for c in CRITERIA}
    assert all(a.evidence["ci_high"] < 0.3 and a.evidence["n"] == 24 for a in alerts)
    assert "below the floor 0.30: the jury no longer stands in for clinicians" in alerts[0].summary
    assert len(bias) == 0  # inverted, not shifted: the mean difference is near zero
    assert len(signals) == 3


def _event_plan() -> Plan:
    return _plan(safety={"jurisdiction": "EU", "device_status": "high_risk_ai", "warn_before": "2d"})


def test_a_safety_events_clock_is_computed_and_alerted_before_its_deadline(engine: Engine) -> None:
    plan = _event_plan()
    aware = NOW - timedelta(hours=6)
    with session_scope(engine) as s:
        [rid] = store_answers(s, "knowledge-qa", 1, NOW - timedelta(days=1))
        event = safety.open_event(
            s,
            plan,
            task_id="knowledge-qa",
            severity="serious",
            source="person",
            what_happened="Advised a full dose despite eGFR 25.",
            actor=OWNER,
            now=NOW,
            aware_at=aware,
            result_ids=[rid],
        )
        event_id = event.id or 0
    with Session(engine) as s:
        stored = s.get(type(event), event_id)
        assert stored is not None and stored.clock == "15d"
        assert stored.due_at is not None and stored.due_at.replace(tzinfo=UTC) == aware + timedelta(days=15)
        assert stored.evidence["answers"][0]["answer"].startswith("**Answer 0.**")
        assert stored.evidence["model"]["served"] == "medmon-simulator/clinical-v1"

    def alerts_at(at: datetime) -> list[Alert]:
        with session_scope(engine) as s:
            oversight_pass(s, plan, at)
        with Session(engine) as s:
            return [a for a in open_alerts(s) if a.rule == "safety_clock"]

    assert alerts_at(aware + timedelta(days=12)) == []  # 3 days left: not yet
    [soon] = alerts_at(aware + timedelta(days=13, hours=1))  # inside the 2-day warning
    assert soon.severity.value == "critical" and "must be reported by" in soon.summary  # high-risk use case
    assert "(47 h left; EU, high_risk_ai)" in soon.summary
    with session_scope(engine) as s:
        oversight_pass(s, plan, aware + timedelta(days=15, hours=2))
    with Session(engine) as s:
        [late] = [a for a in open_alerts(s) if a.rule.startswith("safety_")]
    assert late.rule == "safety_deadline_passed" and late.severity.value == "critical"
    assert "overdue by 2 h" in late.summary
    with session_scope(engine) as s:  # re-graded after a death: 10 days from the same awareness
        regraded = safety.regrade(
            s, plan, event_id, "death", "Patient died; causality under review", OWNER, aware + timedelta(days=1)
        )
        assert regraded.due_at == aware + timedelta(days=10)
        safety.mark_reported(s, event_id, "EUDAMED-2026-0042", OWNER, aware + timedelta(days=15, hours=3))
    assert alerts_at(aware + timedelta(days=15, hours=4)) == []
    with Session(engine) as s:
        assert [a for a in open_alerts(s) if a.rule.startswith("safety_")] == []
    with Session(engine) as s:
        doc = safety.event_document(s, plan, event_id, aware + timedelta(days=16))
        assert json.loads(json.dumps(doc))["regulatory"] == {
            "jurisdiction": "EU",
            "device_status": "high_risk_ai",
            "deadline": "10d",
            "due_at": (aware + timedelta(days=10)).isoformat(),
            "clock": "stopped",
            "clock_label": "reported",
        }


def test_art73_default_clocks() -> None:
    plan = _event_plan()
    assert {
        k: safety.clock_for(plan.oversight.safety, k)[1] for k in ("death", "widespread", "serious", "non_serious")
    } == {
        "death": timedelta(days=10),
        "widespread": timedelta(days=2),
        "serious": timedelta(days=15),
        "non_serious": None,
    }


class Receiver:
    """A gateway on 127.0.0.1 that accepts signed suspend/resume calls and rejects unsigned ones."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.fail_next = 0

    async def hook(self, request: Request) -> Response:
        body = await request.body()
        if self.fail_next:
            self.fail_next -= 1
            return Response("busy", status_code=503)
        if not verify_signature(body, request.headers, SECRET, now=int(datetime.now(UTC).timestamp())):
            return Response("bad signature", status_code=401)
        self.calls.append(json.loads(body))
        return Response("ok")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/flags/medmon", self.hook, methods=["POST"])])


@pytest.fixture
def gateway(serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Receiver, str]:
    receiver = Receiver()
    server = serve(receiver.app())
    monkeypatch.setenv("MEDMON_SUSPEND_SECRET", SECRET)
    return receiver, f"{server.url}/flags/medmon"


def _suspend_plan(url: str, sim_url: str = "http://127.0.0.1:9") -> Plan:
    data = plan_dict(oversight={"suspend": {"url": url, "secret_env": "MEDMON_SUSPEND_SECRET"}})
    data["deployment"]["base_url"] = f"{sim_url}/v1"
    data["deployment"]["api_key_env"] = "X"
    return parse_plan(yaml.safe_dump(data))


def test_suspend_calls_the_signed_route_after_a_second_owner_and_resume_needs_a_passing_reevaluation(
    engine: Engine, gateway: tuple[Receiver, str], serve: Callable[..., Any]
) -> None:
    receiver, url = gateway
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(0, accuracy=0.95)], seed=4))
    plan = _suspend_plan(url, sim.url)  # risk tier high: a second owner confirms
    with session_scope(engine) as s:
        asked = suspension.request(s, plan, "knowledge-qa", "Dosing errors under review", OWNER, NOW)
        assert asked.status == "pending" and receiver.calls == []
        with pytest.raises(GovernanceError, match="a second owner must confirm"):
            suspension.confirm(s, plan, asked.id or 0, OWNER, NOW)
    receiver.fail_next = 1  # the gateway is busy once: the call is retried
    with session_scope(engine) as s:
        done = suspension.confirm(s, plan, asked.id or 0, SECOND, NOW + timedelta(minutes=5))
        assert done.status == "suspended" and done.confirmed_by == SECOND
    [call] = receiver.calls
    assert call | {"at": None} == {
        "action": "suspend",
        "suspension": asked.id,
        "deployment": "production",
        "model": "medmon-simulator/clinical-v1",
        "task": "knowledge-qa",
        "reason": "Dosing errors under review",
        "by": SECOND,
        "requested_by": OWNER,
        "confirmed_by": SECOND,
        "at": None,
    }
    with session_scope(engine) as s:
        with pytest.raises(GovernanceError, match="resume refused: task knowledge-qa has no passing re-evaluation"):
            suspension.resume(s, plan, "knowledge-qa", OWNER, NOW + timedelta(hours=1))
    later = NOW + timedelta(hours=2)
    check = run_reevaluation(engine, plan, load_context(plan, plan.tasks[0]), now=lambda: later)
    assert check.passed is True
    with session_scope(engine) as s:  # high risk: one owner's resume is a request, as for suspend
        asked_back = suspension.resume(s, plan, "knowledge-qa", OWNER, later + timedelta(minutes=1))
        assert asked_back.status == "suspended" and [c["action"] for c in receiver.calls] == ["suspend"]
    with session_scope(engine) as s, pytest.raises(GovernanceError, match="a second owner must confirm the resume"):
        suspension.resume(
            s, plan, "knowledge-qa", OWNER, later + timedelta(minutes=2), decision="resume", reference="n/a"
        )
    with session_scope(engine) as s:
        back = suspension.resume(s, plan, "knowledge-qa", SECOND, later + timedelta(minutes=3))
    assert back.status == "resumed" and back.resume_basis == f"reevaluation:{check.id}"
    assert back.resumed_by == SECOND
    assert [c["action"] for c in receiver.calls] == ["suspend", "resume"]
    with Session(engine) as s:
        steps = [e.details["action"] for e in list_events(s, kind=AuditKind.suspension)]
        assert verify(s).ok
    assert steps == ["requested", "sent", "resume_requested", "resumed"]


def test_a_suspension_the_route_refuses_is_recorded_failed_not_in_force(
    engine: Engine, gateway: tuple[Receiver, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = gateway
    monkeypatch.setenv("MEDMON_SUSPEND_SECRET", "not-the-gateways-secret")
    data = plan_dict(
        use_case={"name": "t", "intended_use": "t", "risk_tier": "low"},
        oversight={"suspend": {"url": url, "secret_env": "MEDMON_SUSPEND_SECRET"}},
    )
    plan = parse_plan(yaml.safe_dump(data))
    with session_scope(engine) as s:
        s_ = suspension.request(s, plan, "knowledge-qa", "Test", OWNER, NOW)
    assert s_.status == "failed" and "HTTP 401" in s_.route_error
    with Session(engine) as s:
        assert suspension.active(s) == []


def test_a_corrective_action_closes_only_on_a_passing_check_run_after_it(
    engine: Engine, serve: Callable[..., Any]
) -> None:
    sim = serve(create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(0, accuracy=0.95)], seed=4))
    plan = _suspend_plan("http://127.0.0.1:9/x", sim.url)
    early = run_reevaluation(engine, plan, load_context(plan, plan.tasks[0]), now=lambda: NOW - timedelta(days=1))
    with session_scope(engine) as s:
        event = safety.open_event(
            s,
            plan,
            task_id="knowledge-qa",
            severity="non_serious",
            source="person",
            what_happened="Ambiguous dosing wording",
            actor=OWNER,
            now=NOW,
        )
        action = safety.add_action(
            s, event.id or 0, "Add renal dosing to the system prompt", OWNER, NOW + timedelta(days=7), OWNER, NOW
        )
        ids = (event.id or 0, action.id or 0)
    with session_scope(engine) as s:
        with pytest.raises(GovernanceError, match="ran before the action was agreed"):
            safety.close_action(s, ids[1], early.id or 0, OWNER, NOW)
        with pytest.raises(GovernanceError, match=r"corrective action\(s\) #\d+ have not passed"):
            safety.decide(s, ids[0], "Close", OWNER, NOW, close=True)
    check = run_reevaluation(engine, plan, load_context(plan, plan.tasks[0]), now=lambda: NOW + timedelta(hours=1))
    with session_scope(engine) as s:  # a week and a day later, still open: overdue
        oversight_pass(s, plan, NOW + timedelta(days=8))
    with Session(engine) as s:
        [late] = [a for a in open_alerts(s) if a.rule == "corrective_action_overdue"]
    assert "Add renal dosing to the system prompt" in late.summary and "no passing effectiveness check" in late.summary
    with session_scope(engine) as s:
        closed = safety.close_action(s, ids[1], check.id or 0, OWNER, NOW + timedelta(hours=2))
        assert closed.status == "closed" and closed.check_reevaluation_id == check.id
        assert safety.decide(s, ids[0], "Prompt fixed; re-evaluation passed", OWNER, NOW, close=True).status == "closed"
    with session_scope(engine) as s:
        oversight_pass(s, plan, NOW + timedelta(days=9))
    with Session(engine) as s:
        assert AlertStatus.firing not in {a.status for a in s.exec(select(Alert)).all()}  # closed: cleared


def test_the_committee_report_has_a_human_oversight_section(engine: Engine, tmp_path: Any) -> None:
    from medmon.monitor.governance.reports.committee import build_committee_report
    from medmon.monitor.governance.reports.period import parse_period
    from medmon.monitor.governance.reports.render import render_committee

    plan = _plan(review={"rate": 1.0, "weekly_quota": 15, "double_rate": 0.0})
    with session_scope(engine) as s:
        store_answers(s, "knowledge-qa", 12, NOW - timedelta(hours=1))
        oversight_pass(s, plan, NOW)
    _rate_all(engine, plan, NOW, random.Random(5))
    with session_scope(engine) as s:
        oversight_pass(s, plan, NOW + timedelta(minutes=1))
        event = safety.open_event(
            s,
            plan,
            task_id="knowledge-qa",
            severity="serious",
            source="incident",
            source_ref="incident:7",
            what_happened="Wrong anticoagulant dose advised",
            actor=OWNER,
            now=NOW,
        )
        safety.add_action(s, event.id or 0, "Tighten the dosing prompt", OWNER, NOW + timedelta(days=7), OWNER, NOW)
        safety.record_near_miss(s, plan, "knowledge-qa", "Pharmacist caught a unit error", REVIEWER_A, NOW)
    with Session(engine) as s:
        report = build_committee_report(s, plan, parse_period("2026-11"), now=NOW + timedelta(days=1))
        stats = {(a.statistic, a.criterion): a for a in task_agreement(s, "knowledge-qa", min_items=10)}
    section = report.summary()["human_oversight"]
    assert section["reviews"] == [{"task": "knowledge-qa", "done": 12, "ratings": 12, "quota": 15 * 5, "flagged": 0}]
    icc_row = next(a for a in section["agreement"] if a["statistic"] == "jury_icc" and a["criterion"] == "accuracy")
    assert icc_row["value"] == pytest.approx(stats[("jury_icc", "accuracy")].value) and icc_row["n"] == 12
    assert icc_row["floor"] == 0.3 and icc_row["below"] is False
    [ev] = section["events"]
    assert ev["clock"] == "14.0 days left" and ev["actions"][0]["status"] == "open"
    assert section["near_misses"] == {"knowledge-qa": 1}
    page = render_committee(report)
    assert "6. Human oversight" in page and "jury-clinician ICC of 0.47" in page
    assert f"{icc_row['value']:.3f}" in page and "open: no passing effectiveness check yet" in page
    assert "Near misses recorded: knowledge-qa 1." in page
    (tmp_path / "report.html").write_text(page)


def test_cli_lists_events_with_their_clocks_and_exports_one_as_json_html_and_pdf(
    db_url: str, engine: Engine, tmp_path: Any
) -> None:
    from typer.testing import CliRunner

    from medmon.monitor.cli.app import app
    from medmon.monitor.governance.reports.render import find_chromium

    data = plan_dict(storage={"url": db_url}, oversight=OVERSIGHT)
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(data))
    plan = parse_plan(plan_path.read_text())
    now = datetime.now(UTC)
    with session_scope(engine) as s:
        [rid] = store_answers(s, "knowledge-qa", 1, now - timedelta(hours=1))
        event = safety.open_event(
            s,
            plan,
            task_id="knowledge-qa",
            severity="widespread",
            source="incident",
            source_ref="incident:3",
            what_happened="Same wrong advice on every ward",
            actor=OWNER,
            now=now,
            result_ids=[rid],
        )
    runner = CliRunner()
    listed = runner.invoke(app, ["oversight", "events", str(plan_path), "--json"])
    assert listed.exit_code == 1, listed.output  # a 2-day clock is inside the 2-day warning from the start
    [row] = json.loads(listed.stdout)
    assert (row["id"], row["severity"], row["clock"]) == (event.id, "widespread", "due_soon")
    target = tmp_path / "out" / "event.json"
    done = runner.invoke(app, ["oversight", "export", str(plan_path), str(event.id), "--output", str(target)])
    assert done.exit_code == 0, done.output
    document = json.loads(target.read_text())
    assert document["schema"] == "medmon.safety_event/1" and document["source_ref"] == "incident:3"
    assert document["regulatory"]["deadline"] == "2d" and document["evidence"]["answers"][0]["result_id"] == rid
    html = target.with_suffix(".html").read_text()
    assert "Safety event #" in html and "Same wrong advice on every ward" in html and "report within 2d" in html
    with Session(engine) as s:  # reading stored text from the command line is audited, as on the dashboard
        [read] = list_events(s, kind=AuditKind.answers_viewed)
    assert read.details["page"] == "medmon oversight export" and read.details["answers"] == [rid]
    assert read.details["authenticated"] is False and read.actor.endswith(
        "via medmon oversight export (unauthenticated)"
    )
    if find_chromium() is not None:
        assert target.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
    missing = runner.invoke(app, ["oversight", "export", str(plan_path), "999", "--no-pdf"])
    assert missing.exit_code == 2 and "safety event 999 does not exist" in missing.output


def test_check_notes_a_task_that_requires_review_but_has_no_reviewer() -> None:
    from medmon.monitor.governance.checks import plan_notes

    data = plan_dict()
    data["tasks"][0]["human_review_required"] = True
    assert (
        "task 'knowledge-qa' requires human review but no reviewer in oversight.reviewers is assigned to it: "
        "none of its answers will be queued"
    ) in plan_notes(parse_plan(yaml.safe_dump(data)))
    assert not any("requires human review" in n for n in plan_notes(_plan()))


@pytest.mark.process
def test_a_command_route_gets_the_body_on_stdin_and_its_failure_is_recorded(engine: Engine, tmp_path: Any) -> None:
    import sys

    log = tmp_path / "flags.log"
    script = (
        "import json, os, sys; body = json.load(sys.stdin); "
        f"open({str(log)!r}, 'a').write(os.environ['MEDMON_SUSPEND_ACTION'] + ' ' + body['task'] + '\\n'); "
        "sys.exit(3 if body['reason'] == 'break' else 0)"
    )
    data = plan_dict(
        use_case={"name": "t", "intended_use": "t", "risk_tier": "low"},
        oversight={"suspend": {"type": "command", "command": [sys.executable, "-c", script]}},
    )
    plan = parse_plan(yaml.safe_dump(data))
    with session_scope(engine) as s:
        held = suspension.request(s, plan, "knowledge-qa", "Vendor incident", OWNER, NOW)
        assert held.status == "suspended"  # low risk: no second owner needed
        back = suspension.resume(
            s, plan, "knowledge-qa", OWNER, NOW, decision="Committee accepted vendor fix", reference="CAIC-2026-19"
        )
        assert back.resume_basis == "decision:Committee accepted vendor fix (CAIC-2026-19)"
        broken = suspension.request(s, plan, "knowledge-qa", "break", OWNER, NOW)
    assert log.read_text().split("\n")[:3] == ["suspend knowledge-qa", "resume knowledge-qa", "suspend knowledge-qa"]
    assert broken.status == "failed" and "exited with 3" in broken.route_error
