"""No secret reaches a log line: a real ``medmon probe run`` at DEBUG against a gateway on 127.0.0.1
(pytest-httpserver's werkzeug server) that echoes the API key in its 401, and the filter on
records with arguments, tracebacks and extra fields."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from medmon.monitor.plan.model import parse_plan
from medmon.monitor.plan.privacy import secret_values
from medmon.scrub import SecretFilter, mask_credentials
from tests.conftest import plan_dict
from tests.monitor.service_helpers import KEY_ENV, start_medmon, wait_for, write_plan

KEY = "sk-live-LOGsecret0123456789"
BROKER_PASSWORD = "brokerPASS77"
OTEL_PASSWORD = "otelPASS55"
MEDMON = [sys.executable, "-m", "medmon"]


def _echo_the_key(request: Request) -> Response:
    """A gateway that refuses the key and quotes it back, in its body and in headers (as some
    gateways and debugging proxies do)."""
    key = request.headers.get("Authorization", "").removeprefix("Bearer ")
    body = {"error": {"message": f"Incorrect API key provided: {key}", "code": "invalid_api_key"}}
    return Response(
        json.dumps(body),
        status=401,
        content_type="application/json",
        headers={"X-Echo-Authorization": f"Bearer {key}", "X-Rejected-Key": key},
    )


@pytest.mark.process
def test_probe_run_at_debug_logs_no_key_echoed_by_the_endpoint(
    tmp_path: Path, db_url: str, httpserver: HTTPServer
) -> None:
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(_echo_the_key)
    data = plan_dict(storage={"url": db_url})
    data["deployment"] |= {
        "base_url": httpserver.url_for("/v1"),
        "model": "clinical",
        "api_key_env": "MEDMON_LOG_TEST_KEY",
    }
    data["tasks"][0]["sample_size"] = 3
    plan_path, log_file = tmp_path / "plan.yaml", tmp_path / "medmon.log"
    plan_path.write_text(yaml.safe_dump(data))
    env = os.environ | {
        "DO_NOT_TRACK": "1",
        "MEDMON_LOG_TEST_KEY": KEY,
        "MEDMON_BROKER_URL": f"redis://:{BROKER_PASSWORD}@127.0.0.1:6379/0",
    }
    run = subprocess.run(
        [*MEDMON, "--log-level", "DEBUG", "--log-file", str(log_file), "probe", "run", str(plan_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    logged = log_file.read_text("utf-8")
    assert run.returncode == 4, run.stderr[-3000:]  # the endpoint refused every call
    assert len(httpserver.log) == 3 and all(r.headers["Authorization"] == f"Bearer {KEY}" for r, _ in httpserver.log)
    assert "3 x HTTP 401 Incorrect API key provided: ***" in run.stdout
    # DEBUG was really on, the libraries' lines included (openai's client; httpx2's request lines).
    assert "DEBUG openai._base_client: HTTP Response: POST 401" in logged and "INFO httpx2" in logged, logged[-3000:]
    for where, text in (("stdout", run.stdout), ("stderr", run.stderr), ("log file", logged)):
        assert KEY not in text, f"{where} leaks the key"
        assert KEY[8:20] not in text, f"{where} leaks part of the key"
        assert BROKER_PASSWORD not in text, f"{where} leaks the broker password"
    assert logged.splitlines()[-1] in run.stderr  # the same lines go to stderr


@pytest.mark.process
def test_serve_at_debug_masks_a_password_in_a_logged_url_and_the_echoed_key(
    tmp_path: Path, db_url: str, httpserver: HTTPServer
) -> None:
    """The service logs where it exports telemetry: a collector URL with a password is a log
    line that carries a secret with no filter at all."""
    httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(_echo_the_key)
    plan = write_plan(tmp_path / "plan.yaml", httpserver.url_for("").rstrip("/"), db_url, schedule="1s", sample_size=2)
    served = start_medmon(
        ["--log-level", "DEBUG", "serve", str(plan), "--health-port", "0"],
        tmp_path / "serve.log",
        {
            KEY_ENV: KEY,
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://otel:{OTEL_PASSWORD}@127.0.0.1:9",
            "MEDMON_BROKER_URL": f"redis://:{BROKER_PASSWORD}@127.0.0.1:6379/0",
        },
    )
    try:
        served.wait_log("leading as", timeout=120)
        wait_for(lambda: len(httpserver.log) >= 2, 60, what="a probe against the gateway")
        served.wait_log("HTTP Response: POST 401", timeout=30)
    finally:
        assert served.stop() == 0, served.text()[-3000:]
    text = served.text()
    assert "exporting telemetry to http://otel:***@127.0.0.1:9" in text, text[-3000:]
    assert "DEBUG apscheduler" in text  # DEBUG reached the libraries (not quietened as at INFO)
    for secret in (KEY, KEY[8:20], OTEL_PASSWORD, BROKER_PASSWORD):
        assert secret not in text


def _record(msg: str, *args: object, exc: BaseException | None = None, **extra: object) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    record = logging.LogRecord("openai._base_client", logging.DEBUG, __file__, 1, msg, args or None, exc_info)
    for name, value in extra.items():
        setattr(record, name, value)
    return record


def _format(record: logging.LogRecord, fmt: str = "%(levelname)s %(name)s: %(message)s") -> str:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(SecretFilter([KEY, "s3cr3t-route-token"]))
    handler.handle(record)
    return out.getvalue()


def test_the_filter_masks_arguments_tracebacks_and_extra_fields() -> None:
    try:
        raise RuntimeError(f"Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: {KEY}'}}}}")
    except RuntimeError as exc:
        failure = exc
    text = _format(
        _record(
            "Request options: %s",
            {"headers": {"Authorization": f"Bearer {KEY}"}},
            exc=failure,
            route="https://hooks.slack.com/services/s3cr3t-route-token",
            attempt=2,
        ),
        "%(levelname)s %(name)s: %(message)s [%(route)s] try %(attempt)d",
    )
    assert KEY not in text and "s3cr3t-route-token" not in text
    assert "Request options: {'headers': {'Authorization': 'Bearer ***'}}" in text
    assert "Traceback (most recent call last)" in text and "Incorrect API key provided: ***" in text
    assert "[https://hooks.slack.com/services/***] try 2" in text


def test_the_filter_masks_credential_shapes_it_was_not_told_about() -> None:
    text = _format(
        _record(
            "connecting to %s with %r; got %s",
            "postgresql://medmon:pgPASS99@db.internal/medmon",
            {"api-key": "azure0123456789"},
            "Bearer eyJhbGciOiJIUzI1NiJ9.unknown",
        )
    )
    assert "pgPASS99" not in text and "azure0123456789" not in text and "eyJhbGciOiJIUzI1NiJ9" not in text
    assert "postgresql://medmon:***@db.internal/medmon" in text and "'api-key': '***'" in text


def test_ordinary_text_is_left_alone() -> None:
    for text in (
        "prior authorization: approved",
        "the bearer token was rejected",
        "http://127.0.0.1:8000/v1",
        "api_key_env MEDMON_KEY is not set",
    ):
        assert mask_credentials(text) == text


def test_a_record_whose_arguments_do_not_fit_is_still_masked_and_kept() -> None:
    text = _format(_record("two slots %s %s", KEY))
    assert KEY not in text and "two slots" in text


def test_the_plan_names_every_secret_it_refers_to(monkeypatch: pytest.MonkeyPatch) -> None:
    data = plan_dict(storage={"url": "postgresql://medmon:STORAGEpw1@db/medmon"})
    data["deployment"]["header_env"] = {"X-Gateway-Key": "GATEWAY_KEY"}
    data["traffic"] = {"token_env": "TRAFFIC_TOKEN_T"}
    data["oversight"] = {"suspend": {"url_env": "SUSPEND_URL", "secret_env": "SUSPEND_SECRET"}}
    env = {
        "MEDMON_TEST_KEY": "key-aaaa",
        "GATEWAY_KEY": "gw-bbbb",
        "TRAFFIC_TOKEN_T": "tok-cccc",
        "SUSPEND_URL": "https://ehr/suspend",
        "SUSPEND_SECRET": "sus-dddd",
        "MEDMON_DATABASE_URL": "postgresql://u:ENVpw2@db/x",
    }
    values = set(secret_values(parse_plan(yaml.safe_dump(data)), env))
    assert {"key-aaaa", "gw-bbbb", "tok-cccc", "https://ehr/suspend", "sus-dddd", "STORAGEpw1", "ENVpw2"} <= values
