"""Retention: raw traffic rows older than ``traffic.retention`` are deleted in small batches.

The hourly rollups (what the dashboard and reports read) and the references are kept. Each
batch is its own short transaction, so receivers keep inserting while old rows go; a span not
yet rolled up is never deleted.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from medmon.db import session_scope
from medmon.monitor.models import TrafficSpan
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.traffic import Traffic

DELETE_BATCH = 5000


def delete_expired(engine: Engine, traffic: Traffic | None, now: datetime, *, batch: int = DELETE_BATCH) -> int:
    """Delete expired spans (judgements, which hold scores only, stay); return how many went."""
    if traffic is None:
        return 0
    cutoff = now - parse_interval(traffic.retention)
    total = 0
    while True:
        with session_scope(engine) as session:
            ids = session.exec(
                select(TrafficSpan.id)
                .where(col(TrafficSpan.ended_at) < cutoff, col(TrafficSpan.streamed).is_(True))
                .order_by(col(TrafficSpan.id))
                .limit(batch)
            ).all()
            if ids:
                session.exec(delete(TrafficSpan).where(col(TrafficSpan.id).in_(ids)))
        total += len(ids)
        if len(ids) < batch:
            return total


def count_expired(engine: Engine, traffic: Traffic | None, now: datetime) -> int:
    """How many spans :func:`delete_expired` would delete now (what ``retention purge --dry-run`` shows)."""
    if traffic is None:
        return 0
    cutoff = now - parse_interval(traffic.retention)
    with session_scope(engine) as session:
        return len(
            session.exec(
                select(TrafficSpan.id).where(col(TrafficSpan.ended_at) < cutoff, col(TrafficSpan.streamed).is_(True))
            ).all()
        )
