"""Real answers judged without storing them: from the span's content, in memory, at ingest.

With ``privacy.store_text: false`` no prompt or completion is stored, so the leader's judging
job has nothing to read. Instead each receiver (every ``medmon serve`` replica) keeps the sampled
exchanges it has just stored in a bounded in-memory queue; a worker thread redacts them (the
plan's redactor, before anything leaves the process), sends them only to the ``phi_allowed``
judges, and stores the verdict alone (scores per judge and criterion, agreement, cost). The text
is dropped once judged. The leader's judging job (``judging.feed_verdicts``) feeds the verdicts to
the task's streams, so
detector state has one writer whatever the number of replicas.

The sample is the same as with stored text (a hash of the span id under ``sample_rate``). The
daily cap holds across replicas: a worker claims its exchanges by inserting their verdict rows as
``PENDING`` first, then keeps only the claims among the day's first ``daily_cap`` rows. A span
already judged (an exporter's retry reaching another replica) is not judged again. A full queue
drops the newest exchanges with a warning rather than slowing ingest; a replica stopped before
judging leaves its claims ``PENDING``, and the leader (``judging.feed_verdicts``) marks them lost
after ``LOST_AFTER``.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from medmon.db import as_utc, session_scope, utcnow
from medmon.monitor.models import TrafficJudgement, TrafficSpan
from medmon.monitor.plan.model import Plan
from medmon.monitor.traffic.judging import BATCH, PENDING, _judges, judge_exchanges, record_verdict, sampled
from medmon.monitor.traffic.routes import route_task
from medmon.monitor.traffic.spans import CallRecord
from medmon.probes.redaction import Redactor, load_redactor, protect_text

log = logging.getLogger("medmon.traffic.judging")

QUEUE_MAX = 1000


@dataclass(frozen=True)
class Exchange:
    """A sampled real exchange, held in memory only (raw until the worker redacts it)."""

    trace_id: str
    span_id: str
    task_id: str
    prompt: str | None
    completion: str


def wanted(plan: Plan) -> bool:
    """Whether this plan judges in memory: judging on, text not stored, a jury with an in-network judge."""
    t = plan.traffic
    return (
        t is not None
        and t.judging is not None
        and plan.jury is not None
        and not plan.privacy.store_text
        and bool(_judges(plan))
    )


def sampled_exchanges(plan: Plan, calls: Sequence[CallRecord]) -> list[Exchange]:
    """The calls in the judged sample: routed, successful, with a completion, span id hash under the rate."""
    t = plan.traffic
    assert t is not None and t.judging is not None
    out = []
    for c in calls:
        if c.completion is None or c.error_type is not None or not sampled(c.span_id, t.judging.sample_rate):
            continue
        task = route_task(t.routes, c)
        if task is not None:
            out.append(Exchange(c.trace_id, c.span_id, task, c.prompt, c.completion))
    return out


def _day_start(now: datetime) -> datetime:
    return as_utc(now).replace(hour=0, minute=0, second=0, microsecond=0)


def claim(engine: Engine, plan: Plan, batch: Sequence[Exchange], now: datetime) -> list[tuple[int, Exchange]]:
    """Claim verdict rows for ``batch`` within the daily cap (across replicas); (row id, exchange) kept."""
    assert plan.traffic is not None and plan.traffic.judging is not None
    cap = plan.traffic.judging.daily_cap
    start = _day_start(now)
    with session_scope(engine) as s:
        t = TrafficSpan
        spans = {
            (trace, span): i
            for i, trace, span in s.exec(
                select(t.id, t.trace_id, t.span_id).where(
                    col(t.trace_id).in_({x.trace_id for x in batch}),  # the (trace id, span id) index
                    col(t.span_id).in_([x.span_id for x in batch]),
                )
            ).all()
        }
        done = set(
            s.exec(
                select(TrafficJudgement.span_id).where(
                    col(TrafficJudgement.span_id).in_([i for i in spans.values() if i is not None])
                )
            ).all()
        )
        rows = []
        for x in batch:
            span = spans.get((x.trace_id, x.span_id))
            if span is not None and span not in done:
                done.add(span)
                row = TrafficJudgement(span_id=span, task_id=x.task_id, judged_at=now, error=PENDING, streamed=False)
                s.add(row)
                rows.append((row, x))
        s.flush()
        claimed = [(row.id or 0, x) for row, x in rows]
    if not claimed:
        return []
    with session_scope(engine) as s:  # the day's first ``cap`` claims keep their place
        first = set(
            s.exec(
                select(TrafficJudgement.id)
                .where(col(TrafficJudgement.judged_at) >= start)
                .order_by(col(TrafficJudgement.id))
                .limit(cap)
            ).all()
        )
        over = [i for i, _ in claimed if i not in first]
        if over:
            s.execute(delete(TrafficJudgement).where(col(TrafficJudgement.id).in_(over)))
    return [(i, x) for i, x in claimed if i in first]


def judge_batch(engine: Engine, plan: Plan, redactor: Redactor, batch: Sequence[Exchange], now: datetime) -> int:
    """Claim, redact, judge and store the verdicts of one batch; returns verdicts stored."""
    kept = claim(engine, plan, batch, now)
    if not kept:
        return 0
    exchanges = [
        (
            str(i),
            protect_text(redactor, x.prompt, "prompt") if x.prompt is not None else None,
            protect_text(redactor, x.completion, "completion"),
        )
        for i, x in kept
    ]
    ready = [
        (i, e) for (i, _), e in zip(kept, exchanges, strict=True) if e[2] is not None
    ]  # the redactor failed: no text
    try:
        outcomes = judge_exchanges(plan, [e for _, e in ready])
    except Exception as exc:
        log.exception("judging %d real answer(s) in memory failed", len(ready))
        with session_scope(engine) as s:
            for i, _ in kept:
                row = s.get(TrafficJudgement, i)
                if row is not None:
                    row.error = f"judging failed: {type(exc).__name__}"
                    s.add(row)
        return 0
    with session_scope(engine) as s:
        by_id = dict(zip((i for i, _ in ready), outcomes, strict=True))
        for i, _ in kept:
            row = s.get(TrafficJudgement, i)
            if row is None:
                continue
            if i in by_id:
                record_verdict(row, by_id[i])
            else:
                row.error = "not judged: the redactor returned no text"
            s.add(row)
    return len(by_id)


class InMemoryJudging:
    """A receiver's queue of sampled exchanges and the worker thread that judges them."""

    def __init__(
        self, engine: Engine, plan: Plan, *, now: Callable[[], datetime] = utcnow, maxsize: int = QUEUE_MAX
    ) -> None:
        self.engine, self.plan, self.now = engine, plan, now
        self.redactor = load_redactor(plan.privacy.redactor)
        self.queue: queue.Queue[Exchange] = queue.Queue(maxsize=maxsize)
        self.dropped = 0
        self.judged = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def offer(self, calls: Sequence[CallRecord]) -> int:
        """Queue the stored calls that are in the sample; returns how many (never blocks ingest).

        The worker thread starts with the first exchange queued.
        """
        n = 0
        for x in sampled_exchanges(self.plan, calls):
            try:
                self.queue.put_nowait(x)
                n += 1
            except queue.Full:
                self.dropped += 1
                if self.dropped % 100 == 1:
                    log.warning(
                        "the in-memory judging queue is full: %d sampled exchange(s) dropped unjudged", self.dropped
                    )
        if n:
            self.start()
        return n

    def run_once(self) -> int:
        """Judge up to one batch from the queue (waiting up to a second for the first); verdicts stored."""
        try:
            batch = [self.queue.get(timeout=1.0)]
        except queue.Empty:
            return 0
        while len(batch) < BATCH:
            try:
                batch.append(self.queue.get_nowait())
            except queue.Empty:
                break
        try:
            done = judge_batch(self.engine, self.plan, self.redactor, batch, self.now())
        except Exception:
            log.exception("in-memory judging of %d exchange(s) failed", len(batch))
            done = 0
        self.judged += done
        return done

    def start(self) -> None:
        """Start the worker thread (once)."""
        with self._lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name="medmon-traffic-judging", daemon=True)
                self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.run_once()
