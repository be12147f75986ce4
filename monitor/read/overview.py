"""The overview: every monitored task against its baseline and approval threshold, worst first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session, col, func, select

from medmon.alerts import Alert, last_beat
from medmon.alerts.lifecycle import OPEN
from medmon.baselines import Baseline, latest_baseline, resolve
from medmon.monitor.plan.context import adopted_baseline, current_pin, pin_fits
from medmon.monitor.models import DetectorState, StreamStatus
from medmon.monitor.plan.model import Plan, Task, parse_interval
from medmon.monitor.read._sql import as_time, score_interval
from medmon.probes.models import ProbeResult, ProbeRun

STATUS_RANK = {"degraded": 0, "watching": 1, "ok": 2}
RECENT_WINDOW = 200


@dataclass(frozen=True)
class TaskRow:
    """One line of the overview: what a committee member needs to see for a task."""

    task: str
    category: str
    subcategory: str | None
    benchmark: str
    baseline: float | None
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    status: str
    owner: str
    risk_tier: str
    last_probe: datetime | None
    open_alerts: int
    min_score: float = 0.0
    reason: str = ""


def recent_estimate(session: Session, task_id: str,
                    window: int = RECENT_WINDOW) -> tuple[float | None, float, float, int]:
    """Mean score of the task's latest ``window`` scored results, with a 95% interval.

    Returns ``(mean, low, high, n)``; ``mean`` is None (and the interval [0, 1]) before any
    scored result. The newest results are found through the ``(task_id, id)`` index and only
    count, sum and the bounds leave the database.
    """
    recent = (select(ProbeResult.score).where(ProbeResult.task_id == task_id, col(ProbeResult.score).is_not(None))
              .order_by(col(ProbeResult.id).desc()).limit(window).subquery())
    n, total = session.exec(select(func.count(), func.sum(recent.c.score))).one()
    if not n:
        return None, 0.0, 1.0, 0
    mean = float(total) / n
    lo, hi = score_interval(mean, int(n))
    assert lo is not None and hi is not None
    return mean, lo, hi, int(n)


def stream_name(key: str, task_id: str) -> str:
    """A detector's stream as people read it: ``score_paired (drop)`` from ``task:score_paired:drop``."""
    rest = key.removeprefix(f"{task_id}:")
    name, _, direction = rest.rpartition(":")
    return f"{name} ({direction})" if name else rest


def _status(streams: list[tuple[str, StreamStatus]], ci_high: float | None, min_score: float,
            open_alerts: int) -> tuple[str, str]:
    """The task's status and the reason for it, in words a committee member can act on.

    degraded: a detector alarmed, or the whole interval of the recent estimate lies under the
    approval threshold; watching: evidence is building up, or an alert is still open; ok
    otherwise (a recovered stream counts as ok).
    """
    degraded = sorted({name for name, s in streams if s == StreamStatus.degraded})
    if degraded:
        return "degraded", "detector alarm: " + ", ".join(degraded)
    if ci_high is not None and ci_high < min_score:
        return "degraded", f"recent score interval is under the approval threshold {min_score:.2f}"
    watching = sorted({name for name, s in streams if s == StreamStatus.watching})
    if watching:
        return "watching", "evidence building: " + ", ".join(watching)
    if open_alerts:
        return "watching", f"{open_alerts} open alert(s)"
    if any(s == StreamStatus.recovered for _, s in streams):
        return "ok", "recovered"
    return "ok", ""


def task_overview(session: Session, plan: Plan, task_ids: Sequence[str] | None = None) -> list[TaskRow]:
    """Every monitored task (or those in ``task_ids``) against its baseline, worst first.

    Detector states, last probe times and open-alert counts come from one grouped query each;
    the recent estimate is one indexed query per task.
    """
    tasks = [t for t in plan.tasks if task_ids is None or t.id in task_ids]
    ids = [t.id for t in tasks]
    streams: dict[str, list[tuple[str, StreamStatus]]] = {i: [] for i in ids}
    for task_id, key, status in session.exec(
            select(DetectorState.task_id, DetectorState.key, DetectorState.status)
            .where(col(DetectorState.task_id).in_(ids))).all():
        streams[task_id].append((stream_name(key, task_id), StreamStatus(status)))
    last_probe = {t: as_time(v) for t, v in session.exec(
        select(ProbeRun.task_id, func.max(ProbeRun.finished_at)).where(col(ProbeRun.task_id).in_(ids))
        .group_by(ProbeRun.task_id)).all()}
    alerts = {t: int(c) for t, c in session.exec(
        select(Alert.task_id, func.count()).where(col(Alert.task_id).in_(ids), col(Alert.status).in_(OPEN))
        .group_by(Alert.task_id)).all()}
    rows = []
    for task in tasks:
        entry = resolve(task.benchmark)
        baseline = task_baseline(session, plan, task)
        estimate, lo, hi, n = recent_estimate(session, task.id)
        open_alerts = alerts.get(task.id, 0)
        status, reason = _status(streams[task.id], hi if estimate is not None else None,
                                 task.thresholds.min_score, open_alerts)
        owner = task.owner or plan.owners.clinical
        rows.append(TaskRow(task.id, entry.category, entry.subcategory, task.benchmark,
                            baseline.normalized if baseline else None, estimate,
                            lo if estimate is not None else None, hi if estimate is not None else None, n,
                            status, owner.name, plan.use_case.risk_tier.value, last_probe.get(task.id),
                            open_alerts, task.thresholds.min_score, reason))
    rows.sort(key=lambda r: (STATUS_RANK[r.status], -r.open_alerts, _gap(r), r.task))
    return rows


