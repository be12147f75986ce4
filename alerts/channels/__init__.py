"""Notification channels: each renders a payload (pure) and sends it (HTTP), its config beside it.

``CHANNEL_TYPES`` maps the plan's route ``type`` to the config and channel classes, built-in
channels registered the way another one would be.
"""

from alerts.channels.alertmanager import AlertmanagerChannel, AlertmanagerConfig
from alerts.channels.base import Channel, ChannelConfig, HttpSender, classify_status, redact
from alerts.channels.pagerduty import PagerDutyChannel, PagerDutyConfig
from alerts.channels.slack import SlackChannel, SlackConfig
from alerts.channels.teams import TeamsChannel, TeamsConfig
from alerts.channels.webhook import WebhookChannel, WebhookConfig

CHANNEL_TYPES: dict[str, tuple[type[ChannelConfig], type]] = {
    "webhook": (WebhookConfig, WebhookChannel),
    "slack": (SlackConfig, SlackChannel),
    "teams": (TeamsConfig, TeamsChannel),
    "pagerduty": (PagerDutyConfig, PagerDutyChannel),
    "alertmanager": (AlertmanagerConfig, AlertmanagerChannel),
}

__all__ = [
    "AlertmanagerChannel",
    "AlertmanagerConfig",
    "CHANNEL_TYPES",
    "Channel",
    "ChannelConfig",
    "HttpSender",
    "PagerDutyChannel",
    "PagerDutyConfig",
    "SlackChannel",
    "SlackConfig",
    "TeamsChannel",
    "TeamsConfig",
    "WebhookChannel",
    "WebhookConfig",
    "classify_status",
    "redact",
]
