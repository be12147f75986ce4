"""Tables owned by the probes package: probe runs and each canary's result."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from monitor.storage import utcnow


class RunStatus(str, Enum):
    running = "running"
    complete = "complete"
    interrupted = "interrupted"
    failed = "failed"


class ProbeRun(SQLModel, table=True):
    """One scheduled execution of a task's canaries."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    deployment: str = "production"
    purpose: str = "scheduled"  # scheduled | reevaluation | burn-in | manual
    status: RunStatus = RunStatus.running
    started_at: datetime = Field(default_factory=utcnow, index=True)
    finished_at: datetime | None = None
    n_canaries: int = 0
    n_errors: int = 0
    mean_score: float | None = None
    error: str | None = None


class ProbeResultBase(SQLModel):
    task_id: str = Field(index=True)
    canary_id: str
    pack: str = ""
    benchmark: str = ""
    scorer: str = ""
    score: float | None = None
    correct: bool | None = None
    answer: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    finish_reason: str | None = None
    requested_model: str = ""
    served_model: str | None = None
    system_fingerprint: str | None = None
    error_type: str | None = None
    error: str | None = None
    refused: bool = False
    baseline_score: float | None = None
    tags: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    created_at: datetime = Field(default_factory=utcnow, index=True)


class ProbeResult(ProbeResultBase, table=True):
    """One canary's answer with its score, tokens, cost, latency and the served model's identity."""

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="proberun.id", index=True)
