"""Every channel: render snapshots, the secrets conformance suite, and each service's answers
mimicked by a local receiver on 127.0.0.1 (Slack 200 "ok", Teams 202, PagerDuty 202/400/429)."""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from pytest_httpserver import HTTPServer
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from standardwebhooks import Webhook, WebhookVerificationError
from werkzeug import Request, Response

from medmon.alerts import (
    CHANNEL_TYPES,
    Alert,
    DeliveryError,
    Incident,
    Notification,
    NotifyPolicy,
    NotifyReason,
    PermanentDeliveryError,
    RetryableDeliveryError,
    RouteSpec,
    Severity,
    acknowledge_incident,
    apply_signals,
    deliver_due,
    resolve_incident,
)
from medmon.alerts.channels import (
    PagerDutyChannel,
    PagerDutyConfig,
    SlackChannel,
    SlackConfig,
    TeamsChannel,
    TeamsConfig,
)
from medmon.alerts.dispatch import group_body
from medmon.alerts.incidents import incident_body
from medmon.alerts.signing import verify
from tests.alerts.helpers import FakeClock, apply_signal, fire

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("MEDMON_UPDATE_SNAPSHOTS") == "1"
NOW = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)
URL_TOKEN = "T0SECRET/B0SECRET/xoxSECRETtoken42"
HMAC_SECRET = "hmac-SECRET-value-77"
ROUTING_KEY = "R0UTINGKEYSECRET0123456789abcdef"


def _alert(i: int, status: str, severity: Severity, metric: str, rule: str, summary: str) -> Alert:
    start = NOW - timedelta(hours=3 - i)
    a = Alert(
        id=i,
        fingerprint=f"fp{i:014d}",
        group_key="production/dosing/accuracy",
        incident_id=7,
        task_id="dosing",
        rule=rule,
        labels={
            "deployment": "production",
            "task": "dosing",
            "metric": metric,
            "rule": rule,
            "benchmark": "medcalc_bench",
            "category": "Clinical Decision Support",
            "cause": "accuracy",
        },
        severity=severity,
        summary=summary,
        owner="Dr. Owner <owner@hospital.example>",
        category="Clinical Decision Support",
        dashboard_url="http://127.0.0.1:8501/task?task=dosing",
        evidence={"estimate": 0.61, "ci_low": 0.55, "ci_high": 0.67, "n": 120},
        starts_at=start,
    )
    if status == "acknowledged":
        a.acknowledged_by, a.acknowledged_at, a.ack_note = "dr.owner@hospital.example", NOW, "reviewing <dose> & units"
    if status == "resolved":
        a.ends_at, a.resolved_by, a.resolve_reason = NOW, "medmon", "stream recovered"
    return a


def sample_notification() -> dict[str, Any]:
    """One accuracy incident of three signals: news first (a drop firing, a subgroup recovered)."""
    alerts = [
        _alert(1, "firing", Severity.critical, "score", "drift_drop", "dosing: score dropped below its baseline"),
        _alert(
            2,
            "acknowledged",
            Severity.warning,
            "score",
            "below_minimum",
            "dosing: recent score 0.61 is below the approved minimum 0.70",
        ),
        _alert(3, "resolved", Severity.warning, "score[sex=F]", "subgroup_drop", "dosing: score[sex=F] recovered"),
    ]
    incident = Incident(
        id=7,
        key="production/dosing/accuracy",
        deployment="production",
        task_id="dosing",
        cause="accuracy",
        severity=Severity.critical,
        summary=alerts[0].summary,
        owner=alerts[0].owner,
        dashboard_url=alerts[0].dashboard_url,
        opened_at=NOW - timedelta(hours=2),
    )
    body = group_body(
        "production/dosing/accuracy",
        "route",
        NotifyReason.new_firing,
        alerts,
        {"fp00000000000001", "fp00000000000003"},
        NOW,
    )
    return body | {"incident": incident_body(incident, alerts)}


def make_channel(kind: str, url: str, **extra: Any) -> Any:
    config_cls, channel_cls = CHANNEL_TYPES[kind]
    values: dict[str, Any] = {"name": f"{kind}-route", "url": SecretStr(url), "timeout_s": 2.0, **extra}
    if kind == "webhook":
        values.setdefault("secret", SecretStr(HMAC_SECRET))
    if kind == "pagerduty":
        values.setdefault("routing_key", SecretStr(ROUTING_KEY))
    return channel_cls(config_cls(**values))


@pytest.mark.parametrize("kind", sorted(CHANNEL_TYPES))
def test_render_snapshot(kind: str) -> None:
    body = make_channel(kind, "http://127.0.0.1:9/x").render(sample_notification())
    path = SNAPSHOTS / f"{kind}.json"
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
        pytest.skip(reason=f"snapshot {path.name} written")
    assert body == json.loads(path.read_text()), f"render of {kind} changed; review, then MEDMON_UPDATE_SNAPSHOTS=1"


