"""The Safety page: one owner asks to suspend a high-risk task, a second owner confirms, the signed
call reaches the gateway (a real server on 127.0.0.1), every page shows the suspension, and
resuming without a passing re-evaluation is refused on the page."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from streamlit.testing.v1 import AppTest

from medmon.alerts import open_alerts, verify
from medmon.monitor.governance.audit import AuditKind, list_events
from medmon.monitor.plan.model import load_plan
from medmon.monitor.read import safety_events
from tests.dashboards.conftest import AUTH_SECRETS
from tests.dashboards.seed import CALC_OWNER, OWNER, Seeded

SECRET = "whsec-gateway"


@pytest.fixture
def gateway(serve: Callable[..., Any], seeded: Seeded, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    async def hook(request: Request) -> Response:
        body = await request.body()
        if not verify(body, request.headers, SECRET, now=int(datetime.now(UTC).timestamp())):
            return Response(status_code=401)
        calls.append(json.loads(body))
        return Response("ok")

    server = serve(Starlette(routes=[Route("/flag", hook, methods=["POST"])]))
    monkeypatch.setenv("GATEWAY_SECRET", SECRET)
    data = yaml.safe_load(seeded.plan_path.read_text())
    data["oversight"] = {"suspend": {"url": f"{server.url}/flag", "secret_env": "GATEWAY_SECRET"}}
    seeded.plan_path.write_text(yaml.safe_dump(data, sort_keys=False))
    return calls


def _as(open_page: Callable[..., AppTest], email: str) -> AppTest:
    return open_page(
        "safety", secrets=AUTH_SECRETS, user={"is_logged_in": True, "email": email, "email_verified": True}
    )


@pytest.mark.slow
def test_two_owners_suspend_a_high_risk_task_and_resume_is_refused_without_a_passing_reevaluation(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest], gateway: list[dict[str, Any]]
) -> None:
    at = _as(open_page, OWNER)
    at.selectbox(key="suspend_task").select("dose-calc").run()
    at.text_input(key="suspend_reason").input("Dose errors reported by pharmacy").run()
    at.button(key="do_suspend").click().run()
    assert not at.exception and gateway == []  # high risk: waits for a second owner
    assert any("dose-calc: suspension awaiting a second owner" in e.value for e in at.sidebar.error)
    at.selectbox(key="suspend_task").select("dose-calc").run()
    at.button(key="do_confirm").click().run()
    assert any("a second owner must confirm" in e.value for e in at.error)  # not the one who asked
    at = _as(open_page, CALC_OWNER)
    at.selectbox(key="suspend_task").select("dose-calc").run()
    at.button(key="do_confirm").click().run()
    assert not at.exception
    [call] = gateway
    assert (call["action"], call["task"], call["requested_by"], call["confirmed_by"]) == (
        "suspend",
        "dose-calc",
        OWNER,
        CALC_OWNER,
    )
    at = _as(open_page, OWNER)
    assert any("dose-calc: SUSPENDED since" in e.value for e in at.sidebar.error)
    at.selectbox(key="suspend_task").select("dose-calc").run()
    at.button(key="do_resume").click().run()
    assert any("resume refused: task dose-calc has no passing re-evaluation" in e.value for e in at.error)
    assert len(gateway) == 1
    with Session(seeded_engine) as s:
        steps = [(e.actor, e.details["action"]) for e in list_events(s, kind=AuditKind.suspension)]
    assert steps == [(OWNER, "requested"), (CALC_OWNER, "sent")]


@pytest.mark.slow
def test_an_owner_opens_a_safety_event_and_records_a_near_miss(
    seeded: Seeded, seeded_engine: Engine, open_page: Callable[..., AppTest]
) -> None:
    with Session(seeded_engine) as s:
        alert = next(a for a in open_alerts(s) if a.task_id == "knowledge-qa")
    at = _as(open_page, OWNER)
    at.selectbox(key="event_task").select("knowledge-qa").run()
    at.selectbox(key="event_severity").select("serious").run()
    at.text_area(key="event_what").input("Advised warfarin with a strong CYP2C9 inhibitor").run()
    at.text_input(key="event_ref").input(f"alert:{alert.id}").run()
    at.button(key="open_event").click().run()
    assert not at.exception
    assert any("Safety event: recorded." in s.value for s in at.success)
    events = next(d.value for d in at.dataframe if "clock" in d.value.columns)
    assert list(events["severity"]) == ["serious"] and events["clock"].iloc[0] == "15.0 days left"
    assert events["source"].iloc[0] == f"alert:{alert.id}"
    with Session(seeded_engine) as s:
        [event] = safety_events(s, load_plan(seeded.plan_path), datetime.now(UTC))
    frozen = event.event.evidence["context"]["alert"]
    assert (frozen["id"], frozen["rule"], frozen["summary"]) == (alert.id, alert.rule, alert.summary)
    at.text_area(key="miss_what").input("Pharmacist caught a wrong unit before dispensing").run()
    at.button(key="do_miss").click().run()
    with Session(seeded_engine) as s:
        kinds = [(e.kind, e.subject.split(":")[0]) for e in list_events(s) if e.kind in ("safety_event", "near_miss")]
    assert kinds == [("safety_event", "safety_event"), ("near_miss", "near_miss")]
