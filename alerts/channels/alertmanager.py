"""Prometheus Alertmanager API v2: ``POST /api/v2/alerts`` with a JSON array of alerts.

Each alert carries its labels (plus ``alertname`` = the rule and ``severity``), annotations
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
    notes = {"summary": a["summary"], "owner": a["owner"], "category": a["category"],
             "dashboard_url": a["dashboard_url"], "evidence": json.dumps(a["evidence"], sort_keys=True, default=str)}
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
        out = []
        for a in notification["alerts"]:
            labels = {**a["labels"], "alertname": a["rule"] or "medmon", "severity": a["severity"]}
            item: dict[str, Any] = {"labels": {k: str(v) for k, v in labels.items() if v != ""},
                                    "annotations": _annotations(a), "startsAt": a["starts_at"]}
            if a["status"] == "resolved" and a["ends_at"]:
                item["endsAt"] = a["ends_at"]
            if a["dashboard_url"]:
                item["generatorURL"] = a["dashboard_url"]
            out.append(item)
        return out

    def send(self, body: list[dict[str, Any]], *, idempotency_key: str) -> None:
        if body:
            self._http.deliver(self._endpoint, json.dumps(body).encode(), {})

    def close(self) -> None:
        self._http.close()
