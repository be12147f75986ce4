"""Tables owned by the alerts package.

``Incident`` (one task, one cause: the alerts that point at one problem, acknowledged and
resolved as one), ``Alert`` (identity and lifecycle timestamps), ``AlertEvent`` (every transition, with its actor),
``Silence`` (label matchers with an expiry), ``NotifyLog`` (what each route was last told about
each group, the memory deduplication compares against), ``Notification`` (the outbox) and
``Heartbeat`` (when the monitor last showed it was alive).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from medmon.db import utcnow


class AlertStatus(str, Enum):
    firing = "firing"
    acknowledged = "acknowledged"
    resolved = "resolved"
    silenced = "silenced"


class Severity(str, Enum):
    critical = "critical"
    warning = "warning"
    info = "info"


class Incident(SQLModel, table=True):
    """One problem of one task: the open alerts that share a cause, as one thing people act on.

    ``key`` is ``deployment/task/cause`` (the notification group); an incident is open while
    ``closed_at`` is None, and a member firing after it closed opens a new incident with the
    same key and a new id. ``severity`` and ``summary`` follow the most serious open member.
    People acknowledge and resolve the incident; that acknowledges or resolves every member.
    ``parent_id`` names the model-change incident this one followed (``medmon.alerts.incidents``:
    one page, one timeline for a change and what came after it on every task).
    """

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(index=True)
    parent_id: int | None = Field(default=None, foreign_key="incident.id", index=True)
    deployment: str = ""
    task_id: str = Field(default="", index=True)
    cause: str = ""
    severity: Severity = Severity.warning
    summary: str = ""
    owner: str = ""
    category: str = ""
    dashboard_url: str = ""
    opened_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    closed_at: datetime | None = Field(default=None, index=True)
    acknowledged_by: str | None = None
    acknowledged_at: datetime | None = None
    ack_note: str | None = None
    resolved_by: str | None = None
    resolve_reason: str | None = None


class Alert(SQLModel, table=True):
    """One alert, identified by the fingerprint of its labels; a repeat finding updates it.

    ``status`` is stored for queries but written in one place only (``medmon.alerts.status``): it is
    derived from ``ends_at`` and ``acknowledged_at``. Whether a silence mutes the alert depends
    on the time and is never stored; ``alerts.status_of`` computes it.
    """

    id: int | None = Field(default=None, primary_key=True)
    fingerprint: str = Field(index=True, unique=True)
    group_key: str = Field(default="", index=True)
    incident_id: int | None = Field(default=None, foreign_key="incident.id", index=True)
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
    escalated_at: datetime | None = None
    escalated_to: str | None = None


class AlertEvent(SQLModel, table=True):
    """Every transition of an alert, with its time and actor."""

    id: int | None = Field(default=None, primary_key=True)
    alert_id: int = Field(foreign_key="alert.id", index=True)
    at: datetime = Field(default_factory=utcnow)
    actor: str = "medmon"
    from_status: str | None = None
    to_status: str
    note: str = ""


class Silence(SQLModel, table=True):
    """Mute every alert whose labels match all ``matchers`` between ``starts_at`` and ``ends_at``.

    Matchers are stored as ``{"name", "op", "value"}`` with ``op`` one of ``=``, ``!=``, ``=~``
    and ``!~`` (regular expressions match the whole value, as in Alertmanager). Expiring a
    silence early sets ``ends_at`` and records who did it.
    """

    id: int | None = Field(default=None, primary_key=True)
    matchers: list[dict[str, str]] = Field(default_factory=list, sa_column=Column(JSON))
    starts_at: datetime
    ends_at: datetime = Field(index=True)
    reason: str
    created_by: str
    created_at: datetime = Field(default_factory=utcnow)
    expired_by: str | None = None


class NotifyLog(SQLModel, table=True):
    """What one route was last sent about one group: the fingerprint sets dedup compares with."""

    group_key: str = Field(primary_key=True)
    route: str = Field(primary_key=True)
    firing: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    acknowledged: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    resolved: list[str] = Field(default_factory=list, sa_column=Column(JSON))
    sent_at: datetime
    sequence: int = 0
    open_count: int = Field(default=0, index=True)


class NotificationStatus(str, Enum):
    pending = "pending"
    delivered = "delivered"
    dead = "dead"


class Notification(SQLModel, table=True):
    """The outbox: one group's news for one route, written in the transaction that decided it.

    ``alert_id`` is the first alert listed (news first, then by severity and age); ``payload``
    lists the alerts the notification is about. ``event`` is firing, resolved, repeat,
    acknowledged or escalated; ``report`` is a committee report's notice (no alert: ``alert_id``
    is empty and the payload says which period, hash and files).
    """

    id: int | None = Field(default=None, primary_key=True)
    alert_id: int | None = Field(default=None, foreign_key="alert.id", index=True)
    group_key: str = Field(default="", index=True)
    route: str
    idempotency_key: str = Field(unique=True)
    event: str
    alert_count: int = 1
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON))
    status: NotificationStatus = Field(default=NotificationStatus.pending, index=True)
    attempts: int = 0
    next_attempt_at: datetime = Field(default_factory=utcnow, index=True)
    last_error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    delivered_at: datetime | None = None
    requeued_by: str | None = None
    requeued_at: datetime | None = None
    requeue_note: str | None = None


class Heartbeat(SQLModel, table=True):
    """The monitor's own pulse: ``since`` is when the current unbroken run of beats began."""

    name: str = Field(primary_key=True)
    since: datetime
    beat_at: datetime
