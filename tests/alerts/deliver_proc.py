"""A delivery worker in its own process, for the crash test: deliver until the outbox is empty.

Run as ``python -m tests.alerts.deliver_proc DATABASE_URL RECEIVER_URL`` with the webhook secret in
``MEDMON_TEST_WEBHOOK_SECRET``. It uses the real clock and the real outbox, so killing it at any
instant is what a crashed service looks like to the database and to the receiver.
"""

from __future__ import annotations

import os
import random
import sys
import threading

from pydantic import SecretStr
from sqlmodel import Session

from medmon.alerts import DeliveryPolicy, WebhookChannel, deliver_due, pending_count
from medmon.alerts.channels import WebhookConfig
from medmon.db import utcnow
from medmon.monitor.storage import make_engine


def main(database: str, url: str) -> int:
    engine = make_engine(database, create=False)
    channel = WebhookChannel(
        WebhookConfig(name="hook", url=SecretStr(url), secret=SecretStr(os.environ["MEDMON_TEST_WEBHOOK_SECRET"]))
    )
    policy = DeliveryPolicy(base_delay_s=0.05, max_delay_s=0.5, rng=random.Random(1))
    idle = threading.Event()
    while True:
        report = deliver_due(engine, {"hook": channel}, utcnow, policy, limit=50)
        with Session(engine) as session:
            if pending_count(session) == 0:
                return 0
        if report.delivered == 0:
            idle.wait(0.05)  # only retries in backoff are left


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
