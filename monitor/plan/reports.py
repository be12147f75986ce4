"""The plan's ``reports`` section: when the service writes the committee report, and where it says so.

``schedule`` names a day and a time of month in a timezone; at that moment the previous calendar
month's report is due. ``route`` is one of ``alerts.routes`` (a webhook: the notification carries
the period, the report hash, its status and where the files are), and ``directory`` is where the
HTML (and PDF, where Chromium or WeasyPrint is installed) is stored; a relative directory is
taken from the plan file's folder.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from datetime import time as time_of_day  # `time` is also a field's name here
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field, field_validator

from medmon.monitor.plan.section import Section

_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


class ReportSchedule(Section):
    """``monthly`` on ``day`` (1-28, so every month has it) at ``time`` (``HH:MM``) in ``timezone``."""

    every: Literal["monthly"] = "monthly"
    day: int = Field(1, ge=1, le=28)
    time: str = "06:00"
    timezone: str = "UTC"

    @field_validator("time")
    @classmethod
    def _time(cls, value: str) -> str:
        if not _TIME.match(value):
            raise ValueError(f"expected a 24-hour time like '06:00', got {value!r}")
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            close = sorted(z for z in available_timezones() if z.lower().endswith(value.lower().split("/")[-1]))
            hint = f" (did you mean {', '.join(close[:3])}?)" if close else ""
            raise ValueError(
                f"expected an IANA timezone like 'Europe/Amsterdam' or 'UTC', got {value!r}{hint}"
            ) from None
        return value

    def clock(self) -> time_of_day:
        hour, minute = (int(p) for p in self.time.split(":"))
        return time_of_day(hour, minute)

    def last_due(self, now: datetime) -> datetime:
        """The newest scheduled moment at or before ``now`` (UTC).

        Examples
        --------
        >>> s = ReportSchedule(day=1, time="06:00", timezone="Europe/Amsterdam")
        >>> s.last_due(datetime(2026, 12, 1, 5, 0, tzinfo=UTC)).isoformat()
        '2026-12-01T05:00:00+00:00'
        >>> s.last_due(datetime(2026, 12, 1, 4, 59, tzinfo=UTC)).isoformat()
        '2026-11-01T05:00:00+00:00'
        """
        zone = ZoneInfo(self.timezone)
        local = now.astimezone(zone)
        year, month = local.year, local.month
        for _ in range(2):
            due = datetime.combine(datetime(year, month, self.day).date(), self.clock(), tzinfo=zone)
            if due <= local:
                return due.astimezone(UTC)
            year, month = (year, month - 1) if month > 1 else (year - 1, 12)
        raise AssertionError("unreachable: last month's scheduled day is always in the past")


class ReportsConfig(Section):
    schedule: ReportSchedule
    route: str
    directory: Path = Path("reports")
    pdf: bool = True
