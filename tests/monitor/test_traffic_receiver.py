"""The OTLP/HTTP receiver: what stock exporters send is stored once; bad input gets the status OTLP specifies."""

from __future__ import annotations

import gzip
import json
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult
from sqlalchemy import text
from sqlmodel import Session, func, select

from medmon.db import session_scope
from medmon.monitor.models import TrafficRejection, TrafficRollup, TrafficSpan
from medmon.monitor.service.receiver import MissingToken, create_receiver, receiver_token
from medmon.monitor.traffic.streams import traffic_pass
from tests.monitor.traffic_helpers import MODEL, export_body, genai_attributes, make_spans, traffic_plan

PROTO = {"Content-Type": "application/x-protobuf"}


@pytest.fixture
def receiver(engine, db_url, serve):  # type: ignore[no-untyped-def]
    plan = traffic_plan(db_url)
    return serve(create_receiver(engine, plan, token="sekret")).url


def _count(engine, **where) -> int:  # type: ignore[no-untyped-def]
    with Session(engine) as s:
        q = select(func.count()).select_from(TrafficSpan)
        for k, v in where.items():
            q = q.where(getattr(TrafficSpan, k) == v)
        return int(s.exec(q).one())


def _rejections(engine) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with Session(engine) as s:
        return {r.reason: r.count for r in s.exec(select(TrafficRejection)).all()}


def test_the_sdk_exporter_gzip_protobuf_is_stored_routed_and_priced_once(engine, receiver) -> None:
    spans = make_spans(
        [
            genai_attributes(tokens=(100, 200)),
            genai_attributes(**{"medmon.task": "triage"}),
            genai_attributes(served=None, tokens=(10, 10)),
        ]
    )
    exporter = OTLPSpanExporter(
        endpoint=f"{receiver}/v1/traces", headers={"Authorization": "Bearer sekret"}, compression=Compression.Gzip
    )
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    assert exporter.export(spans) == SpanExportResult.SUCCESS  # a retried batch is not counted twice
    assert _count(engine) == 3
    assert _count(engine, task_id="triage") == 1 and _count(engine, task_id="discharge") == 2
    with Session(engine) as s:
        row = s.exec(select(TrafficSpan).where(TrafficSpan.input_tokens == 100)).one()
    assert row.cost_usd == pytest.approx((100 * 5 + 200 * 15) / 1e6)
    assert row.response_model == MODEL and row.finish_reason == "stop" and row.latency_s == pytest.approx(0.8)
    assert row.trace_id == format(spans[0].context.trace_id, "032x") and row.has_content is False


def test_unmatched_calls_are_kept_and_counted_per_model_not_dropped(engine, db_url, receiver) -> None:
    body = export_body(
        make_spans(
            [genai_attributes(), genai_attributes(model="gpt-x", served="gpt-x-0613"), genai_attributes()],
            service="billing-app",
        )
    )
    r = httpx.post(f"{receiver}/v1/traces", content=body, headers=PROTO | {"Authorization": "Bearer sekret"})
    assert r.status_code == 200
    assert _count(engine) == 3 and _count(engine, task_id=None) == 3
    with session_scope(engine) as s:
        done = traffic_pass(s, traffic_plan(db_url), datetime.now(UTC))
    assert (done.spans, done.unmatched) == (3, 3)
    with Session(engine) as s:
        rolled = {r.model: r.calls for r in s.exec(select(TrafficRollup).where(TrafficRollup.task_id == "")).all()}
    assert rolled == {MODEL: 2, "gpt-x-0613": 1}


