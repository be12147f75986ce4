"""Webhook signatures by the Standard Webhooks scheme, so any receiver can verify and drop repeats.

Every signed POST carries three headers (https://www.standardwebhooks.com):

- ``webhook-id``: the message id, the same on every retry of one notification (it is the
  outbox's idempotency key); a receiver drops a message whose id it has already accepted;
- ``webhook-timestamp``: unix seconds when this attempt was signed;
- ``webhook-signature``: ``v1,<base64 HMAC-SHA256>`` over ``f"{id}.{timestamp}."`` followed by
  the raw body.

The id is inside the signature, so the same signed bytes cannot be re-sent under a new id, and a
receiver that keeps the ids it accepted for longer than its timestamp tolerance turns away every
replay. The shared secret is either a Standard Webhooks secret (``whsec_`` followed by base64 of
the key bytes, what the stock libraries generate) or any other string, whose UTF-8 bytes are the
key (verify with ``Webhook(secret.encode())`` in the ``standardwebhooks`` library).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SECRET_PREFIX = "whsec_"
TOLERANCE_S = 300


def secret_key(secret: str) -> bytes:
    """The HMAC key of a shared secret: base64-decoded after ``whsec_``, else the UTF-8 bytes.

    Examples
    --------
    >>> secret_key("whsec_c2VjcmV0")
    b'secret'
    >>> secret_key("secret")
    b'secret'
    """
    if secret.startswith(SECRET_PREFIX):
        try:
            key = base64.b64decode(secret[len(SECRET_PREFIX) :] + "==", validate=False)
        except (binascii.Error, ValueError) as exc:
            raise ValueError("a webhook secret starting with 'whsec_' must continue in base64") from exc
    else:
        key = secret.encode()
    if not key:  # an empty HMAC key signs nothing anyone could not forge
        raise ValueError("a webhook secret must not be empty")
    return key


def sign(msg_id: str, timestamp: int, body: bytes, secret: str) -> str:
    """The ``webhook-signature`` value for ``body`` sent as message ``msg_id`` at ``timestamp``.

    Examples
    --------
    >>> sign("msg_1", 1700000000, b'{}', "secret")[:3]
    'v1,'
    """
    digest = hmac.new(secret_key(secret), f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(msg_id: str, timestamp: int, body: bytes, secret: str) -> dict[str, str]:
    """The three Standard Webhooks headers for one delivery attempt."""
    return {
        ID_HEADER: msg_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: sign(msg_id, timestamp, body, secret),
    }


def verify(
    body: bytes, headers: Mapping[str, str], secret: str, *, now: int, tolerance_s: int = TOLERANCE_S
) -> str | None:
    """The message id when ``headers`` carry a valid, fresh signature of ``body``; else None.

    Dropping repeats of the id is the caller's job (it needs memory of what it accepted).
    """
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp, given = (lower.get(h, "") for h in (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER))
    if not (msg_id and stamp and given):
        return None
    try:
        timestamp = int(stamp)
    except ValueError:
        return None
    if abs(now - timestamp) > tolerance_s:
        return None
    expected = sign(msg_id, timestamp, body, secret)
    if any(hmac.compare_digest(expected, candidate) for candidate in given.split(" ")):
        return msg_id
    return None
