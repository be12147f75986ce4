"""Calls per hour against the same hours of the reference: a traffic collapse or surge.

Why and how, for the committee: docs/traffic.md, "Calls per hour". Each finished hour's count is
compared with the reference's mean ``m`` over its ``d`` days for the same slot (hour of day, and
weekday when the reference covers ``WEEK``), under a negative binomial variance ``m + phi m^2``
whose ``phi`` is pooled over the slots (within working and weekend days for a one-week reference)
and raised by its own sampling error plus ``PHI_FLOOR``. ``CountSR`` tests each hour against

- drop: ``mu0 = (m - z se) (1 - tolerance)``, skipped where ``mu0`` is under ``MIN_EXPECTED`` calls;
- rise: ``mu0 = (m + z se) (1 + tolerance)``,

with ``se = sqrt((m + phi m^2 + 1) / d)`` (the ``+ 1`` keeps an empty slot from being an exact zero).
An hour is tested ``GRACE`` after its end once no span waits to be rolled up, at most ``MAX_CATCH_UP``
back: hours the monitor itself was not running are not the application's outage.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session, col, func, select

from medmon.db import as_utc
from medmon.monitor.detection.drift.layout import StreamSpec, margin_z
from medmon.monitor.models import TrafficReference, TrafficRollup
from medmon.monitor.plan.model import Plan

HOUR = timedelta(hours=1)
WEEK = timedelta(days=7)
GRACE = timedelta(minutes=10)
MAX_CATCH_UP = timedelta(hours=24)
MIN_HOURS = 24  # full hours a reference needs before its volume is a null
MIN_EXPECTED = 5.0
PHI_FLOOR = 0.0025  # at least 5% of extra-Poisson variation per hour
METRIC = "traffic_calls"


@dataclass(frozen=True)
class HourCount:
    """One finished hour of a task's traffic and what the reference expected of it."""

    hour: datetime
    calls: int
    expected: float  # the reference's mean count for this slot
    days: int  # how many reference hours that mean stands on


def floor_hour(t: datetime) -> datetime:
    return as_utc(t).replace(minute=0, second=0, microsecond=0)


def _slot(hour: datetime, weekly: bool) -> str:
    return f"{hour.weekday()}-{hour.hour:02d}" if weekly else f"{hour.hour:02d}"


def _hour_counts(session: Session, task_id: str, start: datetime, end: datetime) -> dict[datetime, int]:
    """Calls per hour of a task in ``[start, end)``, from the rollups (all models)."""
    rows = session.exec(
        select(TrafficRollup.hour, func.sum(TrafficRollup.calls))
        .where(TrafficRollup.task_id == task_id, col(TrafficRollup.hour) >= start, col(TrafficRollup.hour) < end)
        .group_by(col(TrafficRollup.hour))
    ).all()
    return {h: int(n or 0) for h, n in rows}


def _hours(start: datetime, end: datetime) -> list[datetime]:
    out, h = [], start
    while h < end:
        out.append(h)
        h += HOUR
    return out


def dispersion(groups: Sequence[Sequence[int]]) -> tuple[float, int]:
    """Pooled method-of-moments dispersion ``phi`` of counts grouped by slot, and its degrees of freedom.

    ``E[sum (c - mean)^2] = (d - 1)(m + phi m^2)`` in each slot of ``d`` counts.

    Examples
    --------
    >>> dispersion([[100, 100, 100], [50, 50]])   # no variation at all: not even Poisson's
    (0.0, 3)
    >>> round(dispersion([[80, 120], [40, 60]])[0], 3)
    0.068
    """
    ss = excess = weight = 0.0
    df = 0
    for counts in groups:
        d = len(counts)
        if d < 2:
            continue
        m = sum(counts) / d
        ss += sum((c - m) ** 2 for c in counts)
        excess += (d - 1) * m
        weight += (d - 1) * m * m
        df += d - 1
    if weight <= 0:
        return 0.0, df
    return max(0.0, (ss - excess) / weight), df


