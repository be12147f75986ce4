"""A local webhook receiver: verifies medmon's signature and keeps what it got.

The demo starts it so a person can see alerts arrive; tests use it as the real peer. It rejects
bodies whose Standard Webhooks signature does not verify (HTTP 401) and drops copies by the
signed ``webhook-id``, so neither a retry nor a replayed message is kept twice.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from medmon.alerts.signing import verify


@dataclass
class Received:
    body: dict[str, Any]
    idempotency_key: str
    signature_valid: bool
    received_at: float


@dataclass
class ReceiverState:
    secret: str
    received: list[Received] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    duplicates: int = 0
    rejected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def create_receiver(secret: str, *, delay_s: float = 0.0) -> Starlette:
    """The receiver as an ASGI app; ``app.state.receiver`` holds what it accepted.

    ``delay_s`` makes each answer take that long, like a real chat or paging service does.
    """
    state = ReceiverState(secret=secret)

    async def accept(request: Request) -> JSONResponse:
        raw = await request.body()
        if delay_s:
            await asyncio.sleep(delay_s)
        key = verify(raw, dict(request.headers), state.secret, now=int(time.time()))
        with state.lock:
            if key is None:
                state.rejected += 1
                return JSONResponse({"error": "invalid signature"}, status_code=401)
            if key in state.keys:
                state.duplicates += 1
                return JSONResponse({"status": "duplicate"}, status_code=200)
            state.keys.add(key)
            state.received.append(Received(json.loads(raw), key, True, time.time()))
        return JSONResponse({"status": "accepted"}, status_code=202)

    async def listing(_: Request) -> JSONResponse:
        with state.lock:
            items = [r.body for r in state.received]
        return JSONResponse({"received": items, "duplicates": state.duplicates, "rejected": state.rejected})

    app = Starlette(routes=[Route("/alerts", accept, methods=["POST"]), Route("/alerts", listing, methods=["GET"])])
    app.state.receiver = state
    return app
