"""Which tasks have a stream whose evidence is building (status ``watching``), read from the
detectors' stored states: what the Overview counts as "Watching" and adaptive cadence reacts to."""

from __future__ import annotations

from collections.abc import Collection

from sqlmodel import Session, col, select

from medmon.monitor.detection.drift.budget import INFO
from medmon.monitor.models import DetectorState, StreamStatus


def watching_streams(session: Session, task_ids: Collection[str] | None = None) -> dict[str, list[str]]:
    """Task id -> keys of its budgeted streams now watching (information-only streams never watch)."""
    query = select(DetectorState.task_id, DetectorState.key).where(
        DetectorState.status == StreamStatus.watching, DetectorState.family != INFO
    )
    if task_ids is not None:
        query = query.where(col(DetectorState.task_id).in_(list(task_ids)))
    found: dict[str, list[str]] = {}
    for task_id, key in session.exec(query.order_by(col(DetectorState.key))).all():
        found.setdefault(task_id, []).append(key)
    return found


def task_watching(session: Session, task_id: str) -> bool:
    """Whether any stream of the task is watching (evidence building, not yet an alarm).

    What the scheduler's adaptive cadence asks: while it is true, probing the task sooner shortens
    the time to a decision, and the detectors, being anytime-valid, keep their false-alarm promise
    per observation whenever the observations are taken.
    """
    return bool(watching_streams(session, [task_id]))
