"""Which plan task a call belongs to: the plan's ``traffic.routes``, first match wins."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from medmon.monitor.plan.traffic import TrafficRoute
from medmon.monitor.traffic.spans import CallRecord


def matches(route: TrafficRoute, call: CallRecord) -> bool:
    """Every condition the route sets holds for the call (globs for names, exact attribute values)."""
    if route.service is not None and not fnmatchcase(call.service, route.service):
        return False
    if route.span_name is not None and not fnmatchcase(call.span_name, route.span_name):
        return False
    if route.model is not None and not any(
        fnmatchcase(m, route.model) for m in (call.request_model, call.response_model or "")
    ):
        return False
    return all(call.attributes.get(k) == v for k, v in route.attributes.items())


def route_task(routes: Sequence[TrafficRoute], call: CallRecord) -> str | None:
    """The task of the first matching route, or None (the call is counted as unmatched)."""
    return next((r.task for r in routes if matches(r, call)), None)
