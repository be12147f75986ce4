"""Tables owned by the monitor package: detector states, findings and the served-model history."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from monitor.storage import utcnow


class StreamStatus(str, Enum):
    ok = "ok"
    watching = "watching"  # evidence building up, not yet enough for an alarm
    degraded = "degraded"
    recovered = "recovered"


class DetectorState(SQLModel, table=True):
    """A stream's detector, persisted after every update so a restart decides the same way."""

    key: str = Field(primary_key=True)  # task:metric:direction
    task_id: str = Field(index=True)
    metric: str
    direction: str
    status: StreamStatus = StreamStatus.ok
    null_mean: float
    baseline_mean: float
    threshold: float
    evidence: float = 0.0
    n: int = 0
    recovery_runs: int = 0
    segment: int = 1
    state: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    updated_at: datetime = Field(default_factory=utcnow)


class FindingRecord(SQLModel, table=True):
    """What a detector concluded, with its evidence."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    metric: str
    kind: str  # drift | model_change | recovered
    direction: str = ""
    statistic: float | None = None
    threshold: float | None = None
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    null_mean: float | None = None
    run_id: int | None = None
    summary: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, index=True)


class ModelIdentity(SQLModel, table=True):
    """Each (served model, system fingerprint) seen for a task, in order: the change history."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    served_model: str
    system_fingerprint: str | None = None
    first_seen: datetime = Field(default_factory=utcnow)
    run_id: int | None = None