@pytest.mark.parametrize("kind", sorted(CHANNEL_TYPES))
def test_render_is_pure(kind: str) -> None:
    channel = make_channel(kind, "http://127.0.0.1:9/x")
    note = sample_notification()
    before = json.dumps(note, sort_keys=True)
    assert channel.render(note) == channel.render(note)
    assert json.dumps(note, sort_keys=True) == before


def test_every_channel_is_registered_documented_and_snapshotted() -> None:
    assert set(CHANNEL_TYPES) == {"webhook", "slack", "teams", "pagerduty", "alertmanager"}
    for kind, (config_cls, channel_cls) in CHANNEL_TYPES.items():
        module = __import__(channel_cls.__module__, fromlist=["_"])
        assert module.__doc__ and len(module.__doc__) > 200, kind
        assert channel_cls.__doc__ and config_cls.__module__ == channel_cls.__module__, kind
        assert (SNAPSHOTS / f"{kind}.json").exists(), kind
        assert sum(1 for _ in Path(module.__file__ or "").open()) < 200, f"{kind} channel grew past 200 lines"


# --- conformance: secrets never reach errors, reprs or logs ---------------------------------------


def _echo(request: Request) -> Response:
    """A receiver that fails and quotes back everything it was sent, secrets included."""
    return Response(f"failed {request.full_path} {request.get_data(as_text=True)} {dict(request.headers)}", status=500)


@pytest.mark.parametrize("kind", sorted(CHANNEL_TYPES))
@pytest.mark.parametrize("fault", ["echoing-500", "refused", "timeout"])
def test_secrets_never_leak(
    kind: str, fault: str, httpserver: HTTPServer, caplog: pytest.LogCaptureFixture, engine: Engine, clock: FakeClock
) -> None:
    release = threading.Event()

    def hang(_: Request) -> Response:
        release.wait(5)
        return Response("late", status=200)

    path = f"/{URL_TOKEN}/api/v2/alerts" if kind == "alertmanager" else f"/{URL_TOKEN}"
    httpserver.expect_request(path).respond_with_handler(hang if fault == "timeout" else _echo)
    base = httpserver.url_for(f"/{URL_TOKEN}")
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
    if fault == "refused":
        base = f"http://127.0.0.1:{closed.getsockname()[1]}/{URL_TOKEN}"
    channel = make_channel(kind, base, timeout_s=0.2)
    secrets = [URL_TOKEN, HMAC_SECRET, ROUTING_KEY]
    caplog.set_level(logging.DEBUG)
    with Session(engine) as s:
        apply_signal(s, fire(), NotifyPolicy(routes=(RouteSpec(channel.name),)), clock())
        s.commit()
    note = sample_notification()
    try:
        with pytest.raises(DeliveryError) as info:
            channel.send(channel.render(note), idempotency_key="k-1")
        deliver_due(engine, {channel.name: channel}, clock)
    finally:
        release.set()
        closed.close()
    with Session(engine) as s:
        stored = s.exec(select(Notification)).one().last_error or ""
    config = channel.config
    seen = [
        str(info.value),
        repr(info.value),
        repr(channel),
        repr(config),
        str(config),
        config.model_dump_json(),
        stored,
        str(info.value.__cause__ or ""),
        str(info.value.__context__ or ""),
    ]
    # Everything medmon and its HTTP stack logged, at DEBUG (the test receiver's own access log aside).
    seen += [r.getMessage() for r in caplog.records if not r.name.startswith("werkzeug")]
    for text in seen:
        for secret in secrets:
            assert secret not in text, f"{kind}/{fault}: secret leaked into {text[:200]!r}"
    assert stored.startswith(f"{channel.name}: ")


# --- each service's answers, from a local receiver ---------------------------------------------------


def test_slack_answers_ok_and_gets_blocks(httpserver: HTTPServer) -> None:
    got: list[dict[str, Any]] = []

    def slack(request: Request) -> Response:
        got.append(request.get_json())
        return Response("ok", status=200, content_type="text/plain")

    httpserver.expect_request(f"/services/{URL_TOKEN}", method="POST").respond_with_handler(slack)
    channel = SlackChannel(SlackConfig(name="slack", url=SecretStr(httpserver.url_for(f"/services/{URL_TOKEN}"))))
    channel.send(channel.render(sample_notification()), idempotency_key="k")
    assert got[0]["text"].startswith("[FIRING] dosing: score dropped")
    assert [b["type"] for b in got[0]["blocks"]] == ["header", "section", "section", "section", "section", "context"]
    assert got[0]["blocks"][0]["text"]["text"].startswith("medmon firing: incident #7 dosing: accuracy")
    assert got[0]["blocks"][4]["text"]["text"].startswith("*What to do:* Check whether the served model")
    assert "&lt;dose&gt; &amp; units" in got[0]["blocks"][2]["text"]["text"]  # mrkdwn escaped


