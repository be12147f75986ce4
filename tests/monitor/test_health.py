"""``/healthz`` and ``/metrics`` in process (httpx over ASGI), and OTLP export to a local collector."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from sqlmodel import Session, func, select
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from medmon.alerts import Alert, Notification, NotificationStatus
from medmon.monitor.models import DetectorState
from medmon.monitor.plan.context import load_context
from medmon.monitor.service.health import ServiceStatus, create_health_app
from medmon.monitor.service.otlp import build_otlp
from medmon.monitor.service.slots import run_slot
from medmon.monitor.storage import make_engine
from medmon.probes.models import ProbeRun
from medmon.probes.packs import load_pack
from medmon.probes.simulator import Fault, Phase, create_simulator

NOW = datetime(2026, 11, 4, 12, 0, tzinfo=UTC)


def _get(app: Starlette, path: str) -> httpx.Response:
    async def call() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://medmon") as client:
            return await client.get(path)

    return asyncio.run(call())


def _probed(engine, make_plan, serve: Callable, probes: int = 3):  # type: ignore[no-untyped-def]
    app = create_simulator(load_pack("clinical_knowledge_mcq").canaries, [Phase(accuracy=0.85)], seed=2)
    sim = serve(app)
    plan = make_plan(
        deployment={
            "base_url": f"{sim.url}/v1",
            "model": "medmon-simulator/clinical-v1",
            "api_key_env": "X",
            "timeout_s": 5,
            "max_retries": 0,
        },
        alerts={"routes": [{"name": "hook", "url": "http://127.0.0.1:9/hook"}]},
    )
    ctx = load_context(plan, plan.tasks[0])
    app.state.sim.inject(Fault(kind="status", status=503, count=30))
    for i in range(probes):
        when = NOW - timedelta(hours=probes - i)
        run_slot(engine, plan, ctx, when, now=lambda when=when: when, by="t:1", seed=1)
    return plan


def test_healthz_is_200_for_a_live_leader_and_reports_last_probes(engine, make_plan, serve) -> None:
    plan = _probed(engine, make_plan, serve)
    status = ServiceStatus(identity="host:1", role="leader", heartbeat=lambda: NOW - timedelta(seconds=1))
    response = _get(create_health_app(engine, plan.tasks, status, now=lambda: NOW), "/healthz")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok" and body["role"] == "leader" and body["database"]["reachable"] is True
    [task] = body["tasks"]
    assert task["task"] == "knowledge-qa" and task["last_probe"] == (NOW - timedelta(hours=1)).isoformat()
    assert task["overdue"] is False and task["age_s"] == 3600.0


def test_healthz_is_503_when_the_scheduler_stalls_or_the_database_is_gone(engine, make_plan, tmp_path: Path) -> None:
    plan = make_plan()
    stalled = ServiceStatus(identity="host:1", role="leader", heartbeat=lambda: NOW - timedelta(minutes=5))
    response = _get(create_health_app(engine, plan.tasks, stalled, now=lambda: NOW), "/healthz")
    assert response.status_code == 503 and "scheduler heartbeat is stale" in response.json()["problems"]
    assert response.json()["tasks"][0]["overdue"] is True, "a task never probed is overdue"

    standby = ServiceStatus(identity="host:2", role="standby")
    assert _get(create_health_app(engine, plan.tasks, standby, now=lambda: NOW), "/healthz").status_code == 200

    (tmp_path / "gone").mkdir()
    unreachable = make_engine(f"sqlite:///{tmp_path / 'gone'}", create=False)  # a directory is no database
    response = _get(create_health_app(unreachable, plan.tasks, standby, now=lambda: NOW), "/healthz")
    assert response.status_code == 503
    assert response.json()["database"]["reachable"] is False and response.json()["database"]["error"]
    metrics = _get(create_health_app(unreachable, plan.tasks, standby, now=lambda: NOW), "/metrics")
    assert metrics.status_code == 200 and "medmon_database_up 0.0" in metrics.text


def test_metrics_count_what_the_database_holds(engine, make_plan, serve) -> None:
    plan = _probed(engine, make_plan, serve, probes=4)
    status = ServiceStatus(
        identity="host:1", role="leader", heartbeat=lambda: NOW - timedelta(seconds=2), queue_depth=lambda: 7
    )
    response = _get(create_health_app(engine, plan.tasks, status, now=lambda: NOW), "/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }
    with Session(engine) as s:
        n_runs = s.exec(select(func.count()).select_from(ProbeRun)).one()
        n_results = s.exec(select(func.sum(ProbeRun.n_canaries))).one()
        n_errors = s.exec(select(func.sum(ProbeRun.n_errors))).one()
        pending = s.exec(
            select(func.count()).select_from(Notification).where(Notification.status == NotificationStatus.pending)
        ).one()
        firing = s.exec(select(func.count()).select_from(Alert)).one()
        streams = s.exec(select(func.count()).select_from(DetectorState)).one()
    task = (("task", "knowledge-qa"),)
    assert samples[("medmon_probe_runs_total", (("status", "complete"), ("task", "knowledge-qa")))] == n_runs == 4
    assert samples[("medmon_probe_results_total", task)] == n_results
    assert samples[("medmon_probe_errors_total", task)] == n_errors >= 30  # the injected 503s (and any breaker trips)
    assert samples[("medmon_last_probe_timestamp_seconds", task)] == (NOW - timedelta(hours=1)).timestamp()
    assert samples[("medmon_outbox_queue_depth", ())] == pending
    assert sum(v for (name, _), v in samples.items() if name == "medmon_alerts") == firing >= 1
    assert sum(v for (name, _), v in samples.items() if name == "medmon_detector_streams") == streams >= 2
    assert samples[("medmon_leader", (("identity", "host:1"),))] == 1.0
    assert samples[("medmon_scheduler_heartbeat_age_seconds", ())] == 2.0
    assert samples[("medmon_celery_queue_depth", ())] == 7
    assert samples[("medmon_database_up", ())] == 1.0


def test_otlp_is_off_unless_configured_and_exports_spans_to_the_collector(serve: Callable) -> None:
    assert build_otlp(None, environ={}) is None
    received: list[tuple[str, str, int]] = []

    async def collect(request: Request) -> Response:
        received.append((request.url.path, request.headers.get("content-type", ""), len(await request.body())))
        return Response(b"", media_type="application/x-protobuf")

    collector = serve(
        Starlette(
            routes=[Route("/v1/traces", collect, methods=["POST"]), Route("/v1/metrics", collect, methods=["POST"])]
        )
    )
    from_env = build_otlp(None, environ={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url + "/"})
    assert from_env is not None and from_env.endpoint == collector.url
    from_env.shutdown()
    telemetry = build_otlp(collector.url, deployment="test")
    assert telemetry is not None
    with telemetry.tracer_provider.get_tracer("medmon.test").start_as_current_span("probe knowledge-qa"):
        pass
    telemetry.meter_provider.get_meter("medmon.test").create_counter("medmon.test.count").add(1)
    assert telemetry.tracer_provider.force_flush(10_000) and telemetry.meter_provider.force_flush(10_000)
    telemetry.shutdown()
    paths = {path for path, _, _ in received}
    assert paths == {"/v1/traces", "/v1/metrics"}
    assert all(kind == "application/x-protobuf" and size > 0 for _, kind, size in received)
