"""A real Prometheus Alertmanager on 127.0.0.1: medmon posts to its API v2, Alertmanager's webhook
reaches a local receiver, first firing, then resolved (with the labels and annotations medmon sent)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy.engine import Engine
from sqlmodel import Session
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from medmon.alerts import NotifyPolicy, RouteSpec, apply_signals, deliver_due, flush
from medmon.alerts.channels import AlertmanagerChannel, AlertmanagerConfig
from medmon.alerts.rules import Rule
from medmon.monitor.service.webserver import RunningServer
from tests.alerts.helpers import FakeClock, clear, fire
from tests.conftest import stop_process

BINARY = shutil.which("prometheus-alertmanager")
pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(
        BINARY is None,
        reason="prometheus-alertmanager is not installed "
        "(apt-get install prometheus-alertmanager; `make test` does it)",
    ),
]

CONFIG = """\
global: {{resolve_timeout: 5m}}
route: {{receiver: medmon, group_by: [alertname, task], group_wait: 1s, group_interval: 1s, repeat_interval: 1h}}
receivers:
  - name: medmon
    webhook_configs: [{{url: "{url}", send_resolved: true}}]
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def webhooks(serve: Callable[[object], RunningServer]) -> tuple[str, list[dict[str, Any]]]:
    got: list[dict[str, Any]] = []

    async def receive(request: Request) -> Response:
        got.append(await request.json())
        return Response(status_code=200)

    server = serve(Starlette(routes=[Route("/am", receive, methods=["POST"])]))
    return f"{server.url}/am", got


@pytest.fixture
def alertmanager(tmp_path: Path, webhooks: tuple[str, list[dict[str, Any]]]) -> Iterator[str]:
    assert BINARY is not None
    config = tmp_path / "alertmanager.yml"
    config.write_text(CONFIG.format(url=webhooks[0]))
    port = free_port()
    log = (tmp_path / "alertmanager.log").open("w")
    proc = subprocess.Popen(
        [
            BINARY,
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        assert proc.poll() is None, (tmp_path / "alertmanager.log").read_text()
        try:
            return httpx.get(f"{url}/-/ready", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(ready, 20, "Alertmanager to be ready")
        yield url
    finally:
        stop_process(proc)
        log.close()


def test_alertmanager_receives_firing_then_resolved(
    engine: Engine, alertmanager: str, webhooks: tuple[str, list[dict[str, Any]]]
) -> None:
    _, got = webhooks
    clock = FakeClock(datetime.now(UTC) - timedelta(minutes=5))  # stays behind Alertmanager's clock
    policy = NotifyPolicy(
        routes=(
            RouteSpec(
                "am",
                group_interval=timedelta(seconds=10),
                repeat_interval=timedelta(minutes=1),
                repeat_acknowledged=True,
            ),
        )
    )
    channels = {"am": AlertmanagerChannel(AlertmanagerConfig(name="am", url=SecretStr(alertmanager)))}
    with Session(engine) as s:  # two rules see one accuracy drop: one incident, one Alertmanager alert
        apply_signals(
            s,
            [
                fire(task="dosing", summary="dosing: score dropped below its baseline"),
                fire(task="dosing", rule=Rule.below_minimum, summary="dosing: below the approved minimum"),
            ],
            policy,
            clock(),
        )
        s.commit()
    assert deliver_due(engine, channels, clock).delivered == 1
    wait_for(lambda: any(w["status"] == "firing" for w in got), 20, "a firing webhook from Alertmanager")
    firing = next(w for w in got if w["status"] == "firing")
    (alert,) = firing["alerts"]
    assert alert["labels"]["alertname"] == "accuracy" and alert["labels"]["task"] == "dosing"
    assert alert["labels"]["severity"] == "critical" and alert["labels"]["incident"].isdigit()
    assert alert["annotations"]["summary"] == "dosing: score dropped below its baseline"
    assert alert["annotations"]["signals"].splitlines() == [
        "[firing] dosing: score dropped below its baseline",
        "[firing] dosing: below the approved minimum",
    ]
    assert alert["generatorURL"] == "http://127.0.0.1:8501/task?task=dosing"
    assert alert["endsAt"] == "0001-01-01T00:00:00Z"

    clock.advance(seconds=30)  # a re-post while firing keeps it alive in Alertmanager
    with Session(engine) as s:
        assert [n.event for n in flush(s, policy, clock())] == []
        clock.advance(seconds=31)
        assert [n.event for n in flush(s, policy, clock())] == ["repeat"]
        clock.advance(seconds=10)
        apply_signals(
            s, [clear(task="dosing"), clear(task="dosing", rule=Rule.below_minimum)], policy, clock()
        )  # the incident closes: posted with endsAt
        s.commit()
    assert deliver_due(engine, channels, clock).delivered == 2
    wait_for(lambda: any(w["status"] == "resolved" for w in got), 20, "a resolved webhook from Alertmanager")
    resolved = next(w for w in got if w["status"] == "resolved")
    (done,) = resolved["alerts"]
    assert done["fingerprint"] == alert["fingerprint"] and done["endsAt"] != "0001-01-01T00:00:00Z"
    assert datetime.fromisoformat(done["endsAt"].replace("Z", "+00:00")) <= datetime.now(UTC)
