"""Store decoded calls: routed to tasks, priced from the plan, text redacted (or dropped), once each.

Every stored text of a span passes the plan's text policy: prompt and completion are secrets-blanked
and redacted (or not stored with ``store_text: false``); span name, operation, finish reason and
``error.type`` are always secrets-blanked and redacted (they are short labels, but an application
may put anything in them); service, model names and fingerprint are secrets-blanked (redacting a
date out of ``gpt-4o-2024-08-06`` would break model-change detection).

A span sent twice (an exporter retrying after a timeout) is stored once: (trace id, span id) is
unique and a repeat is skipped by the database itself, so any number of ``medmon serve``
replicas can receive at once. Refused spans are counted per hour and reason.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DataError, IntegrityError

from medmon.monitor.models import TrafficRejection, TrafficSpan
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan, Price
from medmon.monitor.plan.privacy import text_policy
from medmon.monitor.plan.traffic import TrafficPrice
from medmon.monitor.storage import table_of
from medmon.monitor.traffic.routes import route_task
from medmon.monitor.traffic.spans import CallRecord, Decoded, Limits
from medmon.probes.redaction import Redactor, TextPolicy, load_redactor
from medmon.probes.scoring import looks_like_refusal
from medmon.scrub import mask_text

log = logging.getLogger("medmon.traffic")


@dataclass(frozen=True)
class Ingestor:
    """What storing needs from the plan, resolved once (the receiver builds one at start)."""

    plan: Plan
    redactor: Redactor
    limits: Limits
    policy: TextPolicy | None = None  # None: this redactor and the plan's store_text, no secrets

    @classmethod
    def from_plan(cls, plan: Plan) -> Ingestor:
        t = plan.traffic
        limits = (
            Limits()
            if t is None
            else Limits(
                max_tokens=t.max_tokens_per_call,
                max_skew=parse_interval(t.max_clock_skew),
                max_age=parse_interval(t.max_age),
            )
        )
        return cls(plan, load_redactor(plan.privacy.redactor), limits, text_policy(plan))

    def cost(self, call: CallRecord) -> float | None:
        """Dollars for the call: at the served model's price in ``traffic.prices`` (else the requested
        model's), or the deployment's price for every call when the plan lists none."""
        t = self.plan.traffic
        if t is None or not t.prices:
            return call_cost(self.plan.deployment.price, call.input_tokens, call.output_tokens)
        model = call.response_model or call.request_model
        price = t.price_for(model)
        if price is None:
            _unpriced(model)
            return None
        return None if price.unpriced else call_cost(price, call.input_tokens, call.output_tokens)

    def row(self, call: CallRecord, now: datetime) -> dict[str, Any]:
        """The stored form of a call: its task, cost, refusal flag and protected text."""
        routes = self.plan.traffic.routes if self.plan.traffic is not None else []
        policy = self.policy or TextPolicy(self.redactor, self.plan.privacy.store_text)
        secrets = policy.secrets
        return {
            "trace_id": call.trace_id,
            "span_id": call.span_id,
            "task_id": route_task(routes, call),
            "service": mask_text(call.service, secrets),
            "span_name": policy.error(call.span_name, "(redaction failed)"),
            "operation": policy.error(call.operation, ""),
            "request_model": mask_text(call.request_model, secrets),
            "response_model": None if call.response_model is None else mask_text(call.response_model, secrets),
            "system_fingerprint": None
            if call.system_fingerprint is None
            else mask_text(call.system_fingerprint, secrets),
            "started_at": call.started_at,
            "ended_at": call.ended_at,
            "latency_s": call.latency_s,
            "input_tokens": call.input_tokens,
            "output_tokens": call.output_tokens,
            "cost_usd": self.cost(call),
            "finish_reason": policy.error(call.finish_reason, "(redaction failed)"),
            "error_type": policy.error(call.error_type, "error"),
            "has_content": call.completion is not None,
            "refused": looks_like_refusal(call.completion) if call.completion else None,
            "prompt": policy.content(call.prompt, "prompt"),
            "completion": policy.content(call.completion, "completion"),
            "received_at": now,
            "streamed": False,
            "judged": False,
        }


def _unpriced(model: str) -> None:
    """Say once per model and process that its calls get no cost (a model the plan's prices miss)."""
    if model not in _WARNED:
        _WARNED.add(model)
        log.warning("traffic.prices has no entry for model %r: its calls are stored without a cost", model)


_WARNED: set[str] = set()


def call_cost(price: Price | TrafficPrice, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """Dollars for one call at the plan's prices per million tokens; None without token counts."""
    if input_tokens is None and output_tokens is None:
        return None
    return ((input_tokens or 0) * price.input_per_mtok + (output_tokens or 0) * price.output_per_mtok) / 1e6


def _insert(conn: Connection, table: Any) -> Any:
    name = conn.dialect.name
    if name == "postgresql":
        return postgresql.insert(table)
    if name == "sqlite":
        return sqlite.insert(table)
    return insert(table)


def hour_of(at: datetime) -> datetime:
    return at.replace(minute=0, second=0, microsecond=0)


def count_rejections(conn: Connection, reasons: Counter[str], now: datetime) -> None:
    """Add refused spans to the hour's counts per reason (safe with several receivers at once)."""
    if not reasons:
        return
    table = table_of(TrafficRejection)
    stmt = _insert(conn, table)
    stmt = stmt.on_conflict_do_update(
        index_elements=["hour", "reason"], set_={"count": table.c["count"] + stmt.excluded["count"]}
    )
    conn.execute(stmt, [{"hour": hour_of(now), "reason": r, "count": n} for r, n in sorted(reasons.items())])


def store_calls(engine: Engine, ingestor: Ingestor, decoded: Decoded, now: datetime) -> int:
    """Store the calls of one export and count its refusals in one transaction; return calls accepted
    (a repeat of a span already stored is accepted and skipped).

    Raises the database's error when it cannot be reached: the receiver answers 503 and the
    exporter sends the same spans again, so nothing accepted is lost.
    """
    rows = [ingestor.row(c, now) for c in decoded.calls]
    try:
        with engine.begin() as conn:
            _insert_spans(conn, rows)
            count_rejections(conn, decoded.refused + decoded.skipped, now)
        return len(rows)
    except (DataError, IntegrityError):
        pass  # one row the database will not take: store the others, one at a time, and refuse it alone
    stored = 0
    for row in rows:
        try:
            with engine.begin() as conn:
                _insert_spans(conn, [row])
            stored += 1
        except (DataError, IntegrityError) as exc:
            log.warning("span %s/%s refused by the database: %s", row["trace_id"], row["span_id"], type(exc).__name__)
            decoded.refused["unstorable"] += 1
    with engine.begin() as conn:
        count_rejections(conn, decoded.refused + decoded.skipped, now)
    return stored


def _insert_spans(conn: Connection, rows: list[dict[str, Any]]) -> None:
    if rows:
        stmt = _insert(conn, table_of(TrafficSpan)).on_conflict_do_nothing(index_elements=["trace_id", "span_id"])
        conn.execute(stmt, rows)
