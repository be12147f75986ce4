"""The traffic pass: roll new spans up by hour and feed each task's traffic streams.

The leader runs it every ``traffic.detect_every``; receivers only insert. Each pass rolls up the
spans not yet streamed (oldest first) and feeds, for a task whose reference is complete, the calls
after the reference period to the canaries' detectors and alert rules, each stream against the
reference's own level plus its sampling margin, on a false-alarm budget of its own (counted in
calls, split over the routed tasks) so real traffic never spends the canaries' (docs/traffic.md).
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import Signal, apply_signals
from medmon.alerts.rules import model_changed
from medmon.db import session_scope
from medmon.monitor.alerting.signals import task_subject, update_signal
from medmon.monitor.detection.drift.budget import OPERATIONAL, Budget
from medmon.monitor.detection.drift.layout import Item, StreamSpec, margin_z
from medmon.monitor.detection.streams import StreamUpdate, finding_record, update_stream
from medmon.monitor.governance.current import live_policy
from medmon.monitor.models import LATENCY_BUCKETS, FindingRecord, TrafficReference, TrafficRollup, TrafficSpan
from medmon.monitor.plan.model import Plan
from medmon.monitor.storage import select_row, table_of
from medmon.monitor.traffic.reference import MEDIAN_METRICS, RATE_METRICS, Value, ensure_reference
from medmon.monitor.traffic.volume import due_hours, ensure_volume, mark_tested, volume_specs

log = logging.getLogger("medmon.traffic")

BATCH = 5000


@dataclass
class TrafficPass:
    """What one pass did."""

    spans: int = 0
    unmatched: int = 0
    updates: list[StreamUpdate] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)


def latency_bucket(seconds: float) -> int:
    return next(i for i, bound in enumerate(LATENCY_BUCKETS) if seconds <= bound)


def _rollup(session: Session, spans: Sequence[Any]) -> None:
    """Add spans to their hourly rollups: sums in plain Python, one row write per (hour, task, model)."""
    sums: dict[tuple[datetime, str, str], list[Any]] = {}
    n = len(LATENCY_BUCKETS)
    for s in spans:
        key = (
            s.ended_at.replace(minute=0, second=0, microsecond=0),
            s.task_id or "",
            s.response_model or s.request_model,
        )
        acc = sums.get(key)
        if acc is None:
            acc = sums[key] = [0, 0, 0, 0, 0.0, 0.0, 0.0, [0] * n, 0, 0, 0]
        acc[0] += 1
        acc[1] += s.error_type is not None
        acc[2] += s.input_tokens or 0
        acc[3] += s.output_tokens or 0
        acc[4] += s.cost_usd or 0.0
        acc[5] += s.latency_s
        acc[6] = max(acc[6], s.latency_s)
        acc[7][latency_bucket(s.latency_s)] += 1
        acc[8] += s.finish_reason == "length"
        acc[9] += bool(s.has_content)
        acc[10] += bool(s.refused)
    for key, acc in sums.items():
        row = session.get(TrafficRollup, key) or TrafficRollup(hour=key[0], task_id=key[1], model=key[2])
        row.calls += acc[0]
        row.errors += acc[1]
        row.input_tokens += acc[2]
        row.output_tokens += acc[3]
        row.cost_usd += acc[4]
        row.latency_sum_s += acc[5]
        row.latency_max_s = max(row.latency_max_s, acc[6])
        for i, count in enumerate(acc[7]):
            if count:
                setattr(row, f"latency_b{i}", getattr(row, f"latency_b{i}") + count)
        row.truncated += acc[8]
        row.with_content += acc[9]
        row.refusals += acc[10]
        session.add(row)


def _margin(p: float, n: float, z: float, floor: float) -> float:
    """``z`` standard errors of a reference share measured on ``n`` calls (at least one call's worth)."""
    return max(floor, z * math.sqrt(max(p * (1 - p), 1.0 / max(n, 1)) / max(n, 1)))


def traffic_specs(plan: Plan, ref: TrafficReference) -> list[StreamSpec[Any]]:
    """The traffic streams of one task, each against its reference level plus margins."""
    assert plan.traffic is not None
    z, floor = margin_z(plan), plan.detection.min_margin
    specs = []
    for metric, stats in ref.stats.items():
        observe: Value
        if metric in MEDIAN_METRICS:
            m, p = stats["median"], stats["share_above"]
            value = MEDIAN_METRICS[metric]

            def above(s: TrafficSpan, value: Value = value, m: float = m) -> float | None:
                x = value(s)
                return None if x is None else float(x > m)

            observe = above
            mu0 = p + _margin(p, stats["n"], z, floor) + plan.traffic.tolerated_rise
        elif metric in RATE_METRICS:
            p = stats["rate"]
            observe = RATE_METRICS[metric]
            mu0 = p + _margin(p, stats["n"], z, floor)
        else:
            continue
        mu0 = min(max(mu0, 0.01), 0.99)
        specs.append(
            StreamSpec(
                f"{ref.task_id}:{metric}:rise",
                ref.task_id,
                metric,
                "rise",
                mu0,
                p,
                observe,
                "mixture_sr",
                {
                    "mu0": mu0,
                    "sigma2": max(mu0 * (1 - mu0), 0.01),
                    "direction": "rise",
                    "reference": ref.period_to.isoformat(),
                },
            )
        )
    return specs


def traffic_threshold(plan: Plan, streams: int) -> float:
    """Threshold ``A`` of one traffic stream: the budget in calls, over routed tasks and their streams."""
    det = plan.detection
    gamma = det.operational_probes_between_false_alarms or det.probes_between_false_alarms
    tasks = len({r.task for r in plan.traffic.routes}) if plan.traffic is not None else 1
    return Budget(gamma, max(tasks, 1)).threshold(OPERATIONAL, max(streams, 1))


def signal_of(plan: Plan, update: StreamUpdate) -> Signal | None:
    """A traffic stream's signal: about its task, its evidence marked as seen in real traffic."""
    return update_signal(task_subject(plan, plan.task(update.spec.task_id)), update, source="traffic")


def _model_changes(
    session: Session, plan: Plan, ref: TrafficReference, spans: Sequence[Any], now: datetime
) -> list[Signal]:
    """A served model the reference never saw: one finding and signal per new model."""
    known = set(ref.models) | set(ref.stats.get("reported_models", {}).get("names", []))
    out = []
    for s in spans:
        model = s.response_model
        if s.error_type is not None or not model or model in known:
            continue
        known.add(model)
        signal = model_changed(
            task_subject(plan, plan.task(ref.task_id)),
            (", ".join(ref.models) or "none", None),
            (model, s.system_fingerprint),
        )
        signal.evidence["source"] = "traffic"
        session.add(
            FindingRecord(
                task_id=ref.task_id,
                metric="traffic_served_model",
                kind="model_change",
                summary=f"{signal.summary} (seen in real traffic)",
                evidence=signal.evidence,
                created_at=now,
            )
        )
        out.append(signal)
    if out:
        reported = sorted(known - set(ref.models))
        ref.stats = {**ref.stats, "reported_models": {"names": reported}}
        session.add(ref)
    return out


def _task_threshold(plan: Plan, ref: TrafficReference) -> float:
    """The threshold of each of a task's span streams and call-volume streams (one share each)."""
    return traffic_threshold(plan, len(traffic_specs(plan, ref)) + 2)


def _feed(
    session: Session,
    plan: Plan,
    specs: Sequence[StreamSpec[Item]],
    threshold: float,
    items: Sequence[Item],
    now: datetime,
    out: TrafficPass,
) -> None:
    for spec in specs:
        update = update_stream(session, spec, threshold, items, now)
        out.updates.append(update)
        signal = signal_of(plan, update)
        if update.finding is not None:
            session.add(finding_record(update, None, signal.summary if signal else update.summary, now))
        if signal is not None:
            out.signals.append(signal)


def _feed_task(
    session: Session, plan: Plan, ref: TrafficReference, spans: Sequence[Any], now: datetime, out: TrafficPass
) -> None:
    after = [s for s in spans if s.ended_at > ref.period_to]
    if not after:
        return
    after.sort(key=lambda s: (s.ended_at, s.id or 0))
    _feed(session, plan, traffic_specs(plan, ref), _task_threshold(plan, ref), after, now, out)
    out.signals.extend(_model_changes(session, plan, ref, after, now))


def _feed_volume(session: Session, plan: Plan, ref: TrafficReference, now: datetime, out: TrafficPass) -> None:
    """Test the task's finished hours not yet tested against the same hours of its reference."""
    if ensure_volume(session, ref) is None:
        return
    hours = due_hours(session, ref, now)
    if hours:
        _feed(session, plan, volume_specs(plan, ref), _task_threshold(plan, ref), hours, now, out)
        mark_tested(session, ref, hours)


def traffic_pass(session: Session, plan: Plan, now: datetime, *, batch: int = BATCH) -> TrafficPass:
    """Roll up and stream the oldest ``batch`` spans not yet streamed; apply the alerts they raise."""
    out = TrafficPass()
    if plan.traffic is None:
        return out
    table = table_of(TrafficSpan)
    query = (
        select_row(*[c for c in table.c if c.name not in ("prompt", "completion")])
        .where(table.c.streamed.is_(False))
        .order_by(table.c.id)
        .limit(batch)
    )
    if session.get_bind().dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    spans = list(session.execute(query).all())  # plain rows: the ORM's per-object cost is the pass's bottleneck
    task_ids = {t.id for t in plan.tasks}
    refs = {
        task_id: ensure_reference(session, plan.traffic, task_id, now)  # a period may end without new spans
        for task_id in sorted({r.task for r in plan.traffic.routes} & task_ids)
    }
    if spans:
        _rollup(session, spans)
    by_task: dict[str, list[Any]] = defaultdict(list)
    for s in spans:
        if s.task_id is None:
            out.unmatched += 1
        else:
            by_task[s.task_id].append(s)
    for task_id, rows in sorted(by_task.items()):
        if task_id not in task_ids:
            continue  # routed by an older plan: kept in the rollups, not streamed
        ref = refs.get(task_id) or ensure_reference(session, plan.traffic, task_id, now)
        refs[task_id] = ref
        if ref is not None:
            _feed_task(session, plan, ref, rows, now, out)
    if len(spans) < batch:  # every waiting span is rolled up: finished hours can be counted
        for ref in refs.values():
            if ref is not None:
                _feed_volume(session, plan, ref, now, out)
    ids = [s.id for s in spans]
    for i in range(0, len(ids), 1000):
        session.execute(update(table).where(table.c.id.in_(ids[i : i + 1000])).values(streamed=True))
    out.spans = len(spans)
    if out.signals:
        apply_signals(session, out.signals, live_policy(plan), now)
    return out


def traffic_job(engine: Engine, plan: Plan, now: datetime) -> TrafficPass:
    """Passes until no span is waiting (the scheduler's job); returns the totals."""
    total = TrafficPass()
    while True:
        with session_scope(engine) as session:
            done = traffic_pass(session, plan, now)
        total.spans += done.spans
        total.unmatched += done.unmatched
        total.updates += done.updates
        total.signals += done.signals
        if done.spans < BATCH:
            return total
