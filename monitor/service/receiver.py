"""The OTLP/HTTP traces receiver of ``medmon serve``: ``POST /v1/traces`` on a port of its own.

It answers as the OTLP specification asks, so stock exporters behave: 200 with an
``ExportTraceServiceResponse`` (its ``partial_success`` says how many spans were refused and
why), 400 for a body that is not a trace export, 401 without the bearer token, 413 for a body
over the size limit, 415 for a content type other than protobuf or JSON, and 503 with
``Retry-After`` while the database cannot take the spans, so the exporter sends them again and
no accepted span is lost. Error bodies are a ``google.rpc.Status`` in the request's encoding.

A hostile or broken exporter cannot take ``medmon serve`` down with it: the body is read as it
arrives and refused (413) once it passes ``MAX_BODY``, declared or not (chunked); it inflates
through a capped stream (``spans.decompress``, at most ``MAX_DECODED`` bytes); decoding runs on a
pool of its own (``DECODE_WORKERS`` threads, off the event loop), and at most ``MAX_IN_FLIGHT``
requests are read or decoded at once; the next gets 503 with ``Retry-After``, so memory stays
bounded and the scheduler and alerting keep their threads. One bad span (a NUL character, an
infinite token count, message JSON nested too deeply) is refused alone with ``partial_success``;
the rest of the export is stored.

With ``traffic.judging`` and ``privacy.store_text: false``, the receiver also judges the sampled
exchanges it stored from memory (``medmon.monitor.traffic.memory_judging``), on a worker thread
that starts with the first one (``app.state.judging``).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from medmon.db import utcnow
from medmon.errors import MedmonError
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.traffic import Traffic
from medmon.monitor.traffic.ingest import Ingestor, store_calls
from medmon.monitor.traffic.memory_judging import InMemoryJudging, wanted
from medmon.monitor.traffic.routes import route_task
from medmon.monitor.traffic.spans import (
    JSON_TYPE,
    MAX_DECODED,
    PROTOBUF,
    Decoded,
    DecodeFailure,
    Limits,
    TooLarge,
    decode,
    decompress,
    parse_export,
)

log = logging.getLogger("medmon.receiver")

MAX_BODY = 32 * 1024 * 1024  # bytes on the wire, compressed or not
DECODE_WORKERS = 2  # threads that inflate and parse exports; the event loop only reads and answers
MAX_IN_FLIGHT = 4  # requests being read or decoded at once; the next is told to retry
RETRY_AFTER_S = 2


def decode_body(
    body: bytes, encoding: str | None, kind: str, at: datetime, plan: Plan, limits: Limits, tasks: frozenset[str] | None
) -> Decoded:
    """Inflate (capped), parse and read one export, keeping what the token may feed: the pool's work."""
    return permitted(decode(parse_export(decompress(body, encoding, MAX_DECODED), kind), at, limits), plan, tasks)


class MissingToken(MedmonError):
    """The plan names a token variable that is not set: refusing to start an open door."""


