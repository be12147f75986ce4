"""The outbox worker: deliver pending notifications in order per group and route, with backoff.

Delivery is at-least-once: a crash between the receiver's 2xx and the status update re-sends
the same notification with the same ``Idempotency-Key``, which receivers use to drop the copy.
Each (group, route) pair is a lane: a notification waits until every older one in its lane is
delivered or dead, so a receiver always sees an alert's news in the order it happened. Backoff
lives here and only here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.alerts.channels.base import Channel
from medmon.alerts.errors import PermanentDeliveryError, RetryableDeliveryError
from medmon.alerts.models import Notification, NotificationStatus
from medmon.alerts.wakeup import announce


@dataclass
class DeliveryPolicy:
    """Retry schedule: exponential backoff with jitter, dead after ``max_attempts``.

    With the defaults, the attempts before a notification is dead span at least 73 minutes
    (half of each capped delay, summed), so a receiver that is down for an hour still gets
    everything when it returns. ``max_retry_after_s`` caps a receiver's ``Retry-After``.
    """

    max_attempts: int = 24
    base_delay_s: float = 1.0
    max_delay_s: float = 600.0
    max_retry_after_s: float = 3600.0
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not 0 < self.base_delay_s <= self.max_delay_s:
            raise ValueError(
                f"expected 0 < base_delay_s <= max_delay_s, got {self.base_delay_s} and {self.max_delay_s}"
            )

    def delay(self, attempts: int, retry_after: float | None) -> timedelta:
        """Exponential backoff with jitter, never sooner than the receiver's Retry-After."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** max(0, attempts - 1))
        seconds = self.rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            seconds = max(seconds, min(retry_after, self.max_retry_after_s))
        return timedelta(seconds=seconds)


@dataclass
class DeliveryReport:
    delivered: int = 0
    retried: int = 0
    dead: int = 0
    waiting: int = 0  # due, but skipped because their route failed earlier in this pass


def _lanes(session: Session, limit: int) -> dict[tuple[str, str], list[int]]:
    pending = session.exec(
        select(Notification.id, Notification.group_key, Notification.route)
        .where(Notification.status == NotificationStatus.pending)
        .order_by(col(Notification.id))
        .limit(limit)
    ).all()
    lanes: dict[tuple[str, str], list[int]] = {}
    for nid, group, route in pending:
        if nid is not None:
            lanes.setdefault((group, route), []).append(nid)
    return lanes


def deliver_due(
    engine: Engine,
    channels: Mapping[str, Channel],
    now: Callable[[], datetime],
    policy: DeliveryPolicy | None = None,
    limit: int = 5000,
) -> DeliveryReport:
    """Deliver what is due, lane by lane, oldest first; one transaction per attempt.

    A lane stops at its first notification that is not due or fails. After a retryable
    failure the route is skipped for the rest of the pass: a receiver that is down is asked
    once per pass, not once per lane.
    """
    policy = policy or DeliveryPolicy()
    report = DeliveryReport()
    with Session(engine) as session:
        lanes = _lanes(session, limit)
    failing: set[str] = set()
    for (_group, route), ids in lanes.items():
        for nid in ids:
            if route in failing:
                report.waiting += 1
                break
            outcome = _attempt(engine, nid, channels.get(route), now, policy)
            if outcome == "gone":  # another worker settled it meanwhile
                continue
            if outcome == "delivered":
                report.delivered += 1
                continue
            if outcome == "retry":
                report.retried += 1
                failing.add(route)
            elif outcome == "dead":
                report.dead += 1
                continue  # the lane moves on past a dead letter
            break
    return report


def _attempt(
    engine: Engine, nid: int, channel: Channel | None, now: Callable[[], datetime], policy: DeliveryPolicy
) -> str:
    with Session(engine) as session:
        n = session.get(Notification, nid)
        if n is None or n.status != NotificationStatus.pending:
            return "gone"
        if n.next_attempt_at > now():
            return "not_due"
        n.attempts += 1
        try:
            if channel is None:
                raise PermanentDeliveryError(f"no channel configured for route {n.route!r}")
            channel.send(channel.render(n.payload), idempotency_key=n.idempotency_key)
        except RetryableDeliveryError as exc:
            n.last_error = str(exc)
            if n.attempts >= policy.max_attempts:
                n.status, outcome = NotificationStatus.dead, "dead"
            else:
                n.next_attempt_at, outcome = now() + policy.delay(n.attempts, exc.retry_after), "retry"
        except PermanentDeliveryError as exc:
            n.last_error, n.status, outcome = str(exc), NotificationStatus.dead, "dead"
        else:
            n.status, n.delivered_at, n.last_error, outcome = NotificationStatus.delivered, now(), None, "delivered"
        session.add(n)
        session.commit()
        return outcome


def dead_letters(session: Session, *, limit: int = 200) -> list[Notification]:
    """Notifications that will not be delivered without a person, newest first, with their last error."""
    return list(
        session.exec(
            select(Notification)
            .where(Notification.status == NotificationStatus.dead)
            .order_by(col(Notification.id).desc())
            .limit(limit)
        ).all()
    )


def enqueue_notice(
    session: Session, route: str, key: str, event: str, payload: dict[str, Any], now: datetime
) -> Notification:
    """Queue a notice that is not about an alert (a committee report's) in the caller's transaction.

    It goes through the same lanes, retries, signing and dead letters as alert news; ``key`` is
    its idempotency key and group, so queuing the same notice twice fails on the unique key.
    """
    row = Notification(
        alert_id=None,
        group_key=key,
        route=route,
        idempotency_key=key,
        event=event,
        alert_count=0,
        payload=payload,
        next_attempt_at=now,
        created_at=now,
    )
    session.add(row)
    session.flush()
    announce(session)
    return row


def requeue(session: Session, notification_id: int, actor: str, note: str, now: datetime) -> Notification:
    """A person sends a dead letter again (after fixing the receiver): attempts start over.

    Raises
    ------
    LookupError
        No notification has ``notification_id``.
    ValueError
        It is not a dead letter, or ``actor`` is empty.
    """
    row = session.get(Notification, notification_id)
    if row is None:
        raise LookupError(f"no notification with id {notification_id}")
    if row.status != NotificationStatus.dead:
        raise ValueError(f"notification {notification_id} is {row.status.value}; only a dead letter can be requeued")
    if not actor.strip():
        raise ValueError("a requeue must name who asked for it")
    row.status, row.attempts, row.next_attempt_at = NotificationStatus.pending, 0, now
    row.requeued_by, row.requeued_at, row.requeue_note = actor, now, note
    session.add(row)
    announce(session)
    return row