@pytest.mark.parametrize(
    ("status", "body", "headers", "error", "retry_after"),
    [
        (400, "invalid_payload", {}, PermanentDeliveryError, None),
        (403, "invalid_token", {}, PermanentDeliveryError, None),
        (410, "channel_is_archived", {}, PermanentDeliveryError, None),
        (429, "rate_limited", {"Retry-After": "30"}, RetryableDeliveryError, 30.0),
        (500, "rollup_error", {}, RetryableDeliveryError, None),
    ],
)
def test_slack_errors(
    httpserver: HTTPServer,
    status: int,
    body: str,
    headers: dict[str, str],
    error: type[DeliveryError],
    retry_after: float | None,
) -> None:
    httpserver.expect_request("/services/x").respond_with_data(body, status=status, headers=headers)
    channel = SlackChannel(SlackConfig(name="slack", url=SecretStr(httpserver.url_for("/services/x"))))
    with pytest.raises(error) as info:
        channel.send(channel.render(sample_notification()), idempotency_key="k")
    assert type(info.value) is error and info.value.retry_after == retry_after
    assert str(info.value) == f"slack: receiver answered HTTP {status}: {body}"


def test_teams_accepts_an_adaptive_card(httpserver: HTTPServer) -> None:
    got: list[dict[str, Any]] = []

    def teams(request: Request) -> Response:
        got.append(request.get_json())
        return Response("", status=202)

    httpserver.expect_request("/workflows/run", method="POST").respond_with_handler(teams)
    channel = TeamsChannel(TeamsConfig(name="teams", url=SecretStr(httpserver.url_for("/workflows/run"))))
    channel.send(channel.render(sample_notification()), idempotency_key="k")
    (message,) = got
    assert message["type"] == "message"
    (attachment,) = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.4"
    assert card["actions"][0]["url"] == "http://127.0.0.1:8501/task?task=dosing"


class PagerDutyMock:
    """Answers like Events API v2: 202 with the dedup key; 400 for a bad routing key."""

    def __init__(self, status: Callable[[int], int] = lambda _i: 202) -> None:
        self.events: list[dict[str, Any]] = []
        self.status = status

    def __call__(self, request: Request) -> Response:
        event = request.get_json()
        self.events.append(event)
        code = self.status(len(self.events))
        if event.get("routing_key") != ROUTING_KEY:
            code = 400
        body = (
            {"status": "success", "message": "Event processed", "dedup_key": event.get("dedup_key")}
            if code == 202
            else {"status": "invalid event", "message": "Event object is invalid"}
        )
        return Response(
            json.dumps(body),
            status=code,
            content_type="application/json",
            headers={"Retry-After": "7"} if code == 429 else {},
        )


def test_pagerduty_trigger_acknowledge_resolve_share_the_incident_dedup_key(
    engine: Engine, clock: FakeClock, httpserver: HTTPServer
) -> None:
    mock = PagerDutyMock()
    httpserver.expect_request("/v2/enqueue", method="POST").respond_with_handler(mock)
    channel = PagerDutyChannel(
        PagerDutyConfig(name="pd", url=SecretStr(httpserver.url_for("/v2/enqueue")), routing_key=SecretStr(ROUTING_KEY))
    )
    policy = NotifyPolicy(routes=(RouteSpec("pd"),))
    with Session(engine) as s:  # the drift detector and the approval minimum see one accuracy drop
        drift, minimum = apply_signals(s, [fire(), fire(rule="below_minimum")], policy, clock())
        s.commit()
        assert drift is not None and minimum is not None and drift.incident_id == minimum.incident_id
        incident_id = drift.incident_id
        assert incident_id is not None
    deliver_due(engine, {"pd": channel}, clock)
    clock.advance(minutes=10)  # past group_interval
    with Session(engine) as s:
        acknowledge_incident(s, incident_id, "dr.owner", "on it", clock(), routes=policy)
        s.commit()
    deliver_due(engine, {"pd": channel}, clock)
    clock.advance(minutes=10)
    with Session(engine) as s:
        resolve_incident(s, incident_id, "dr.owner", "fixed the prompt", clock(), routes=policy)
        s.commit()
    deliver_due(engine, {"pd": channel}, clock)
    key = f"medmon:production/dosing/accuracy#{incident_id}"
    assert [(e["event_action"], e["dedup_key"]) for e in mock.events] == [
        ("trigger", key),
        ("acknowledge", key),
        ("resolve", key),
    ]
    trigger = mock.events[0]
    assert trigger["payload"]["severity"] == "critical" and trigger["payload"]["component"] == "dosing"
    assert [d["rule"] for d in trigger["payload"]["custom_details"]["signals"]] == ["drift_drop", "below_minimum"]
    assert trigger["routing_key"] == ROUTING_KEY
    clock.advance(hours=5)
    with Session(engine) as s:
        assert all(n.status == "delivered" for n in s.exec(select(Notification)).all())


