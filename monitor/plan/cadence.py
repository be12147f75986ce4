"""The plan's ``adaptive_cadence`` section: probe a task faster while its evidence builds, within a budget."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, field_validator

from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.section import Interval, Section

MIN_FASTEST = timedelta(minutes=1)


class AdaptiveCadence(Section):
    """While a stream of a task is *watching* (evidence building, no alarm yet) the scheduler probes
    that task every ``fastest_interval`` instead of on its own schedule, and goes back to the
    schedule when no stream watches any more or the day's budget is spent.

    The budget is per task and per UTC day: at most ``max_extra_probes_per_day`` probes beyond
    the schedule's own, costing at most ``max_extra_cost_per_day`` dollars together (None: no cost
    cap). Interval schedules only: a cron schedule keeps its own times.
    """

    enabled: bool = False
    fastest_interval: Interval = "15m"
    max_extra_probes_per_day: int = Field(24, ge=0)
    max_extra_cost_per_day: float | None = Field(None, gt=0)

    @field_validator("fastest_interval")
    @classmethod
    def _fastest(cls, value: str) -> str:
        if parse_interval(value) < MIN_FASTEST:
            raise ValueError(f"fastest_interval must be at least one minute, got {value!r}")
        return value

    @property
    def fastest(self) -> timedelta:
        return parse_interval(self.fastest_interval)
