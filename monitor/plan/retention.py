"""The plan's ``retention`` section: how long each kind of record is kept, never below its legal floor.

HIPAA requires documentation to be kept six years (45 CFR 164.316(b)(2)); where the EU AI Act's
technical documentation applies (Art. 18) the floor is ten years. The plan names its regime and
plan validation refuses a setting below that regime's floor, naming the field, so a purge can
never remove evidence a regulator may still ask for. Traffic spans are raw request text, not
documentation; their short window stays in ``traffic.retention`` and has no floor.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import model_validator

from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.section import Interval, Section

Regime = Literal["hipaa", "eu"]

# Years of retention each regime requires for documentation (results, audit log, reports).
FLOOR_YEARS: dict[str, int] = {"hipaa": 6, "eu": 10}
YEAR = timedelta(days=365)


def floor(regime: str) -> timedelta:
    """The shortest retention the regime allows for documentation."""
    return FLOOR_YEARS[regime] * YEAR


class Retention(Section):
    """How long results, the audit log and reports are kept (``6y`` etc. are not intervals: use days)."""

    regime: Regime = "hipaa"
    results: Interval = "2190d"
    audit_log: Interval = "2190d"
    reports: Interval = "2190d"

    @model_validator(mode="after")
    def _floors(self) -> Retention:
        least = floor(self.regime)
        low = [
            f"retention.{name} is {value} but the {self.regime} regime requires at least "
            f"{FLOOR_YEARS[self.regime]} years ({least.days}d)"
            for name, value in (("results", self.results), ("audit_log", self.audit_log), ("reports", self.reports))
            if parse_interval(value) < least
        ]
        if low:
            raise ValueError("; ".join(low))
        return self
