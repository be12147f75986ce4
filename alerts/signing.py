"""HMAC-SHA256 signatures for webhook bodies, so receivers can verify who sent them.

Header: ``X-Medmon-Signature: t=<unix seconds>,v1=<hex hmac>``, where the HMAC is computed with
the shared secret over ``f"{t}.".encode() + body``. Receivers recompute it, compare in constant
time and reject timestamps older than their tolerance (replay protection).
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "X-Medmon-Signature"


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """The signature header value for ``body`` sent at ``timestamp``.

    Examples
    --------
    >>> sign(b'{}', 'secret', 1700000000)[:13]
    't=1700000000,'
    """
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(body: bytes, header: str, secret: str, *, now: int, tolerance_s: int = 300) -> bool:
    """True when ``header`` is a valid, fresh signature of ``body``."""
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        timestamp = int(parts["t"])
        given = parts["v1"]
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance_s:
        return False
    expected = sign(body, secret, timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected, given)
