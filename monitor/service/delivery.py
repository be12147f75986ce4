"""Run the alert delivery pass as soon as a notification is written, the tick as fallback.

The delivery job stays a scheduler job (it pauses with the scheduler when this process is not
the leader). :class:`DeliveryWaker` watches ``medmon.alerts.OUTBOX``, which counts committed
notification writes in this process and, on PostgreSQL, in every other (``LISTEN``), and asks
the scheduler to run the job now. A write that lands while a pass is running is picked up by the
pass itself, which goes round again (:func:`deliver_until_quiet`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.base import BaseScheduler
from sqlalchemy.engine import Engine

from medmon.alerts import OUTBOX, OutboxListener

log = logging.getLogger(__name__)

MAX_ROUNDS = 5  # a pass that keeps finding news yields to the tick after this many rounds


def deliver_until_quiet(one_pass: Callable[[], None], busy: threading.Event | None = None) -> int:
    """Run ``one_pass`` again while notifications were written during the last one; return rounds."""
    if busy is not None:
        busy.set()
    try:
        for rounds in range(1, MAX_ROUNDS + 1):
            seen = OUTBOX.count()
            one_pass()
            if OUTBOX.count() == seen:
                return rounds
        return MAX_ROUNDS
    finally:
        if busy is not None:
            busy.clear()


class DeliveryWaker:
    """Wakes the scheduler's delivery job when a notification is written (see the module doc)."""

    def __init__(
        self, scheduler: BaseScheduler, engine: Engine, *, job_id: str = "deliver", jobstore: str | None = None
    ) -> None:
        self.scheduler, self.job_id, self.jobstore = scheduler, job_id, jobstore
        self.busy = threading.Event()  # set by the job while a pass runs: it will see the news itself
        self._listener = OutboxListener(engine)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="medmon-delivery-waker", daemon=True)

    def start(self) -> DeliveryWaker:
        self._listener.start()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        OUTBOX.announce()  # wake the thread so it sees the stop
        self._thread.join(timeout=5)
        self._listener.stop()

    def _run(self) -> None:
        seen = OUTBOX.count()
        while not self._stop.is_set():
            count = OUTBOX.wait_past(seen, 1.0)
            if count == seen or self._stop.is_set():
                continue
            seen = count
            if self.busy.is_set():
                continue
            try:
                self.scheduler.modify_job(self.job_id, self.jobstore, next_run_time=datetime.now(UTC))
            except JobLookupError:
                pass  # the scheduler is shutting down
            except Exception as exc:
                log.warning("could not wake the delivery job: %s", exc)
