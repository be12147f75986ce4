"""Errors of the alerts package.

Tree::

    AlertError
    └── DeliveryError
        ├── RetryableDeliveryError   5xx, 429, timeouts, refused connections: try again later
        └── PermanentDeliveryError   other 4xx: the receiver will never accept this payload
"""

from __future__ import annotations

from medmon.errors import MedmonError


class AlertError(MedmonError):
    """Base of the alerts package's errors."""


class DeliveryError(AlertError):
    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RetryableDeliveryError(DeliveryError):
    """The receiver may accept the notification later."""


class PermanentDeliveryError(DeliveryError):
    """The receiver refuses the notification; retrying will not help."""
