"""Notification channels: each renders a payload (pure) and sends it (HTTP), its config beside it.

``CHANNEL_TYPES`` maps the plan's route ``type`` to the config and channel classes, built-in
channels registered the way another one would be.
"""

from medmon.alerts.channels.alertmanager import AlertmanagerChannel, AlertmanagerConfig
from medmon.alerts.channels.base import Channel, ChannelConfig
from medmon.alerts.channels.pagerduty import PagerDutyChannel, PagerDutyConfig
from medmon.alerts.channels.slack import SlackChannel, SlackConfig
from medmon.alerts.channels.teams import TeamsChannel, TeamsConfig
from medmon.alerts.channels.webhook import WebhookChannel, WebhookConfig

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
    "PagerDutyChannel",
    "PagerDutyConfig",
    "SlackChannel",
    "SlackConfig",
    "TeamsChannel",
    "TeamsConfig",
    "WebhookChannel",
    "WebhookConfig",
]
