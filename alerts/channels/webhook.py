"""Generic webhook: the notification as JSON, signed by the Standard Webhooks scheme.

Each POST carries ``Content-Type: application/json``, ``Idempotency-Key`` and ``webhook-id``
(both the same on every retry of one notification; drop a repeat) and, when a secret is
configured, ``webhook-timestamp`` and ``webhook-signature``: an HMAC-SHA256 over the id, the
timestamp and the raw body bytes (:mod:`medmon.alerts.signing`). Receivers verify with any
Standard Webhooks library over the bytes they received (before parsing), reject a timestamp
more than five minutes off, and drop an id they have already accepted. The body is
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
from medmon.alerts.signing import ID_HEADER, signed_headers


class WebhookConfig(ChannelConfig):
    secret: SecretStr | None = None


class WebhookChannel:
    """POST the notification as JSON with Standard Webhooks headers and ``Idempotency-Key``."""

    def __init__(
        self,
        config: WebhookConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
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
        headers = {"Idempotency-Key": idempotency_key, ID_HEADER: idempotency_key}
        if self.config.secret is not None:
            headers |= signed_headers(
                idempotency_key, int(self._clock()), content, self.config.secret.get_secret_value()
            )
        self._http.deliver(self.config.url, content, headers)

    def close(self) -> None:
        self._http.close()
