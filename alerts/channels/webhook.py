"""Generic webhook: the notification as JSON, signed with HMAC-SHA256 (see ``alerts.signing``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import SecretStr

from alerts.channels.base import post_json
from alerts.signing import HEADER, sign


class WebhookChannel:
    """POST JSON with ``X-Medmon-Signature`` and ``Idempotency-Key`` headers."""

    def __init__(self, name: str, url: SecretStr, secret: SecretStr | None, *, timeout_s: float = 10.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self._url = url
        self._secret = secret
        self._clock = clock
        self._client = httpx.Client(timeout=timeout_s)

    def __repr__(self) -> str:
        return f"WebhookChannel(name={self.name!r}, url='***')"

    def render(self, notification: dict[str, Any]) -> dict[str, Any]:
        return notification

    def send(self, body: dict[str, Any], *, idempotency_key: str) -> None:
        content = json.dumps(body, sort_keys=True, default=str).encode()
        headers = {"Idempotency-Key": idempotency_key, "User-Agent": "medmon"}
        if self._secret is not None:
            headers[HEADER] = sign(content, self._secret.get_secret_value(), int(self._clock()))
        post_json(self._client, self._url.get_secret_value(), content, headers, self.name)

    def close(self) -> None:
        self._client.close()
