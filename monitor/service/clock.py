"""Clocks: real time in production, accelerated time for the demo and soak tests."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta


class AcceleratedClock:
    """Simulated time that runs ``scale`` times faster than the wall clock.

    Examples
    --------
    >>> clock = AcceleratedClock(scale=3600, start=datetime(2026, 1, 1, tzinfo=UTC))
    >>> clock().year
    2026
    """

    def __init__(self, scale: float = 1.0, start: datetime | None = None) -> None:
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.scale = scale
        self.start = start or datetime.now(UTC)
        self._wall0 = time.monotonic()

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=(time.monotonic() - self._wall0) * self.scale)