def test_otlp_json_as_the_specification_writes_it_is_accepted(engine, receiver) -> None:
    now_ns = time.time_ns()
    export = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "discharge-app"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "my.library", "version": "1.0.0"},
                        "spans": [
                            {
                                "traceId": "5B8EFFF798038103D269B633813FC60C",
                                "spanId": "EEE19B7EC3C1B174",
                                "name": f"chat {MODEL}",
                                "kind": 3,
                                "startTimeUnixNano": str(now_ns - 2_000_000_000),
                                "endTimeUnixNano": str(now_ns),
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                    {"key": "gen_ai.request.model", "value": {"stringValue": MODEL}},
                                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
                                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 30}},
                                    {
                                        "key": "gen_ai.response.finish_reasons",
                                        "value": {"arrayValue": {"values": [{"stringValue": "length"}]}},
                                    },
                                    {
                                        "key": "gen_ai.output.messages",
                                        "value": {
                                            "stringValue": json.dumps(
                                                [
                                                    {
                                                        "role": "assistant",
                                                        "parts": [
                                                            {"type": "text", "content": "I can't help with that."}
                                                        ],
                                                    }
                                                ]
                                            )
                                        },
                                    },
                                ],
                                "status": {},
                                "unknownFutureField": 1,
                            }
                        ],
                    }
                ],
            }
        ]
    }
    r = httpx.post(f"{receiver}/v1/traces", json=export, headers={"Authorization": "Bearer sekret"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    assert "partialSuccess" not in r.json()
    with Session(engine) as s:
        row = s.exec(select(TrafficSpan)).one()
    assert (row.trace_id, row.span_id) == ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")
    assert (row.input_tokens, row.output_tokens, row.finish_reason) == (12, 30, "length")
    assert row.latency_s == pytest.approx(2.0) and row.refused is True and row.has_content


def test_spans_with_impossible_values_are_refused_with_reasons_and_the_rest_kept(engine, receiver) -> None:
    now = datetime.now(UTC)
    future = int((now + timedelta(days=2)).timestamp() * 1e9)
    old = int((now - timedelta(days=30)).timestamp() * 1e9)
    spans = make_spans(
        [
            genai_attributes(),  # fine
            genai_attributes(tokens=(-5, 10)),
            genai_attributes(tokens=(10, 9_000_000_000)),
            {**genai_attributes(), "_end_ns": future},
            {**genai_attributes(), "_end_ns": old},
            {"gen_ai.operation.name": "chat"},  # no model at all
            {"http.request.method": "GET"},  # another instrumentation's span: skipped, not refused
        ]
    )
    r = httpx.post(
        f"{receiver}/v1/traces", content=export_body(spans), headers=PROTO | {"Authorization": "Bearer sekret"}
    )
    assert r.status_code == 200
    reply = ExportTraceServiceResponse.FromString(r.content)
    assert reply.partial_success.rejected_spans == 5
    message = reply.partial_success.error_message
    assert "2 span(s) refused: token counts negative or beyond" in message
    assert "ends further in the future" in message and "ended longer ago" in message
    assert "without gen_ai.request.model" in message
    assert _count(engine) == 1
    assert _rejections(engine) == {"absurd_tokens": 2, "future": 1, "too_old": 1, "no_model": 1, "not_genai": 1}


@pytest.mark.parametrize(
    ("headers", "body", "status", "says"),
    [
        ({"Authorization": "Bearer wrong"}, b"", 401, "bearer token"),
        ({}, b"", 401, "bearer token"),
        ({"Authorization": "Bearer sekret", "Content-Type": "text/plain"}, b"hi", 415, "unsupported content type"),
        ({"Authorization": "Bearer sekret"}, b"\x0a\xff\xff\xff\xff\x0f", 400, "not an OTLP protobuf"),
        ({"Authorization": "Bearer sekret", "Content-Encoding": "gzip"}, b"not gzip", 400, "not valid gzip"),
        ({"Authorization": "Bearer sekret", "Content-Encoding": "br"}, b"x", 400, "unsupported Content-Encoding"),
    ],
)
def test_bad_requests_get_the_otlp_status_and_a_readable_reason(engine, receiver, headers, body, status, says) -> None:
    r = httpx.post(f"{receiver}/v1/traces", content=body, headers=PROTO | headers)
    assert r.status_code == status
    assert says in status_pb2.Status.FromString(r.content).message
    assert _count(engine) == 0


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "body is not JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"resourceSpans": 3}', "not an OTLP trace export"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', "is not hex"),
    ],
)
def test_malformed_json_is_a_400_naming_the_problem(engine, receiver, body, says) -> None:
    r = httpx.post(
        f"{receiver}/v1/traces",
        content=body,
        headers={"Authorization": "Bearer sekret", "Content-Type": "application/json"},
    )
    assert r.status_code == 400
    assert says in r.json()["message"]


def test_a_body_over_the_limit_is_a_413(engine, receiver, monkeypatch) -> None:
    monkeypatch.setattr("medmon.monitor.service.receiver.MAX_BODY", 1000)
    r = httpx.post(f"{receiver}/v1/traces", content=b"x" * 2000, headers=PROTO | {"Authorization": "Bearer sekret"})
    assert r.status_code == 413 and "send smaller batches" in status_pb2.Status.FromString(r.content).message


def test_a_gzip_json_body_is_read(engine, receiver) -> None:
    body = gzip.compress(json.dumps({"resourceSpans": []}).encode())
    r = httpx.post(
        f"{receiver}/v1/traces",
        content=body,
        headers={"Authorization": "Bearer sekret", "Content-Type": "application/json", "Content-Encoding": "gzip"},
    )
    assert r.status_code == 200 and r.json() == {}


def test_database_down_is_a_503_and_the_exporter_retry_loses_nothing(engine, receiver) -> None:
    spans = make_spans([genai_attributes() for _ in range(5)])
    with engine.begin() as conn:  # the table is gone for a moment: every insert fails
        conn.execute(text("ALTER TABLE trafficspan RENAME TO trafficspan_away"))
    r = httpx.post(
        f"{receiver}/v1/traces", content=export_body(spans), headers=PROTO | {"Authorization": "Bearer sekret"}
    )
    assert r.status_code == 503 and r.headers["retry-after"] == "2"
    result: list[SpanExportResult] = []
    exporter = OTLPSpanExporter(
        endpoint=f"{receiver}/v1/traces", headers={"Authorization": "Bearer sekret"}, timeout=20
    )
    worker = threading.Thread(target=lambda: result.append(exporter.export(spans)))
    worker.start()
    time.sleep(0.5)  # the exporter's first attempt is answered 503; it waits Retry-After
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE trafficspan_away RENAME TO trafficspan"))
    worker.join(30)
    assert result == [SpanExportResult.SUCCESS]
    assert _count(engine) == 5


def test_a_plan_token_variable_that_is_unset_refuses_to_start(db_url) -> None:
    plan = traffic_plan(db_url, token_env="MEDMON_TRAFFIC_TOKEN")
    with pytest.raises(MissingToken, match="MEDMON_TRAFFIC_TOKEN is not set"):
        receiver_token(plan.traffic, environ={})
    assert receiver_token(plan.traffic, environ={"MEDMON_TRAFFIC_TOKEN": "t"}) == "t"
    assert receiver_token(traffic_plan(db_url).traffic, environ={}) is None
