"""What the monitor hands to alerts: a plain description of a condition, firing or cleared."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from medmon.alerts.catalogue import cause_of
from medmon.alerts.models import Severity

IDENTIFYING_LABELS = ("deployment", "task", "metric", "rule")
GROUP_LABELS = ("deployment", "task", "cause")
MONITOR_GROUP = "_monitor"


def fingerprint(labels: dict[str, str]) -> str:
    """A stable hash of the sorted identifying labels: the alert's identity, as in Alertmanager."""
    ident = {k: labels.get(k, "") for k in IDENTIFYING_LABELS}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def group_key(labels: dict[str, str]) -> str:
    """The group an alert is notified with: its incident's key, one per task and cause.

    Alerts about the monitor itself (no task) share the deployment's ``_monitor`` task.

    Examples
    --------
    >>> group_key({"deployment": "production", "task": "dosing", "metric": "score", "rule": "drift_drop"})
    'production/dosing/accuracy'
    """
    return f"{labels.get('deployment', '')}/{labels.get('task') or MONITOR_GROUP}/{cause_of(labels).value}"


@dataclass(frozen=True)
class Signal:
    """A rule's verdict for one stream: ``firing`` True raises or refreshes, False clears."""

    labels: dict[str, str]
    firing: bool
    severity: Severity = Severity.warning
    summary: str = ""
    owner: str = ""
    category: str = ""
    dashboard_url: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.labels)

    @property
    def group_key(self) -> str:
        return group_key(self.labels)


def severity_for(risk_tier: str, override: str | None = None) -> Severity:
    """Severity follows the use case's risk tier unless the task sets its own."""
    if override:
        return Severity(override)
    return {"high": Severity.critical, "medium": Severity.warning}.get(risk_tier, Severity.info)