def _gap(row: TaskRow) -> float:
    """How far the estimate sits above its baseline (more negative is worse); unknown sorts last."""
    if row.estimate is None or row.baseline is None:
        return float("inf")
    return row.estimate - row.baseline


@dataclass(frozen=True)
class BaselineBand:
    """A task's baseline on the [0, 1] score scale, with its 95% interval and where it came from."""

    value: float
    ci_low: float
    ci_high: float
    n: int
    source_kind: str
    version: int
    model: str


def task_baseline(session: Session, plan: Plan, task: Task) -> Baseline | None:
    """The stored baseline the task's detectors compare with, found as the service finds it but
    without writing anything: the task's pin first, an owner-approved re-evaluation next, then the plan's inline
    figures (as recorded), then the newest imported or pack baseline for the benchmark."""
    pin = current_pin(session, task.id)
    pinned = session.get(Baseline, pin.baseline_id) if pin is not None else None
    if pin is not None and pinned is not None and pin_fits(pin, pinned, task):
        return pinned
    adopted = adopted_baseline(session, task.id)
    if adopted is not None:
        return adopted
    ref = task.baseline
    if ref.value is not None and ref.n is not None:
        metric = ref.metric or resolve(task.benchmark).main_metric or "score"
        inline = latest_baseline(session, task.benchmark, ref.model or plan.deployment.model, metric)
        if inline is not None:
            return inline
    return latest_baseline(session, task.benchmark, ref.model, ref.metric)


def baseline_band(session: Session, plan: Plan, task_id: str) -> BaselineBand | None:
    """The baseline a task is compared with, normalised like its scores (None before any exists)."""
    b = task_baseline(session, plan, plan.task(task_id))
    if b is None:
        return None
    span = (b.scale_max - b.scale_min) or 1.0
    return BaselineBand(b.normalized, (b.ci_low - b.scale_min) / span, (b.ci_high - b.scale_min) / span, b.n,
                        b.source_kind, b.version, b.model)


@dataclass(frozen=True)
class PooledStream:
    """A detector over a whole MedHELM category (tasks pooled), which no single task row shows."""

    key: str
    category: str
    status: str
    evidence: float
    threshold: float
    n: int


def category_streams(session: Session) -> list[PooledStream]:
    """Detectors that pool a category's tasks (their ``task_id`` is ``category:<slug>``), worst first."""
    rows = session.exec(select(DetectorState).where(col(DetectorState.task_id).startswith("category:"))).all()
    out = [PooledStream(r.key, r.task_id.removeprefix("category:"), StreamStatus(r.status).value, r.evidence,
                        r.threshold, r.n) for r in rows]
    rank = {"degraded": 0, "watching": 1}
    return sorted(out, key=lambda p: (rank.get(p.status, 2), p.key))


@dataclass(frozen=True)
class ServicePulse:
    """When the monitor service last beat, and whether that is within the plan's tolerance."""

    beat_at: datetime | None
    since: datetime | None
    tolerance: timedelta

    def alive(self, now: datetime) -> bool:
        return self.beat_at is not None and now - self.beat_at <= self.tolerance


SCHEDULER_HEARTBEAT = "scheduler"  # medmon.monitor.alerting.signals.HEARTBEAT (which imports this package)


def service_pulse(session: Session, plan: Plan, name: str = SCHEDULER_HEARTBEAT) -> ServicePulse:
    """The scheduler's heartbeat: a dashboard over a stopped service would otherwise look calm."""
    row = last_beat(session, name)
    return ServicePulse(as_time(row.beat_at) if row else None, as_time(row.since) if row else None,
                        parse_interval(plan.alerts.heartbeat_tolerance))
