"""An alert's status as a pure function of its timestamps, its acknowledgement and the silences.

Nothing flips a status flag: ``ends_at`` says resolved, ``acknowledged_at`` says acknowledged,
and an active silence whose matchers hold says silenced. ``Alert.status`` is the stored copy of
``lifecycle_status`` for queries, refreshed by ``sync_status`` and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from medmon.alerts.matchers import Matcher, matches_all
from medmon.alerts.models import Alert, AlertStatus, Silence


def lifecycle_status(alert: Alert) -> AlertStatus:
    """resolved once it has an end, acknowledged once someone took it, firing otherwise."""
    if alert.ends_at is not None:
        return AlertStatus.resolved
    if alert.acknowledged_at is not None:
        return AlertStatus.acknowledged
    return AlertStatus.firing


def sync_status(alert: Alert) -> AlertStatus:
    """Store ``lifecycle_status`` on the row; returns the status it had before."""
    before = alert.status
    alert.status = lifecycle_status(alert)
    return before


def silence_active(silence: Silence, now: datetime) -> bool:
    return silence.starts_at <= now < silence.ends_at


def silence_matches(silence: Silence, alert: Alert) -> bool:
    """Matchers see the alert's labels plus its ``severity``; an empty silence matches nothing."""
    if not silence.matchers:
        return False
    labels = {**alert.labels, "severity": alert.severity.value}
    return matches_all((Matcher.from_dict(m) for m in silence.matchers), labels)


def silenced_by(alert: Alert, silences: Iterable[Silence], now: datetime) -> Silence | None:
    """The first active silence that mutes ``alert``, if any."""
    return next((s for s in silences if silence_active(s, now) and silence_matches(s, alert)), None)


def status_of(alert: Alert, silences: Iterable[Silence], now: datetime) -> AlertStatus:
    """What a person should see: resolved, silenced (an open alert under an active silence),
    acknowledged or firing."""
    status = lifecycle_status(alert)
    if status is not AlertStatus.resolved and silenced_by(alert, silences, now) is not None:
        return AlertStatus.silenced
    return status
