"""Governance alerts: signals become alerts with a lifecycle, delivered through a durable outbox."""

from alerts.channels import Channel, WebhookChannel
from alerts.errors import AlertError, DeliveryError, PermanentDeliveryError, RetryableDeliveryError
from alerts.lifecycle import acknowledge, apply_signal, open_alerts, renotify_due, resolve
from alerts.models import Alert, AlertStatus, Notification, NotificationStatus, Severity
from alerts.outbox import DeliveryPolicy, DeliveryReport, deliver_due
from alerts.signal import Signal, fingerprint, severity_for
from alerts.signing import sign, verify

__all__ = [
    "Alert",
    "AlertError",
    "AlertStatus",
    "Channel",
    "DeliveryError",
    "DeliveryPolicy",
    "DeliveryReport",
    "Notification",
    "NotificationStatus",
    "PermanentDeliveryError",
    "RetryableDeliveryError",
    "Severity",
    "Signal",
    "WebhookChannel",
    "acknowledge",
    "apply_signal",
    "deliver_due",
    "fingerprint",
    "open_alerts",
    "renotify_due",
    "resolve",
    "severity_for",
    "sign",
    "verify",
]
