"""Slack incoming webhook: Block Kit blocks with a plain-text fallback.

The webhook URL is the credential (anyone holding it can post), so it is a ``SecretStr`` read
from the environment. Slack answers 200 with the body ``ok``; 400 ``invalid_payload``, 403,
404 ``no_service`` and 410 ``channel_is_archived`` are permanent, 429 carries ``Retry-After``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import Field

from medmon.alerts.channels.base import ChannelConfig, HttpSender

_ICON = {"critical": ":red_circle:", "warning": ":large_orange_circle:", "info": ":large_blue_circle:"}
_STATE = {"firing": "FIRING", "acknowledged": "ACKNOWLEDGED", "resolved": "RESOLVED"}


class SlackConfig(ChannelConfig):
    max_listed: int = Field(10, ge=1, le=40)  # Slack allows 50 blocks per message


def _esc(text: str) -> str:
    """Slack mrkdwn needs &, < and > escaped; everything else is literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _alert_block(a: dict[str, Any]) -> dict[str, Any]:
    icon = ":large_green_circle:" if a["status"] == "resolved" else _ICON.get(a["severity"], "")
    lines = [f"{icon} *{_STATE[a['status']]}* · {a['severity']} · {_esc(a['summary'])}"]
    since = f" · since {a['starts_at_text']}" if a.get("starts_at_text") else ""
    lines.append(
        f"Task `{_esc(a['task'] or '-')}` · {_esc(a['category'] or 'no MedHELM category')} · "
        f"owner {_esc(a['owner'] or 'unassigned')}{since}"
    )
    if a["status"] == "acknowledged":
        lines.append(f"Acknowledged by {_esc(a['acknowledged_by'] or '?')}: {_esc(a['ack_note'] or '')}")
    if a["status"] == "resolved" and a.get("resolve_reason"):
        lines.append(f"Resolved by {_esc(a['resolved_by'] or '?')}: {_esc(a['resolve_reason'])}")
    if a["dashboard_url"]:
        lines.append(f"<{_esc(a['dashboard_url'])}|Open in the medmon dashboard>")
    return {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)[:3000]}}


class SlackChannel:
    """Post ``{"text": fallback, "blocks": [...]}`` to a Slack incoming webhook."""

    def __init__(self, config: SlackConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        self.name = config.name
        self.config = config
        self._http = HttpSender(config.name, config.timeout_s, transport=transport)

    def __repr__(self) -> str:
        return f"SlackChannel(name={self.name!r})"

    def render(self, notification: dict[str, Any]) -> dict[str, Any]:
        alerts = notification["alerts"]
        counts = notification["counts"]
        incident = notification.get("incident")
        task = notification["group_labels"].get("task") or "monitor"
        what = f"incident #{incident['id']} {incident['title']}" if incident else task
        title = f"medmon {notification['event']}: {what} ({counts['firing']} firing"
        title += f", {counts['acknowledged']} acknowledged" if counts["acknowledged"] else ""
        title += f", {counts['resolved']} resolved)" if counts["resolved"] else ")"
        listed = alerts[: self.config.max_listed]
        blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": title[:150]}}]
        blocks += [_alert_block(a) for a in listed]
        if incident and incident["runbook"]:
            blocks.append(
                {
                    "type": "section",
                    "text": {"type": "mrkdwn", "text": f"*What to do:* {_esc(incident['runbook'])}"[:3000]},
                }
            )
        more = len(alerts) - len(listed) + notification["truncated_alerts"]
        sent = notification.get("sent_at_text") or notification["sent_at"]  # rows queued before it existed
        context = f"group `{_esc(notification['group_key'])}` · sent {sent}"
        if more:
            context = f"+{more} more alert(s) in the dashboard · " + context
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]})
        return {"text": notification["summary"][:3000], "blocks": blocks}

    def send(self, body: dict[str, Any], *, idempotency_key: str) -> None:
        content = json.dumps(body).encode()
        self._http.deliver(self.config.url, content, {"Idempotency-Key": idempotency_key})

    def close(self) -> None:
        self._http.close()