def volume_reference(session: Session, ref: TrafficReference) -> dict[str, Any] | None:
    """Per slot mean and days, and the dispersion, from the reference period's full hours (None: too short)."""
    start = floor_hour(ref.period_from) + (HOUR if floor_hour(ref.period_from) < ref.period_from else timedelta())
    end = floor_hour(ref.period_to)
    hours = _hours(start, end)
    if len(hours) < MIN_HOURS:
        return None
    weekly = ref.period_to - ref.period_from >= WEEK  # a 7d window loses its partial first hour
    counts = _hour_counts(session, ref.task_id, start, end)
    slots: dict[str, list[int]] = defaultdict(list)
    workweek: dict[str, list[int]] = defaultdict(list)
    for h in hours:
        slots[_slot(h, weekly)].append(counts.get(h, 0))
        workweek[f"{h.weekday() >= 5}-{h.hour:02d}"].append(counts.get(h, 0))
    phi, df = dispersion(list(slots.values()))
    if df == 0:  # one week only: each weekday once; spread pooled over working days and weekend days by hour
        phi, df = dispersion(list(workweek.values()))
    phi_up = phi * (1 + 2 * math.sqrt(2 / max(df, 1))) + PHI_FLOOR
    return {
        "slots": "weekday and hour" if weekly else "hour of day",
        "weekly": weekly,
        "mean": {s: sum(v) / len(v) for s, v in slots.items()},
        "days": {s: len(v) for s, v in slots.items()},
        "phi": phi_up,
        "phi_estimate": phi,
        "df": df,
        "hours": len(hours),
        "tested_to": end.isoformat(),
    }


def _null(h: HourCount, phi: float, z: float, tolerance: float, direction: str) -> float:
    m = h.expected
    se = math.sqrt((m + phi * m * m + 1) / max(h.days, 1))
    return (m - z * se) * (1 - tolerance) if direction == "drop" else (m + z * se) * (1 + tolerance)


def volume_specs(plan: Plan, ref: TrafficReference) -> list[StreamSpec[HourCount]]:
    """The task's two call-volume streams (drop, rise) once its reference holds a day of full hours."""
    assert plan.traffic is not None
    vol = ref.stats.get("volume")
    if not vol:
        return []
    z, tol, phi = margin_z(plan), plan.traffic.volume_tolerance, float(vol["phi"])
    specs = []
    for direction in ("drop", "rise"):

        def observe(h: HourCount, direction: str = direction) -> tuple[float, float, float] | None:
            if h.days < 1:
                return None  # a slot the reference never saw (its partial first hour): nothing to compare with
            mu0 = _null(h, phi, z, tol, direction)
            if direction == "drop" and mu0 < MIN_EXPECTED:
                return None
            return float(h.calls), max(mu0, 1.0), max(h.expected, 1.0)

        ratio = 1 - tol if direction == "drop" else 1 + tol
        specs.append(
            StreamSpec(
                f"{ref.task_id}:{METRIC}:{direction}",
                ref.task_id,
                METRIC,
                direction,
                ratio,
                1.0,
                observe,
                "count_sr",
                {"phi": phi, "direction": direction, "null_ratio": ratio, "reference": ref.period_to.isoformat()},
            )
        )
    return specs


def ensure_volume(session: Session, ref: TrafficReference) -> dict[str, Any] | None:
    """The reference's volume part, measured the first time it is asked for."""
    if "volume" not in ref.stats:
        vol = volume_reference(session, ref)
        if vol is None:
            return None
        ref.stats = {**ref.stats, "volume": vol}
        session.add(ref)
    return ref.stats["volume"]


def due_hours(session: Session, ref: TrafficReference, now: datetime) -> list[HourCount]:
    """The finished hours not yet tested (oldest first), each with its count and expectation."""
    vol = ref.stats["volume"]
    last = floor_hour(now - GRACE)  # hours ending by now - GRACE are finished
    start = max(datetime.fromisoformat(vol["tested_to"]), last - MAX_CATCH_UP)
    hours = _hours(start, last)
    if not hours:
        return []
    counts = _hour_counts(session, ref.task_id, hours[0], last)
    out = []
    for h in hours:
        slot = _slot(h, vol["weekly"])
        out.append(HourCount(h, counts.get(h, 0), float(vol["mean"].get(slot, 0.0)), int(vol["days"].get(slot, 0))))
    return out


def mark_tested(session: Session, ref: TrafficReference, hours: Sequence[HourCount]) -> None:
    if hours:
        vol = {**ref.stats["volume"], "tested_to": (hours[-1].hour + HOUR).isoformat()}
        ref.stats = {**ref.stats, "volume": vol}
        session.add(ref)
