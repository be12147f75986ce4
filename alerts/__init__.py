"""Governance alerts: rules turn findings into signals, signals into alerts with a lifecycle, alerts
about one task and one cause into an incident, and incident changes into notifications delivered
through a durable outbox.

Actions a person takes (for the dashboard): ``acknowledge_incident``, ``resolve_incident``,
``silence_incident`` (and the same per alert: ``acknowledge``, ``resolve``, ``silence_alert``),
``create_silence``, ``expire_silence``, ``requeue``; what they look at: ``open_incidents``,
``incident_members``, ``open_alerts``, ``status_of``, ``alert_history``, ``active_silences``,
``dead_letters``. The incident API is described in ``medmon.alerts.incidents``.
"""

from medmon.alerts.catalogue import KINDS, Impact, Kind, Rule, cause_of, stream_kind
from medmon.alerts.causes import Cause
from medmon.alerts.channels import CHANNEL_TYPES, Channel, WebhookChannel
from medmon.alerts.correlation import incident_children
from medmon.alerts.dedup import NotifyReason, decide
from medmon.alerts.dispatch import flush
from medmon.alerts.errors import AlertError, DeliveryError, PermanentDeliveryError, RetryableDeliveryError
from medmon.alerts.heartbeat import beat, last_beat
from medmon.alerts.history import alert_history
from medmon.alerts.incidents import (
    get_incident,
    incident_body,
    incident_causes,
    incident_members,
    incident_runbook,
    incident_status,
    incident_title,
    list_incidents,
    open_incidents,
)
from medmon.alerts.lifecycle import (
    acknowledge,
    acknowledge_incident,
    apply_signals,
    open_alerts,
    open_fingerprints,
    pending_count,
    record_signals,
    resolve,
    resolve_incident,
)
from medmon.alerts.matchers import Matcher
from medmon.alerts.models import (
    Alert,
    AlertEvent,
    AlertStatus,
    Heartbeat,
    Incident,
    Notification,
    NotificationStatus,
    NotifyLog,
    Severity,
    Silence,
)
from medmon.alerts.outbox import DeliveryPolicy, DeliveryReport, dead_letters, deliver_due, enqueue_notice, requeue
from medmon.alerts.policy import Escalation, NotifyPolicy, RouteSpec
from medmon.alerts.rules import Estimate, Subject
from medmon.alerts.signal import Signal, fingerprint, group_key, severity_for
from medmon.alerts.signing import sign, verify
from medmon.alerts.silences import (
    active_silences,
    create_silence,
    expire_silence,
    list_silences,
    silence_alert,
    silence_incident,
)
from medmon.alerts.status import lifecycle_status, status_of
from medmon.alerts.wakeup import OUTBOX, OutboxListener, announce

__all__ = [
    "Alert",
    "AlertError",
    "AlertEvent",
    "AlertStatus",
    "CHANNEL_TYPES",
    "Cause",
    "Channel",
    "DeliveryError",
    "DeliveryPolicy",
    "DeliveryReport",
    "Escalation",
    "Estimate",
    "Heartbeat",
    "Impact",
    "Incident",
    "KINDS",
    "Kind",
    "Matcher",
    "Notification",
    "NotificationStatus",
    "NotifyLog",
    "NotifyPolicy",
    "NotifyReason",
    "OUTBOX",
    "OutboxListener",
    "PermanentDeliveryError",
    "RetryableDeliveryError",
    "RouteSpec",
    "Rule",
    "Severity",
    "Signal",
    "Silence",
    "Subject",
    "WebhookChannel",
    "acknowledge",
    "acknowledge_incident",
    "active_silences",
    "alert_history",
    "announce",
    "apply_signals",
    "beat",
    "cause_of",
    "create_silence",
    "dead_letters",
    "decide",
    "deliver_due",
    "enqueue_notice",
    "expire_silence",
    "fingerprint",
    "flush",
    "get_incident",
    "group_key",
    "incident_body",
    "incident_causes",
    "incident_children",
    "incident_members",
    "incident_runbook",
    "incident_status",
    "incident_title",
    "last_beat",
    "lifecycle_status",
    "list_incidents",
    "list_silences",
    "open_alerts",
    "open_fingerprints",
    "open_incidents",
    "pending_count",
    "record_signals",
    "requeue",
    "resolve",
    "resolve_incident",
    "severity_for",
    "sign",
    "silence_alert",
    "silence_incident",
    "status_of",
    "stream_kind",
    "verify",
]
