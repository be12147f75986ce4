"""Tables owned by the alerts package: alerts, their transitions, and the notification outbox."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from monitor.storage import utcnow


class AlertStatus(str, Enum):
    firing = "firing"
    acknowledged = "acknowledged"
    resolved = "resolved"
    silenced = "silenced"


class Severity(str, Enum):
    critical = "critical"
    warning = "warning"
    info = "info"


class Alert(SQLModel, table=True):
    """One alert, identified by the fingerprint of its labels; a repeat finding updates it."""

    id: int | None = Field(default=None, primary_key=True)
    fingerprint: str = Field(index=True, unique=True)
    labels: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON))
    task_id: str = Field(index=True)
    rule: str
    severity: Severity = Severity.warning
    status: AlertStatus = Field(default=AlertStatus.firing, index=True)
    summary: str = ""
    owner: str = ""
    category: str = ""
    dashboard_url: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    starts_at: datetime = Field(default_factory=utcnow)
    ends_at: datetime | None = None
    last_seen_at: datetime = Field(default_factory=utcnow)
    last_notified_at: datetime | None = None
    acknowledged_by: str | None = None
    acknowledged_at: datetime | None = None
    ack_note: str | None = None
    resolved_by: str | None = None
    resolve_reason: str | None = None


class AlertEvent(SQLModel, table=True):
    """Every transition of an alert, with its time and actor."""

    id: int | None = Field(default=None, primary_key=True)
    alert_id: int = Field(foreign_key="alert.id", index=True)
    at: datetime = Field(default_factory=utcnow)
    actor: str = "medmon"
    from_status: str | None = None
    to_status: str
    note: str = ""


class NotificationStatus(str, Enum):
    pending = "pending"
    delivered = "delivered"
    dead = "dead"


class Notification(SQLModel, table=True):
    """The outbox: written in the same transaction as the alert change, delivered by a worker."""

    id: int | None = Field(default=None, primary_key=True)
    alert_id: int = Field(foreign_key="alert.id", index=True)
    route: str
    idempotency_key: str = Field(unique=True)
    event: str  # firing | resolved | repeat | acknowledged
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    status: NotificationStatus = Field(default=NotificationStatus.pending, index=True)
    attempts: int = 0
    next_attempt_at: datetime = Field(default_factory=utcnow, index=True)
    last_error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    delivered_at: datetime | None = None
