"""Reporting periods: a month, a quarter, a year, or an explicit date range (UTC)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta


@dataclass(frozen=True)
class Period:
    """``[start, end)`` in UTC with the label a committee would use."""

    label: str
    start: datetime
    end: datetime


def _day(text: str) -> datetime:
    return datetime.combine(date.fromisoformat(text), datetime.min.time(), tzinfo=UTC)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1, tzinfo=UTC)


def parse_period(text: str) -> Period:
    """Parse ``2026-11``, ``2026-Q4``, ``2026`` or ``2026-11-01..2026-11-15`` (end day included).

    Examples
    --------
    >>> p = parse_period("2026-11")
    >>> p.start.isoformat(), p.end.isoformat()
    ('2026-11-01T00:00:00+00:00', '2026-12-01T00:00:00+00:00')
    >>> parse_period("2026-Q4").end.isoformat()
    '2027-01-01T00:00:00+00:00'
    """
    text = text.strip()
    if match := re.fullmatch(r"(\d{4})-(\d{2})", text):
        year, month = int(match.group(1)), int(match.group(2))
        if not 1 <= month <= 12:
            raise ValueError(f"month must be 01-12, got {text!r}")
        return Period(text, _month_start(year, month), _month_start(year, month + 1))
    if match := re.fullmatch(r"(\d{4})-[Qq]([1-4])", text):
        year, quarter = int(match.group(1)), int(match.group(2))
        return Period(f"{year}-Q{quarter}", _month_start(year, 3 * quarter - 2), _month_start(year, 3 * quarter + 1))
    if re.fullmatch(r"\d{4}", text):
        return Period(text, _month_start(int(text), 1), _month_start(int(text) + 1, 1))
    if match := re.fullmatch(r"(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})", text):
        try:
            start, end = _day(match.group(1)), _day(match.group(2)) + timedelta(days=1)
        except ValueError as exc:
            raise ValueError(f"invalid date in period {text!r}: {exc}") from None
        if end <= start:
            raise ValueError(f"period {text!r} ends before it starts")
        return Period(text, start, end)
    raise ValueError(f"expected a period like 2026-11, 2026-Q4, 2026 or 2026-11-01..2026-11-15, got {text!r}")


def previous(period: Period) -> Period:
    """The period just before: the previous month, quarter or year, or a range of the same length.

    Examples
    --------
    >>> previous(parse_period("2026-01")).label, previous(parse_period("2026-Q1")).label
    ('2025-12', '2025-Q4')
    """
    label = period.label
    if re.fullmatch(r"\d{4}-\d{2}", label):
        start = _month_start(period.start.year, period.start.month - 1)
        return Period(f"{start:%Y-%m}", start, period.start)
    if re.fullmatch(r"\d{4}-Q[1-4]", label):
        start = _month_start(period.start.year, period.start.month - 3)
        return Period(f"{start.year}-Q{(start.month - 1) // 3 + 1}", start, period.start)
    if re.fullmatch(r"\d{4}", label):
        start = _month_start(period.start.year - 1, 1)
        return Period(str(start.year), start, period.start)
    start = period.start - (period.end - period.start)
    last = period.start - timedelta(days=1)
    return Period(f"{start:%Y-%m-%d}..{last:%Y-%m-%d}", start, period.start)
