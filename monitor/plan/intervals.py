"""The plan's interval syntax ('90s', '15m', '1h', '7d'), shared by every plan section."""

from __future__ import annotations

import re
from datetime import timedelta

INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_interval(text: str) -> timedelta:
    """Parse '90s', '15m', '1h', '2d' into a timedelta; raise ValueError otherwise.

    Examples
    --------
    >>> parse_interval("15m").total_seconds()
    900.0
    """
    match = INTERVAL.match(text)
    if not match:
        raise ValueError(f"expected an interval like '1h', got {text!r}")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