@pytest.mark.parametrize(
    ("status", "error", "retry_after"),
    [(400, PermanentDeliveryError, None), (429, RetryableDeliveryError, 7.0), (502, RetryableDeliveryError, None)],
)
def test_pagerduty_errors(
    httpserver: HTTPServer, status: int, error: type[DeliveryError], retry_after: float | None
) -> None:
    httpserver.expect_request("/v2/enqueue").respond_with_handler(PagerDutyMock(lambda _i: status))
    channel = PagerDutyChannel(
        PagerDutyConfig(name="pd", url=SecretStr(httpserver.url_for("/v2/enqueue")), routing_key=SecretStr(ROUTING_KEY))
    )
    with pytest.raises(error) as info:
        channel.send(channel.render(sample_notification()), idempotency_key="k")
    assert type(info.value) is error and info.value.retry_after == retry_after


def test_pagerduty_sends_only_news() -> None:
    channel = make_channel("pagerduty", "http://127.0.0.1:9/")
    actions = [(e["event_action"], e["dedup_key"]) for e in channel.render(sample_notification())]
    assert actions == [("trigger", "medmon:production/dosing/accuracy#7")]  # one event for the incident
    legacy = sample_notification()
    del legacy["incident"]  # written before incidents existed: one event per alert that is news
    assert [(e["event_action"], e["dedup_key"]) for e in channel.render(legacy)] == [
        ("trigger", "fp00000000000001"),
        ("resolve", "fp00000000000003"),
    ]
    repeat = sample_notification() | {"alerts": [a | {"new": False} for a in sample_notification()["alerts"]]}
    assert channel.render(repeat) == []


def test_webhook_signature_verifies_over_the_exact_bytes(httpserver: HTTPServer) -> None:
    """The stock ``standardwebhooks`` library verifies each delivery; tampering with the body,
    the id or the timestamp breaks it, so the same signed bytes cannot be replayed under a new id."""
    got: list[tuple[bytes, dict[str, str]]] = []

    def hook(request: Request) -> Response:
        got.append((request.get_data(), dict(request.headers)))
        return Response("", status=204)

    httpserver.expect_request("/hook").respond_with_handler(hook)
    channel = make_channel("webhook", httpserver.url_for("/hook"))
    channel.send(channel.render(sample_notification()), idempotency_key="key-1")
    raw, headers = got[0]
    assert headers["Idempotency-Key"] == headers["Webhook-Id"] == "key-1"
    assert "X-Medmon-Signature" not in headers
    stock = Webhook(HMAC_SECRET.encode())
    payload = stock.verify(raw, headers)
    assert payload["group_key"] == "production/dosing/accuracy" and payload["incident"]["id"] == 7
    timestamp = int(headers["Webhook-Timestamp"])
    assert verify(raw, headers, HMAC_SECRET, now=timestamp) == "key-1"
    for tampered_body, tampered in (
        (raw + b" ", headers),
        (raw, headers | {"Webhook-Id": "key-2"}),
        (raw, headers | {"Webhook-Timestamp": str(timestamp - 1)}),
    ):
        with pytest.raises(WebhookVerificationError):
            stock.verify(tampered_body, tampered)
        assert verify(tampered_body, tampered, HMAC_SECRET, now=timestamp) is None


def test_webhook_secret_in_standard_form_verifies_with_the_stock_library(httpserver: HTTPServer) -> None:
    """A ``whsec_`` secret made by the library itself is used as the library means it."""
    secret = "whsec_" + base64.b64encode(b"\x00\x01 key bytes \xff").decode()
    got: list[tuple[bytes, dict[str, str]]] = []
    httpserver.expect_request("/hook").respond_with_handler(
        lambda r: (got.append((r.get_data(), dict(r.headers))), Response("", status=204))[1]
    )
    channel = make_channel("webhook", httpserver.url_for("/hook"), secret=SecretStr(secret))
    channel.send({"event": "firing"}, idempotency_key="msg-9")
    raw, headers = got[0]
    assert Webhook(secret).verify(raw, headers) == {"event": "firing"}
