"""Notification channels: each renders a payload (pure) and sends it (one HTTP call)."""

from alerts.channels.base import Channel, classify_status
from alerts.channels.webhook import WebhookChannel

__all__ = ["Channel", "WebhookChannel", "classify_status"]
