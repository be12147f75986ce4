"""Generic webhook: the notification as JSON, signed with HMAC-SHA256.

Each POST carries ``Content-Type: application/json``, ``Idempotency-Key`` (the same on every
retry of one notification; drop a repeat) and, when a secret is configured,
``X-Medmon-Signature: t=<unix seconds>,v1=<hex>`` where ``v1`` is HMAC-SHA256 with the shared
secret over ``f"{t}."`` followed by the raw body bytes. Receivers recompute it over the bytes
they received (before parsing), compare in constant time and reject a ``t`` more than a few
minutes old (``medmon.alerts.signing.verify`` does all three). The body is
``medmon.alerts.dispatch.group_body``: ``group_key``, ``event``, ``status``, ``summary``, ``counts``
and ``alerts``, each with its labels, severity, owner, evidence and dashboard link.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import SecretStr

from medmon.alerts.channels.base import ChannelConfig, HttpSender
from medmon.alerts.signing import HEADER, sign


class WebhookConfig(ChannelConfig):
    secret: SecretStr | None = None


class WebhookChannel:
    """POST the notification as JSON with ``X-Medmon-Signature`` and ``Idempotency-Key``."""

    def __init__(self, config: WebhookConfig, *, transport: httpx.BaseTransport | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.name = config.name
        self.config = config
        self._clock = clock
        self._http = HttpSender(config.name, config.timeout_s, secrets=[config.secret], transport=transport)

    def __repr__(self) -> str:
        return f"WebhookChannel(name={self.name!r})"

    def render(self, notification: dict[str, Any]) -> dict[str, Any]:
        return notification

    def send(self, body: dict[str, Any], *, idempotency_key: str) -> None:
        content = json.dumps(body, sort_keys=True, default=str).encode()
        headers = {"Idempotency-Key": idempotency_key}
        if self.config.secret is not None:
            headers[HEADER] = sign(content, self.config.secret.get_secret_value(), int(self._clock()))
        self._http.deliver(self.config.url, content, headers)

    def close(self) -> None:
        self._http.close()
