"""What the Alerts page shows beside its incidents: silences and dead letters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session

from medmon.alerts import dead_letters, list_silences


@dataclass(frozen=True)
class SilenceRow:
    """A silence in force or pending: what it mutes, until when, who set it and why."""

    id: int
    matchers: str
    starts_at: datetime | None
    ends_at: datetime | None
    created_by: str
    reason: str


def silences(session: Session, now: datetime) -> list[SilenceRow]:
    """Active and pending silences, ending soonest last."""
    return [
        SilenceRow(
            s.id or 0,
            ", ".join(f"{m['name']}{m['op']}{m['value']}" for m in s.matchers),
            s.starts_at,
            s.ends_at,
            s.created_by,
            s.reason,
        )
        for s in list_silences(session, now)
    ]


@dataclass(frozen=True)
class DeadLetter:
    """A notification that could not be delivered, with the last error the channel gave."""

    id: int
    alert_id: int | None  # None: a committee report notice
    route: str
    event: str
    attempts: int
    last_error: str
    created_at: datetime | None
    summary: str


def dead_letter_list(session: Session, *, limit: int = 200) -> list[DeadLetter]:
    """Undeliverable notifications, newest first."""
    return [
        DeadLetter(
            n.id or 0,
            n.alert_id,
            n.route,
            n.event,
            n.attempts,
            n.last_error or "",
            n.created_at,
            str((n.payload or {}).get("summary", "")),
        )
        for n in dead_letters(session, limit=limit)
    ]