def receiver_token(traffic: Traffic | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The shared bearer token from the variable the plan names (None when the plan asks for none).

    Every application's token (``traffic.applications``) must be set too: checked here, at start."""
    env = os.environ if environ is None else environ
    if traffic is not None:
        application_tokens(traffic, env)
    name = traffic.token_env if traffic is not None else None
    if name is None:
        return None
    token = env.get(name)
    if not token:
        raise MissingToken(
            f"traffic.token_env: the environment variable {name} is not set; set it to the bearer "
            "token applications send, or set traffic.token_env to null to accept any caller"
        )
    return token


def application_tokens(traffic: Traffic, environ: Mapping[str, str] | None = None) -> dict[str, frozenset[str]]:
    """Each application's token and the tasks it may feed (``traffic.applications``)."""
    env = os.environ if environ is None else environ
    out = {}
    for i, app in enumerate(traffic.applications):
        token = env.get(app.token_env)
        if not token:
            raise MissingToken(
                f"traffic.applications[{i}].token_env: the environment variable {app.token_env} "
                f"(application {app.name!r}) is not set"
            )
        out[token] = frozenset(app.tasks)
    return out


def permitted(decoded: Decoded, plan: Plan, tasks: frozenset[str] | None) -> Decoded:
    """``decoded`` without the calls that route to a task this token may not feed (refused, counted)."""
    if tasks is None or plan.traffic is None:
        return decoded
    kept = []
    for call in decoded.calls:
        task = route_task(plan.traffic.routes, call)
        if task is None or task in tasks:
            kept.append(call)
        else:
            decoded.refused["not_permitted"] += 1
    decoded.calls = kept
    return decoded


def _encode(message: Message, kind: str) -> Response:
    if kind == JSON_TYPE:
        return Response(json_format.MessageToJson(message, indent=None), media_type=JSON_TYPE)
    return Response(message.SerializeToString(), media_type=PROTOBUF)


def _status(code: int, http: int, message: str, kind: str, headers: dict[str, str] | None = None) -> Response:
    response = _encode(status_pb2.Status(code=code, message=message), kind)
    response.status_code = http
    if headers:
        response.headers.update(headers)
    return response


def create_receiver(
    engine: Engine, plan: Plan, *, token: str | None, now: Callable[[], datetime] = utcnow
) -> Starlette:
    """The ASGI app receiving OTLP/HTTP traces into ``engine``."""
    ingestor = Ingestor.from_plan(plan)
    judging = InMemoryJudging(engine, plan, now=now) if wanted(plan) else None
    shared: dict[str, frozenset[str] | None] = {token: None} if token is not None else {}
    apps: dict[str, frozenset[str] | None] = dict(application_tokens(plan.traffic)) if plan.traffic else {}
    expected = [(f"Bearer {t}".encode(), tasks) for t, tasks in (shared | apps).items()]
    pool = ThreadPoolExecutor(max_workers=DECODE_WORKERS, thread_name_prefix="otlp-decode")
    busy = [0]  # requests being read or decoded (the event loop is the only writer)

    async def traces(request: Request) -> Response:
        kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        reply_kind = kind if kind in (PROTOBUF, JSON_TYPE) else PROTOBUF
        sent = request.headers.get("authorization", "").encode()
        matches = [tasks for value, tasks in expected if hmac.compare_digest(sent, value)]  # every one compared
        if expected and not matches:
            return _status(code_pb2.UNAUTHENTICATED, 401, "missing or wrong bearer token", reply_kind)
        tasks = matches[0] if matches else None
        if kind not in (PROTOBUF, JSON_TYPE):
            return _status(
                code_pb2.INVALID_ARGUMENT,
                415,
                f"unsupported content type {kind or '(none)'!r}; expected {PROTOBUF} or {JSON_TYPE}",
                PROTOBUF,
            )
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:  # refused before reading it
            return _status(code_pb2.RESOURCE_EXHAUSTED, 413, f"body over {MAX_BODY} bytes; send smaller batches", kind)
        if busy[0] >= MAX_IN_FLIGHT:
            return _status(code_pb2.UNAVAILABLE, 503, "receiver busy; retry", kind, {"Retry-After": str(RETRY_AFTER_S)})
        busy[0] += 1
        try:
            body = bytearray()
            async for chunk in request.stream():  # chunked bodies are counted as they arrive
                body += chunk
                if len(body) > MAX_BODY:
                    return _status(
                        code_pb2.RESOURCE_EXHAUSTED, 413, f"body over {MAX_BODY} bytes; send smaller batches", kind
                    )
            at = now()
            loop = asyncio.get_running_loop()
            encoding = request.headers.get("content-encoding")
            decoded = await loop.run_in_executor(
                pool, decode_body, bytes(body), encoding, kind, at, plan, ingestor.limits, tasks
            )
        except TooLarge as exc:
            return _status(code_pb2.RESOURCE_EXHAUSTED, 413, str(exc), kind)
        except DecodeFailure as exc:
            return _status(code_pb2.INVALID_ARGUMENT, 400, str(exc), kind)
        finally:
            busy[0] -= 1
            del body
        try:
            await run_in_threadpool(store_calls, engine, ingestor, decoded, at)
        except SQLAlchemyError as exc:
            log.warning(
                "could not store %d span(s), asking the exporter to retry: %s",
                len(decoded.calls),
                str(exc).splitlines()[0][:200],
            )
            return _status(
                code_pb2.UNAVAILABLE, 503, "storage unavailable; retry", kind, {"Retry-After": str(RETRY_AFTER_S)}
            )
        if judging is not None:
            judging.offer(decoded.calls)  # stored: the sampled ones are judged from memory
        refused = sum(decoded.refused.values())
        partial = (
            ExportTracePartialSuccess(rejected_spans=refused, error_message=decoded.message()) if refused else None
        )
        return _encode(ExportTraceServiceResponse(partial_success=partial), kind)

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    app.state.judging = judging  # its worker starts with the first sampled exchange; stop() at shutdown
    app.state.decode_pool = pool  # shut down with the receiver
    return app
