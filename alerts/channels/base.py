"""The channel protocol and the one place that decides whether a failed delivery is retried."""

from __future__ import annotations

from typing import Any, Protocol

import httpx

from alerts.errors import PermanentDeliveryError, RetryableDeliveryError


class Channel(Protocol):
    name: str

    def render(self, notification: dict[str, Any]) -> dict[str, Any]:
        """The body this channel sends for a notification (pure; snapshot-tested)."""
        ...

    def send(self, body: dict[str, Any], *, idempotency_key: str) -> None:
        """Deliver; raise RetryableDeliveryError or PermanentDeliveryError on failure."""
        ...


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def classify_status(response: httpx.Response, channel: str) -> None:
    """2xx is delivered; 5xx, 408 and 429 are retried; any other status is permanent."""
    code = response.status_code
    if 200 <= code < 300:
        return
    message = f"{channel}: receiver answered HTTP {code}"
    if code >= 500 or code in (408, 429):
        raise RetryableDeliveryError(message, retry_after=_retry_after(response))
    raise PermanentDeliveryError(message)


def post_json(client: httpx.Client, url: str, content: bytes, headers: dict[str, str], channel: str) -> None:
    """POST bytes and classify the outcome; transport failures are retryable and never show the URL."""
    try:
        response = client.post(url, content=content, headers={"Content-Type": "application/json", **headers})
    except httpx.TimeoutException as exc:
        raise RetryableDeliveryError(f"{channel}: receiver timed out") from exc
    except httpx.TransportError as exc:
        raise RetryableDeliveryError(f"{channel}: cannot reach receiver ({type(exc).__name__})") from exc
    classify_status(response, channel)
