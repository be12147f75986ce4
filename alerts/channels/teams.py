"""Microsoft Teams workflow webhook: one Adaptive Card per notification.

Teams Workflows accept Adaptive Cards only, wrapped as
``{"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
"content": {...}}]}``. They answer 202 and report failures only in the flow's run history, so
a 202 here means "accepted by the workflow", not "shown in the channel".
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from pydantic import Field

from medmon.alerts.channels.base import ChannelConfig, HttpSender

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
_COLOR = {"critical": "Attention", "warning": "Warning", "info": "Accent"}


class TeamsConfig(ChannelConfig):
    max_listed: int = Field(10, ge=1, le=50)


_MARKDOWN = re.compile(r"([\\`*_\[\]<>~])")  # what makes links, emphasis and code in Teams' Markdown


def _md(text: str) -> str:
    r"""Text that Teams' Markdown shows as written: a served model name like ``[click](https://x)``
    must not become a link in an alert card, nor ``x://`` an autolink (a zero-width space breaks it).

    Examples
    --------
    >>> _md("**x** [a](b)") == r"\*\*x\*\* \[a\](b)", "://" in _md("https://evil.example")
    (True, False)
    """
    return _MARKDOWN.sub(r"\\\1", text).replace("://", ":\u200b//")


def _alert_items(a: dict[str, Any]) -> list[dict[str, Any]]:
    color = "Good" if a["status"] == "resolved" else _COLOR.get(a["severity"], "Default")
    facts = [
        {"title": "Status", "value": a["status"]},
        {"title": "Severity", "value": a["severity"]},
        {"title": "Task", "value": _md(a["task"] or "-")},
        {"title": "MedHELM category", "value": _md(a["category"] or "-")},
        {"title": "Owner", "value": _md(a["owner"] or "unassigned")},
    ]
    if a.get("starts_at_text"):
        facts.append({"title": "Since", "value": a["starts_at_text"]})
    if a["status"] == "acknowledged":
        facts.append({"title": "Acknowledged by", "value": _md(f"{a['acknowledged_by']}: {a['ack_note'] or ''}")})
    if a["status"] == "resolved" and a.get("resolve_reason"):
        facts.append({"title": "Resolved by", "value": _md(f"{a['resolved_by']}: {a['resolve_reason']}")})
    return [
        {
            "type": "TextBlock",
            "text": _md(a["summary"]),
            "wrap": True,
            "weight": "Bolder",
            "color": color,
            "separator": True,
        },
        {"type": "FactSet", "facts": facts},
    ]


class TeamsChannel:
    """Post an Adaptive Card message to a Teams workflow webhook."""

    def __init__(self, config: TeamsConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        self.name = config.name
        self.config = config
        self._http = HttpSender(config.name, config.timeout_s, transport=transport)

    def __repr__(self) -> str:
        return f"TeamsChannel(name={self.name!r})"

    def render(self, notification: dict[str, Any]) -> dict[str, Any]:
        alerts = notification["alerts"]
        counts = notification["counts"]
        task = notification["group_labels"].get("task") or "monitor"
        body: list[dict[str, Any]] = [
            {
                "type": "TextBlock",
                "size": "Large",
                "weight": "Bolder",
                "wrap": True,
                "text": f"medmon {notification['event']}: {_md(task)}",
            },
            {
                "type": "TextBlock",
                "isSubtle": True,
                "wrap": True,
                "text": f"{counts['firing']} firing, {counts['acknowledged']} acknowledged, "
                f"{counts['resolved']} resolved",
            },
        ]
        listed = alerts[: self.config.max_listed]
        for a in listed:
            body += _alert_items(a)
        more = len(alerts) - len(listed) + notification["truncated_alerts"]
        if more:
            body.append({"type": "TextBlock", "isSubtle": True, "text": f"+{more} more alert(s) in the dashboard"})
        card: dict[str, Any] = {
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard",
            "version": "1.4",
            "body": body,
        }
        if notification.get("dashboard_url"):
            card["actions"] = [
                {
                    "type": "Action.OpenUrl",
                    "title": "Open in the medmon dashboard",
                    "url": notification["dashboard_url"],
                }
            ]
        return {"type": "message", "attachments": [{"contentType": CARD_TYPE, "contentUrl": None, "content": card}]}

    def send(self, body: dict[str, Any], *, idempotency_key: str) -> None:
        self._http.deliver(self.config.url, json.dumps(body).encode(), {"Idempotency-Key": idempotency_key})

    def close(self) -> None:
        self._http.close()
