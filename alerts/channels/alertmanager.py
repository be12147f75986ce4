"""Prometheus Alertmanager API v2: ``POST /api/v2/alerts`` with a JSON array of alerts.

A notification about a medmon incident posts one Alertmanager alert for it: labels
``alertname`` (the cause, e.g. ``accuracy``), ``deployment``, ``task``, ``cause``,
``severity`` and ``incident`` (its id), so Alertmanager deduplicates on the incident as
medmon does; the member signals are listed in the ``signals`` annotation. A notification
without an incident posts each alert with its labels (plus ``alertname`` = the rule and ``severity``), annotations
(summary, owner, MedHELM category, dashboard link, evidence), ``startsAt``, ``generatorURL`` and,
once resolved, ``endsAt``. A firing alert has no ``endsAt``: Alertmanager then resolves it by
itself ``resolve_timeout`` (5 minutes by default) after the last post, so this route's repeat
interval must be shorter than that; ``medmon.monitor.plan.routing`` gives it one minute, and repeats include
acknowledged alerts. A medmon silence stops the posts, and Alertmanager then lets the alert
expire: use Alertmanager's own silences for what should stay visible there.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from pydantic import SecretStr

from medmon.alerts.channels.base import ChannelConfig, HttpSender

API_PATH = "/api/v2/alerts"


class AlertmanagerConfig(ChannelConfig):
    """``url`` is Alertmanager's base URL (``http://alertmanager:9093``); the API path is added."""


def _annotations(a: dict[str, Any]) -> dict[str, str]:
    notes = {
        "summary": a["summary"],
        "owner": a["owner"],
        "category": a["category"],
        "dashboard_url": a["dashboard_url"],
        "evidence": json.dumps(a["evidence"], sort_keys=True, default=str),
    }
    if a.get("acknowledged_by"):
        notes["acknowledged_by"] = f"{a['acknowledged_by']}: {a['ack_note'] or ''}"
    if a.get("resolve_reason"):
        notes["resolve_reason"] = f"{a['resolved_by']}: {a['resolve_reason']}"
    return {k: str(v) for k, v in notes.items() if v}


class AlertmanagerChannel:
    """Post every alert of a notification; Alertmanager groups, routes and deduplicates them itself."""

    def __init__(self, config: AlertmanagerConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        self.name = config.name
        self.config = config
        base = config.url.get_secret_value().rstrip("/")
        self._endpoint = SecretStr(base if base.endswith(API_PATH) else base + API_PATH)
        self._http = HttpSender(config.name, config.timeout_s, secrets=[config.url], transport=transport)

    def __repr__(self) -> str:
        return f"AlertmanagerChannel(name={self.name!r})"

    def render(self, notification: dict[str, Any]) -> list[dict[str, Any]]:
        incident = notification.get("incident")
        if incident is not None and notification["alerts"]:
            return [self._incident_alert(incident, notification["alerts"])]
        out = []
        for a in notification["alerts"]:
            labels = {**a["labels"], "alertname": a["rule"] or "medmon", "severity": a["severity"]}
            item: dict[str, Any] = {
                "labels": {k: str(v) for k, v in labels.items() if v != ""},
                "annotations": _annotations(a),
                "startsAt": a["starts_at"],
            }
            if a["status"] == "resolved" and a["ends_at"]:
                item["endsAt"] = a["ends_at"]
            if a["dashboard_url"]:
                item["generatorURL"] = a["dashboard_url"]
            out.append(item)
        return out

    @staticmethod
    def _incident_alert(incident: dict[str, Any], alerts: list[dict[str, Any]]) -> dict[str, Any]:
        lead = alerts[0]
        labels = {
            "alertname": incident["cause"],
            "deployment": lead["labels"].get("deployment", ""),
            "task": incident["task"],
            "cause": incident["cause"],
            "severity": incident["severity"],
            "incident": str(incident["id"]),
            "category": lead["category"],
        }
        notes = {
            "summary": incident["summary"],
            "title": incident["title"],
            "owner": incident["owner"],
            "runbook": incident["runbook"],
            "dashboard_url": incident["dashboard_url"],
            "signals": "\n".join(f"[{a['status']}] {a['summary']}" for a in alerts),
        }
        if incident.get("acknowledged_by"):
            notes["acknowledged_by"] = f"{incident['acknowledged_by']}: {incident['ack_note'] or ''}"
        if incident.get("resolve_reason"):
            notes["resolve_reason"] = f"{incident['resolved_by']}: {incident['resolve_reason']}"
        item: dict[str, Any] = {
            "labels": {k: str(v) for k, v in labels.items() if v != ""},
            "annotations": {k: str(v) for k, v in notes.items() if v},
            "startsAt": incident["opened_at"],
        }
        if incident["status"] == "resolved" and incident["closed_at"]:
            item["endsAt"] = incident["closed_at"]
        if incident["dashboard_url"]:
            item["generatorURL"] = incident["dashboard_url"]
        return item

    def send(self, body: list[dict[str, Any]], *, idempotency_key: str) -> None:
        if body:
            self._http.deliver(self._endpoint, json.dumps(body).encode(), {})

    def close(self) -> None:
        self._http.close()
