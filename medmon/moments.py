"""How every surface writes a moment: one format, with its time zone, in the plan's display zone.

Pages, the committee report, CLI tables and notifications all call :func:`display_time`, so a
committee never compares "2026-12-03 14:00" on one page with "3 Dec 14:00" on another, nor
guesses which zone a time is in. Moments are stored in UTC; the plan's ``display_timezone``
(an IANA name such as ``Europe/Paris``, default ``UTC``) says how people read them, through the
standard library's ``zoneinfo`` (daylight saving included).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["DISPLAY_FORMAT", "display_time", "zone"]

DISPLAY_FORMAT = "%Y-%m-%d %H:%M %Z"  # 2026-12-03 15:00 CET: sorts as text, names its zone


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; a clear ``ValueError`` for a name the zone database does not know."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}: use an IANA name such as 'Europe/Paris' or 'UTC'") from None


def display_time(value: datetime | None, tz: str = "UTC", *, missing: str = "never") -> str:
    """``value`` (UTC when naive, as the database stores it) as read in zone ``tz``.

    >>> moment = datetime(2026, 12, 3, 14, 0, tzinfo=UTC)
    >>> display_time(moment)
    '2026-12-03 14:00 UTC'
    >>> display_time(moment, "Europe/Paris")
    '2026-12-03 15:00 CET'
    >>> display_time(datetime(2026, 7, 3, 14, 0), "Europe/Paris")   # naive: stored UTC; summer time
    '2026-07-03 16:00 CEST'
    >>> display_time(None)
    'never'
    """
    if value is None:
        return missing
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(zone(tz)).strftime(DISPLAY_FORMAT)
