"""The channel protocol, the one place that decides whether a failed delivery is retried, and the
HTTP sender every channel uses.

Secrets (webhook URLs, HMAC keys, routing keys) are ``SecretStr`` everywhere. The sender hands
requests straight to an httpx transport: ``httpx.Client`` logs every request's full URL at INFO,
and for Slack and Teams the URL is the secret. Error messages name the channel and the status,
never the URL, and any secret a receiver echoes back is blanked out.
"""

from __future__ import annotations

import email.utils
from collections.abc import Iterable
from datetime import UTC
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from medmon.alerts.errors import PermanentDeliveryError, RetryableDeliveryError

REDACTED = "***"


class Channel(Protocol):
    name: str

    def render(self, notification: dict[str, Any]) -> Any:
        """The body this channel sends for a notification (pure; snapshot-tested)."""
        ...

    def send(self, body: Any, *, idempotency_key: str) -> None:
        """Deliver; raise RetryableDeliveryError or PermanentDeliveryError on failure."""
        ...


class ChannelConfig(BaseModel):
    """What every channel needs: its route name, where to send, and how long to wait."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    url: SecretStr
    timeout_s: float = Field(10.0, gt=0)


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds from ``Retry-After``: delta-seconds, or an HTTP date relative to the response's ``Date``."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        sent = email.utils.parsedate_to_datetime(response.headers.get_list("Date")[0])
    except (IndexError, TypeError, ValueError):
        return None
    when, sent = (d if d.tzinfo else d.replace(tzinfo=UTC) for d in (when, sent))
    return max(0.0, (when - sent).total_seconds())


def classify_status(response: httpx.Response, channel: str, detail: str = "") -> None:
    """2xx is delivered; 5xx, 408 and 429 are retried; any other status is permanent."""
    code = response.status_code
    if 200 <= code < 300:
        return
    message = f"{channel}: receiver answered HTTP {code}" + (f": {detail}" if detail else "")
    if code >= 500 or code in (408, 429):
        raise RetryableDeliveryError(message, retry_after=_retry_after(response))
    raise PermanentDeliveryError(message)


def redact(text: str, secrets: Iterable[SecretStr | None]) -> str:
    """``text`` with every secret's value replaced by ``***``."""
    for secret in secrets:
        value = secret.get_secret_value() if secret is not None else ""
        if value:
            text = text.replace(value, REDACTED)
    return text


class HttpSender:
    """POST bytes to a secret URL through one pooled transport, and classify the outcome."""

    def __init__(
        self,
        channel: str,
        timeout_s: float,
        *,
        secrets: Iterable[SecretStr | None] = (),
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.channel = channel
        self._timeout = httpx.Timeout(timeout_s).as_dict()
        self._secrets = tuple(secrets)
        self._transport = transport or httpx.HTTPTransport()

    def __repr__(self) -> str:
        return f"HttpSender(channel={self.channel!r})"

    def post(self, url: SecretStr, content: bytes, headers: dict[str, str]) -> httpx.Response:
        """Send; transport failures are retryable, and nothing raised carries the URL or a secret."""
        try:
            request = httpx.Request(
                "POST",
                url.get_secret_value(),
                content=content,
                headers={"Content-Type": "application/json", "User-Agent": "medmon", **headers},
                extensions={"timeout": self._timeout},
            )
            response = self._transport.handle_request(request)
            try:
                response.read()
            finally:
                response.close()
        except httpx.TimeoutException:
            raise RetryableDeliveryError(f"{self.channel}: receiver timed out") from None
        except (httpx.UnsupportedProtocol, httpx.InvalidURL):
            raise PermanentDeliveryError(f"{self.channel}: the configured URL is not valid") from None
        except httpx.TransportError as exc:
            raise RetryableDeliveryError(f"{self.channel}: cannot reach receiver ({type(exc).__name__})") from None
        return response

    def deliver(self, url: SecretStr, content: bytes, headers: dict[str, str]) -> httpx.Response:
        """``post`` then ``classify_status``, quoting the start of an error body with secrets blanked."""
        response = self.post(url, content, headers)
        if not 200 <= response.status_code < 300:
            path = urlsplit(url.get_secret_value()).path
            secrets = [url, *self._secrets, SecretStr(path) if len(path) >= 8 else None]
            detail = redact(response.text, secrets)[:200].strip()
            classify_status(response, self.channel, detail)
        return response

    def close(self) -> None:
        self._transport.close()
