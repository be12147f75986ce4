"""How long a probe may take, from the plan alone: what the service and its workers wait for."""

from __future__ import annotations

from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan

__all__ = ["longest_probe_s", "visibility_timeout_of"]


def visibility_timeout_of(plan: Plan) -> float:
    """The plan's service.visibility_timeout in seconds."""
    return parse_interval(plan.service.visibility_timeout).total_seconds()


def longest_probe_s(plan: Plan) -> float:
    """A probe's worst case without a jury: every call of the largest sample timing out on every attempt."""
    d = plan.deployment
    waves = max(-(-t.sample_size // d.max_concurrency) for t in plan.tasks)
    return waves * d.timeout_s * (d.max_retries + 1)
