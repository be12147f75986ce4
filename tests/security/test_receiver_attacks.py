"""The review's attacks on the OTLP receiver, re-run against a real HTTP server: compression bombs,
chunked bodies past the limit, deep JSON, one bad span in an export, PHI and secrets in span
labels, and a flood of requests. Set MEDMON_TEST_DATABASE=postgresql for the NUL case on PostgreSQL."""

from __future__ import annotations

import gzip
import json
import os
import select as select_module
import socket
import threading
import time
import zlib
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from sqlmodel import Session, select

from medmon.monitor.models import TrafficSpan
from medmon.monitor.service import receiver as receiver_module
from medmon.monitor.service.receiver import MAX_BODY, create_receiver
from medmon.monitor.traffic.spans import MAX_DECODED, TooLarge, decompress
from tests.monitor.traffic_helpers import export_body, genai_attributes, make_spans, traffic_plan

PROTO = {"Content-Type": "application/x-protobuf", "Authorization": "Bearer sekret"}


@pytest.fixture
def receiver(engine, db_url, serve):  # type: ignore[no-untyped-def]
    return serve(create_receiver(engine, traffic_plan(db_url), token="sekret")).url


def _bomb(encoding: str, inflated: int = MAX_DECODED + 16 * 1024 * 1024) -> bytes:
    """Zeros compressed as tightly as the format allows (about 1,000 to 1)."""
    if encoding == "gzip":
        out = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    else:
        out = zlib.compressobj(9)
    block = bytes(1024 * 1024)
    return b"".join(out.compress(block) for _ in range(inflated // len(block))) + out.flush()


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_small_body_that_inflates_past_the_cap_is_refused_with_413(receiver, encoding: str) -> None:
    body = _bomb(encoding)
    assert len(body) < 64 * 1024  # a 64 KiB body: about 48 MiB once inflated
    started = time.perf_counter()
    r = httpx.post(f"{receiver}/v1/traces", content=body, headers=PROTO | {"Content-Encoding": encoding}, timeout=30)
    assert r.status_code == 413, r.text
    assert time.perf_counter() - started < 10


def test_inflating_stops_at_the_cap_and_multi_member_gzip_still_reads() -> None:
    with pytest.raises(TooLarge):
        decompress(_bomb("gzip"), "gzip", limit=1024 * 1024)
    assert decompress(gzip.compress(b"ab") + gzip.compress(b"cd"), "gzip") == b"abcd"
    assert decompress(zlib.compress(b"xyz"), "deflate") == b"xyz"


def test_a_chunked_body_past_the_limit_is_refused_as_it_arrives(receiver) -> None:
    """No Content-Length: the exporter streams. The 413 must come back while it is still sending."""
    host, port = receiver.removeprefix("http://").split(":")
    block = bytes(1024 * 1024)
    chunk = f"{len(block):x}\r\n".encode() + block + b"\r\n"
    sent = 0
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
            b"Authorization: Bearer sekret\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        reply = b""
        while sent < MAX_BODY * 3 and not reply:
            try:
                sock.sendall(chunk)
            except OSError:
                break  # the server closed after answering
            sent += len(block)
            if select_module.select([sock], [], [], 0)[0]:
                reply = sock.recv(4096)
        reply = reply or sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
    assert sent < MAX_BODY * 2  # answered as the body passed the limit, not after reading it whole


def test_deep_json_is_a_400_not_a_500(receiver) -> None:
    body = b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    r = httpx.post(
        f"{receiver}/v1/traces", content=body, headers={"Content-Type": "application/json"} | PROTO, timeout=30
    )
    assert r.status_code == 400


def test_one_bad_span_is_refused_alone_and_the_rest_of_the_export_is_stored(engine, receiver) -> None:
    deep = "[" * 5000 + "]" * 5000
    spans = make_spans(
        [
            genai_attributes(tokens=(11, 12)),
            genai_attributes(**{"gen_ai.usage.input_tokens": float("inf")}),  # an infinite token count
            genai_attributes(_error="Timeout\x00"),  # a NUL: PostgreSQL refuses it in text
            genai_attributes(**{"gen_ai.input.messages": deep}),  # message JSON nested too deeply
            genai_attributes(tokens=(21, 22)),
        ]
    )
    r = httpx.post(f"{receiver}/v1/traces", content=export_body(spans), headers=PROTO)
    assert r.status_code == 200
    reply = ExportTraceServiceResponse.FromString(r.content)
    assert reply.partial_success.rejected_spans == 3
    assert "NUL" in reply.partial_success.error_message
    with Session(engine) as s:
        stored = sorted(row.input_tokens or 0 for row in s.exec(select(TrafficSpan)).all())
    assert stored == [11, 21]


def test_span_labels_are_redacted_and_secrets_blanked_before_storage(engine, db_url, serve, monkeypatch) -> None:
    monkeypatch.setenv("MEDMON_TEST_KEY", "sk-live-0123456789abcdef")
    plan = traffic_plan(db_url)
    plan = plan.model_copy(update={"deployment": plan.deployment.model_copy(update={"api_key_env": "MEDMON_TEST_KEY"})})
    url = serve(create_receiver(engine, plan, token="sekret")).url
    spans = make_spans(
        [
            genai_attributes(
                finish="stop for patient John Smith MRN 00123456",
                _error="KeyError: sk-live-0123456789abcdef for john.smith@example.org",
            )
        ]
    )
    assert httpx.post(f"{url}/v1/traces", content=export_body(spans), headers=PROTO).status_code == 200
    with Session(engine) as s:
        row = s.exec(select(TrafficSpan)).one()
    stored = json.dumps([row.span_name, row.finish_reason, row.error_type])
    for leaked in ("00123456", "sk-live-0123456789abcdef", "john.smith@example.org"):
        assert leaked not in stored, stored


def test_a_flood_is_told_to_retry_instead_of_queueing_without_bound(engine, db_url, serve, monkeypatch) -> None:
    monkeypatch.setattr(receiver_module, "MAX_IN_FLIGHT", 1)
    url = serve(create_receiver(engine, traffic_plan(db_url), token="sekret")).url
    gate = threading.Event()

    def slow_body() -> Iterator[bytes]:
        yield b"\x0a"
        gate.wait(10)  # holds the one slot while the next request arrives

    holder = threading.Thread(
        target=lambda: httpx.post(f"{url}/v1/traces", content=slow_body(), headers=PROTO, timeout=30)
    )
    holder.start()
    time.sleep(0.5)
    try:
        r = httpx.post(f"{url}/v1/traces", content=export_body(make_spans([genai_attributes()])), headers=PROTO)
        assert r.status_code == 503 and r.headers["Retry-After"]
    finally:
        gate.set()
        holder.join(15)


@pytest.mark.skipif(os.environ.get("MEDMON_TEST_DATABASE") != "postgresql", reason="the NUL case needs PostgreSQL")
def test_on_postgresql_a_span_the_database_refuses_does_not_lose_the_export(engine, receiver) -> None:
    spans = make_spans([genai_attributes(tokens=(1, 1)), genai_attributes(_error="bad\x00byte"), genai_attributes()])
    r = httpx.post(f"{receiver}/v1/traces", content=export_body(spans), headers=PROTO)
    assert r.status_code == 200 and ExportTraceServiceResponse.FromString(r.content).partial_success.rejected_spans == 1
    with Session(engine) as s:
        assert len(s.exec(select(TrafficSpan)).all()) == 2


def test_a_row_the_database_refuses_is_refused_alone_and_the_others_are_stored(engine, db_url) -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    from medmon.monitor.traffic.ingest import Ingestor, store_calls
    from medmon.monitor.traffic.spans import Decoded
    from tests.monitor.traffic_helpers import calls_in_hours

    now = datetime.now(UTC)
    good = calls_in_hours(3, [(now.replace(minute=0, second=0, microsecond=0), 3)])
    bad = replace(good[1], trace_id=None)  # type: ignore[arg-type]  # a value no column takes (NOT NULL)
    decoded = Decoded(calls=[good[0], bad, good[2]])
    stored = store_calls(engine, Ingestor.from_plan(traffic_plan(db_url)), decoded, now)
    assert stored == 2 and decoded.refused["unstorable"] == 1
    with Session(engine) as s:
        assert len(s.exec(select(TrafficSpan)).all()) == 2
