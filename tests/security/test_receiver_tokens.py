"""Per-application receiver tokens, token strength and the open-receiver checks, as a user meets
them: through a real receiver on 127.0.0.1 and through ``medmon check``."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlmodel import Session, select
from typer.testing import CliRunner

from medmon.monitor.cli.app import app
from medmon.monitor.governance.checks import plan_notes, receiver_issues
from medmon.monitor.models import TrafficSpan
from medmon.monitor.plan.model import Plan
from medmon.monitor.service.receiver import MissingToken, create_receiver, receiver_token
from tests.conftest import plan_dict
from tests.monitor.traffic_helpers import export_body, genai_attributes, make_spans, traffic_plan

TRIAGE_TOKEN = "triage-app-token-5c1f0e7a9b2d4c6e8f1a3b5d7e9f"
DISCHARGE_TOKEN = "discharge-app-token-0a2c4e6f8b1d3f5a7c9e0b2d4f"


def _apps_plan(db_url: str) -> Plan:
    return traffic_plan(
        db_url,
        token_env=None,
        applications=[
            {"name": "triage-app", "token_env": "T_TRIAGE", "tasks": ["triage"]},
            {"name": "discharge-app", "token_env": "T_DISCHARGE", "tasks": ["discharge"]},
        ],
    )


def test_each_application_token_feeds_only_its_own_tasks(engine, db_url, serve, monkeypatch) -> None:
    monkeypatch.setenv("T_TRIAGE", TRIAGE_TOKEN)
    monkeypatch.setenv("T_DISCHARGE", DISCHARGE_TOKEN)
    url = serve(create_receiver(engine, _apps_plan(db_url), token=None)).url
    # The triage application claims to be the discharge service: that call is refused alone.
    body = export_body(
        make_spans([genai_attributes(**{"medmon.task": "triage"}), genai_attributes()], service="discharge-app")
    )
    headers = {"Content-Type": "application/x-protobuf"}
    assert httpx.post(f"{url}/v1/traces", content=body, headers=headers).status_code == 401
    r = httpx.post(f"{url}/v1/traces", content=body, headers=headers | {"Authorization": f"Bearer {TRIAGE_TOKEN}"})
    assert r.status_code == 200
    reply = ExportTraceServiceResponse.FromString(r.content)
    assert reply.partial_success.rejected_spans == 1 and "may not feed" in reply.partial_success.error_message
    with Session(engine) as s:
        assert [row.task_id for row in s.exec(select(TrafficSpan)).all()] == ["triage"]


def test_an_application_token_that_is_not_set_stops_the_start(db_url) -> None:
    plan = _apps_plan(db_url)
    with pytest.raises(MissingToken, match="T_DISCHARGE"):
        receiver_token(plan.traffic, environ={"T_TRIAGE": TRIAGE_TOKEN})


def test_weak_tokens_and_an_open_receiver_on_the_network_fail_the_check(db_url) -> None:
    plan = traffic_plan(db_url, token_env="T_SHARED")
    [weak] = receiver_issues(plan, environ={"T_SHARED": "x"})
    assert weak.path == "traffic.token_env" and "too weak (1 characters" in weak.message
    assert receiver_issues(plan, environ={"T_SHARED": TRIAGE_TOKEN}) == []
    open_door = traffic_plan(db_url, token_env=None, host="0.0.0.0")
    [issue] = receiver_issues(open_door, environ={})
    assert "takes no token" in issue.message
    guarded = traffic_plan(db_url, token_env="T_SHARED", host="0.0.0.0")
    assert any("not a loopback address" in n and "TLS" in n for n in plan_notes(guarded))


def test_medmon_check_refuses_a_one_character_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = plan_dict(storage={"url": f"sqlite:///{tmp_path / 'm.db'}"})
    data["traffic"] = {"token_env": "T_SHARED"}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.setenv("T_SHARED", "x")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2, result.output
    assert "too weak" in result.output
    monkeypatch.setenv("T_SHARED", TRIAGE_TOKEN)
    assert CliRunner().invoke(app, ["check", str(path)]).exit_code == 0


def test_a_celery_broker_without_a_password_is_noted(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = plan_dict(storage={"url": db_url}, service={"executor": "celery"})
    plan = Plan.model_validate(data)
    monkeypatch.setenv("MEDMON_BROKER_URL", "redis://redis.internal:6379/0")
    assert any("without a password" in n for n in plan_notes(plan))
    monkeypatch.setenv("MEDMON_BROKER_URL", "redis://:s3cret-from-env@redis.internal:6379/0")
    assert not any("without a password" in n for n in plan_notes(plan))
