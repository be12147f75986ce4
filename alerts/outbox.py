"""The outbox worker: deliver pending notifications, in order per alert, with backoff.

Delivery is at-least-once: a crash between the receiver's 2xx and the status update re-sends
the same notification with the same ``Idempotency-Key``, which receivers use to drop the copy.
Backoff lives here and only here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from alerts.channels.base import Channel
from alerts.errors import PermanentDeliveryError, RetryableDeliveryError
from alerts.models import Notification, NotificationStatus
from monitor.storage import as_utc


@dataclass
class DeliveryPolicy:
    max_attempts: int = 8
    base_delay_s: float = 1.0
    max_delay_s: float = 600.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempts: int, retry_after: float | None) -> timedelta:
        """Exponential backoff with full jitter, never sooner than the receiver's Retry-After."""
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** max(0, attempts - 1))
        seconds = self.rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            seconds = max(seconds, retry_after)
        return timedelta(seconds=seconds)


@dataclass
class DeliveryReport:
    delivered: int = 0
    retried: int = 0
    dead: int = 0


def deliver_due(engine: Engine, channels: Mapping[str, Channel], now: Callable[[], datetime],
                policy: DeliveryPolicy | None = None, limit: int = 500) -> DeliveryReport:
    """Try every due notification once; only the oldest pending one per alert is sent."""
    policy = policy or DeliveryPolicy()
    report = DeliveryReport()
    with Session(engine) as session:
        pending = session.exec(
            select(Notification).where(Notification.status == NotificationStatus.pending)
            .order_by(col(Notification.id)).limit(limit)
        ).all()
        ids = []
        blocked: set[tuple[int, str]] = set()
        current = now()
        for n in pending:
            head = (n.alert_id, n.route)
            if head in blocked:
                continue
            blocked.add(head)  # later notifications of this alert wait for this one
            if as_utc(n.next_attempt_at) <= current:
                ids.append(n.id)
    for nid in ids:
        with Session(engine) as session:
            n = session.get(Notification, nid)
            if n is None or n.status != NotificationStatus.pending:
                continue
            channel = channels.get(n.route)
            n.attempts += 1
            try:
                if channel is None:
                    raise PermanentDeliveryError(f"no channel configured for route {n.route!r}")
                channel.send(channel.render(n.payload), idempotency_key=n.idempotency_key)
            except RetryableDeliveryError as exc:
                n.last_error = str(exc)
                if n.attempts >= policy.max_attempts:
                    n.status = NotificationStatus.dead
                    report.dead += 1
                else:
                    n.next_attempt_at = now() + policy.delay(n.attempts, exc.retry_after)
                    report.retried += 1
            except PermanentDeliveryError as exc:
                n.last_error = str(exc)
                n.status = NotificationStatus.dead
                report.dead += 1
            else:
                n.status = NotificationStatus.delivered
                n.delivered_at = now()
                n.last_error = None
                report.delivered += 1
            session.add(n)
            session.commit()
    return report
