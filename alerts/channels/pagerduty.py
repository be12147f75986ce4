"""PagerDuty Events API v2: trigger, acknowledge and resolve, one event per medmon incident.

``dedup_key`` is the medmon incident's (``medmon:<deployment/task/cause>#<id>``), so every
event about one problem lands on one PagerDuty incident: the paired and unpaired detectors,
the approval minimum and the subgroups of one accuracy drop page once; ``acknowledge`` and
``resolve`` act on it. A notification without an incident (written before incidents existed)
sends one event per alert, keyed by its fingerprint. Only news produces events (PagerDuty keeps
the incident open by itself, so repeats send nothing). The routing key is a secret read from the environment and
is added at send time, so rendered bodies never hold it. PagerDuty answers 202; 400 is a
malformed event (permanent); 429 means back off; 5xx is retried.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import SecretStr

from medmon.alerts.channels.base import ChannelConfig, HttpSender

EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
_ACTION = {"firing": "trigger", "acknowledged": "acknowledge", "resolved": "resolve"}
_SEVERITY = {"critical": "critical", "warning": "warning", "info": "info"}


class PagerDutyConfig(ChannelConfig):
    url: SecretStr = SecretStr(EVENTS_URL)
    routing_key: SecretStr
    source: str = "medmon"


class PagerDutyChannel:
    """Send one Events API v2 event per alert that is news in the notification."""

    def __init__(self, config: PagerDutyConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        self.name = config.name
        self.config = config
        self._http = HttpSender(config.name, config.timeout_s, secrets=[config.routing_key], transport=transport)

    def __repr__(self) -> str:
        return f"PagerDutyChannel(name={self.name!r})"

    def render(self, notification: dict[str, Any]) -> list[dict[str, Any]]:
        incident = notification.get("incident")
        if incident is not None:
            return self._render_incident(incident, notification["alerts"])
        events = []
        for a in notification["alerts"]:
            if not a.get("new"):
                continue
            event: dict[str, Any] = {"event_action": _ACTION[a["status"]], "dedup_key": a["fingerprint"]}
            if a["status"] == "firing":
                event["payload"] = {
                    "summary": a["summary"][:1024] or f"medmon alert {a['fingerprint']}",
                    "source": f"{self.config.source}/{a['labels'].get('deployment', '')}",
                    "severity": _SEVERITY.get(a["severity"], "warning"),
                    "timestamp": a["starts_at"],
                    "component": a["task"],
                    "group": a["category"],
                    "class": a["rule"],
                    "custom_details": {
                        "owner": a["owner"],
                        "category": a["category"],
                        "labels": a["labels"],
                        "evidence": a["evidence"],
                        "escalated": a["escalated"],
                    },
                }
                event["client"] = "medmon"
                if a["dashboard_url"]:
                    event["client_url"] = a["dashboard_url"]
                    event["links"] = [{"href": a["dashboard_url"], "text": "medmon dashboard"}]
            events.append(event)
        return events

    def _render_incident(self, incident: dict[str, Any], alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not any(a.get("new") for a in alerts):
            return []
        event: dict[str, Any] = {
            "event_action": _ACTION[incident["status"]],
            "dedup_key": f"medmon:{incident['key']}#{incident['id']}",
        }
        if incident["status"] == "firing":
            lead = alerts[0]
            event["payload"] = {
                "summary": incident["summary"][:1024] or incident["title"],
                "source": f"{self.config.source}/{lead['labels'].get('deployment', '')}",
                "severity": _SEVERITY.get(incident["severity"], "warning"),
                "timestamp": incident["opened_at"],
                "component": incident["task"],
                "group": lead["category"],
                "class": incident["cause"],
                "custom_details": {
                    "owner": incident["owner"],
                    "what to do": incident["runbook"],
                    "signals": [
                        {"rule": a["rule"], "status": a["status"], "summary": a["summary"], "evidence": a["evidence"]}
                        for a in alerts
                    ],
                    "escalated": any(a["escalated"] for a in alerts),
                },
            }
            event["client"] = "medmon"
            if incident["dashboard_url"]:
                event["client_url"] = incident["dashboard_url"]
                event["links"] = [{"href": incident["dashboard_url"], "text": "medmon dashboard"}]
        return [event]

    def send(self, body: list[dict[str, Any]], *, idempotency_key: str) -> None:
        key = self.config.routing_key.get_secret_value()
        for event in body:
            content = json.dumps({"routing_key": key, **event}).encode()
            self._http.deliver(self.config.url, content, {})

    def close(self) -> None:
        self._http.close()
