"""A task's traffic reference: what its calls looked like over the first days (or a declared period).

For cost, latency and output length the reference keeps the median and the share of calls above
it; a stream then watches the share of new calls above that median, a distribution-free test
of "the typical call got dearer, slower or longer" (a +20% median cost rise moves most calls
above the old median, whatever the shape of the distribution). For error, truncation and
refusal rates it keeps the rate itself. Served models seen in the reference are the expected
ones; any other is a model change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from statistics import median
from typing import Any

from sqlmodel import Session, col, func, select

from medmon.monitor.models import TrafficReference, TrafficSpan
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.traffic import Traffic
from medmon.monitor.storage import select_row, table_of

Value = Callable[[Any], float | None]  # of a stored span (an ORM object or a row)


def _ok(s: Any) -> bool:
    return s.error_type is None


# Stream metric -> what each call contributes; medians are compared by share above, rates by mean.
MEDIAN_METRICS: dict[str, Value] = {
    "traffic_cost": lambda s: s.cost_usd if _ok(s) else None,
    "traffic_latency": lambda s: s.latency_s if _ok(s) else None,
    "traffic_output_tokens": lambda s: float(s.output_tokens) if _ok(s) and s.output_tokens is not None else None,
}
RATE_METRICS: dict[str, Value] = {
    "traffic_error_rate": lambda s: float(s.error_type is not None),
    "traffic_truncation": lambda s: float(s.finish_reason == "length") if _ok(s) else None,
    "traffic_refusal": lambda s: float(s.refused) if _ok(s) and s.refused is not None else None,
}


def reference_stats(spans: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Per metric: ``n`` and either ``median`` and ``share_above`` or ``rate``."""
    stats: dict[str, dict[str, float]] = {}
    for name, value in MEDIAN_METRICS.items():
        xs = [x for x in (value(s) for s in spans) if x is not None]
        if xs:
            m = median(xs)
            stats[name] = {"n": len(xs), "median": m, "share_above": sum(1 for x in xs if x > m) / len(xs)}
    for name, value in RATE_METRICS.items():
        xs = [x for x in (value(s) for s in spans) if x is not None]
        if xs:
            stats[name] = {"n": len(xs), "rate": sum(xs) / len(xs)}
    return stats


def _period(session: Session, traffic: Traffic, task_id: str, now: datetime) -> tuple[datetime, datetime] | None:
    """The reference period once it is over and holds enough calls, else None."""
    if traffic.reference_from is not None and traffic.reference_to is not None:
        return (traffic.reference_from, traffic.reference_to) if now >= traffic.reference_to else None
    first = session.exec(select(func.min(TrafficSpan.ended_at)).where(TrafficSpan.task_id == task_id)).one()
    if first is None:
        return None
    start = first
    end = start + parse_interval(traffic.reference_window)
    if now < end:
        return None
    n = session.exec(
        select(func.count())
        .select_from(TrafficSpan)
        .where(TrafficSpan.task_id == task_id, col(TrafficSpan.ended_at) <= end)
    ).one()
    if n >= traffic.reference_min_calls:
        return start, end
    # Too few calls in the window: the reference runs on until it holds the minimum.
    nth = session.exec(
        select(TrafficSpan.ended_at)
        .where(TrafficSpan.task_id == task_id)
        .order_by(col(TrafficSpan.ended_at))
        .offset(traffic.reference_min_calls - 1)
        .limit(1)
    ).first()
    return (start, nth) if nth is not None else None


def ensure_reference(session: Session, traffic: Traffic, task_id: str, now: datetime) -> TrafficReference | None:
    """The task's traffic reference, measured the first time its period is complete."""
    row = session.get(TrafficReference, task_id)
    if row is not None:
        return row
    period = _period(session, traffic, task_id, now)
    if period is None:
        return None
    t = table_of(TrafficSpan)
    spans = session.execute(
        select_row(
            t.c.error_type,
            t.c.cost_usd,
            t.c.latency_s,
            t.c.output_tokens,
            t.c.finish_reason,
            t.c.refused,
            t.c.response_model,
            t.c.request_model,
        ).where(t.c.task_id == task_id, t.c.ended_at >= period[0], t.c.ended_at <= period[1])
    ).all()
    if len(spans) < min(traffic.reference_min_calls, 10):
        return None  # a declared period without traffic: nothing to compare with yet
    models = sorted({s.response_model or s.request_model for s in spans if s.error_type is None})
    row = TrafficReference(
        task_id=task_id,
        period_from=period[0],
        period_to=period[1],
        calls=len(spans),
        stats=reference_stats(spans),
        models=models,
        created_at=now,
    )
    session.add(row)
    session.flush()
    return row
