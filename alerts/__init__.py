"""Governance alerts: rules turn findings into signals, signals into alerts with a lifecycle, and
alert changes into grouped notifications delivered through a durable outbox.

Actions a person takes (for the dashboard): ``acknowledge``, ``resolve``, ``silence_alert``,
``create_silence``, ``expire_silence``, ``requeue``; what they look at: ``open_alerts``,
``status_of``, ``alert_history``, ``active_silences``, ``dead_letters``.
"""

from medmon.alerts.channels import CHANNEL_TYPES, Channel, WebhookChannel
from medmon.alerts.dedup import NotifyReason, decide
from medmon.alerts.dispatch import flush
from medmon.alerts.errors import AlertError, DeliveryError, PermanentDeliveryError, RetryableDeliveryError
from medmon.alerts.heartbeat import beat, last_beat
from medmon.alerts.history import alert_history
from medmon.alerts.lifecycle import (
    acknowledge,
    apply_signal,
    apply_signals,
    open_alerts,
    open_fingerprints,
    pending_count,
    record_signals,
    resolve,
)
from medmon.alerts.matchers import Matcher
from medmon.alerts.models import (
    Alert,
    AlertEvent,
    AlertStatus,
    Heartbeat,
    Notification,
    NotificationStatus,
    NotifyLog,
    Severity,
    Silence,
)
from medmon.alerts.outbox import DeliveryPolicy, DeliveryReport, dead_letters, deliver_due, prune_delivered, requeue
from medmon.alerts.policy import Escalation, NotifyPolicy, RouteSpec
from medmon.alerts.rules import Estimate, Rule, Subject
from medmon.alerts.signal import Signal, fingerprint, group_key, severity_for
from medmon.alerts.signing import sign, verify
from medmon.alerts.silences import active_silences, create_silence, expire_silence, list_silences, silence_alert
from medmon.alerts.status import lifecycle_status, status_of
from medmon.alerts.wakeup import OUTBOX, OutboxListener, announce

__all__ = [
    "Alert",
    "AlertError",
    "AlertEvent",
    "AlertStatus",
    "CHANNEL_TYPES",
    "Channel",
    "DeliveryError",
    "DeliveryPolicy",
    "DeliveryReport",
    "Escalation",
    "Estimate",
    "Heartbeat",
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
    "active_silences",
    "alert_history",
    "announce",
    "apply_signal",
    "apply_signals",
    "beat",
    "create_silence",
    "dead_letters",
    "decide",
    "deliver_due",
    "expire_silence",
    "fingerprint",
    "flush",
    "group_key",
    "last_beat",
    "lifecycle_status",
    "list_silences",
    "open_alerts",
    "open_fingerprints",
    "pending_count",
    "prune_delivered",
    "record_signals",
    "requeue",
    "resolve",
    "severity_for",
    "sign",
    "silence_alert",
    "status_of",
    "verify",
]
