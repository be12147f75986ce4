"""The overview: every monitored task against its baseline and approval threshold, worst first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session, col, func, select

from medmon.alerts import KINDS, Alert, Incident, cause_of, last_beat
from medmon.baselines import resolve
from medmon.db import utcnow
from medmon.moments import display_time
from medmon.monitor.governance.current import CURRENT_WINDOW, current_score
from medmon.monitor.governance.effective import EffectiveTask, effective_task, effective_tasks
from medmon.monitor.models import DetectorState, StreamStatus
from medmon.monitor.plan.model import Plan, Task, parse_interval
from medmon.monitor.read.reference import BUILDING, ReferenceProgress, reference_progress
from medmon.probes.models import ProbeRun

STATUS_RANK = {"degraded": 0, "watching": 1, BUILDING: 2, "no data yet": 3, "ok": 4}
RECENT_WINDOW = CURRENT_WINDOW


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
    open_incidents: int
    min_score: float = 0.0  # the minimum in force: the approved one
    reasons: tuple[str, ...] = ()
    proposed_min_score: float | None = None  # a plan edit of it no owner has approved yet
    proposals: tuple[str, ...] = ()  # every threshold edit awaiting approval, as sentences
    reference: ReferenceProgress | None = None  # the go-live reference while it is being built

    @property
    def reason(self) -> str:
        """Every reason in one line, most serious first."""
        return "; ".join(self.reasons)


def recent_estimate(session: Session, task_id: str) -> tuple[float | None, float, float, int]:
    """The task's current score as ``(mean, low, high, n)`` (``medmon.monitor.governance.current``).

    ``mean`` is None (and the interval [0, 1]) before any scored monitoring answer.
    """
    now = current_score(session, task_id)
    if now.value is None or now.low is None or now.high is None:
        return None, 0.0, 1.0, 0
    return now.value, now.low, now.high, now.n


def stream_name(key: str, task_id: str) -> str:
    """A detector's stream as people read it: ``score_paired (drop)`` from ``task:score_paired:drop``."""
    rest = key.removeprefix(f"{task_id}:")
    name, _, direction = rest.rpartition(":")
    return f"{name} ({direction})" if name else rest


# Most serious first: a clinical problem before an operational one.
CAUSE_ORDER = ("accuracy", "subgroup_gap", "availability", "model_change", "output", "jury", "cost", "latency")


def _sentence(metric: str) -> str:
    """The catalogue's page sentence for a degraded stream of this metric ('' for a kind without one)."""
    base, _, sub = metric.partition("[")
    words = next((k.page for k in KINDS.values() if k.detector and k.metric == base), "").format(sub=sub[:-1])
    return words[:1].upper() + words[1:]


@dataclass(frozen=True)
class Stream:
    """A detector of the task as the status reads it: its name, metric and state."""

    name: str
    metric: str
    status: StreamStatus


@dataclass(frozen=True)
class OpenProblem:
    """An open incident of the task: its cause, the lead signal's words, and when it opened."""

    cause: str
    summary: str
    since: datetime | None


def _when(value: datetime | None) -> str:
    return "" if value is None else f" since {display_time(value)}"


def _plain(summary: str, task_id: str) -> str:
    text = summary.removeprefix(f"{task_id}: ")
    return text[:1].upper() + text[1:]


def _stream_sentences(cause: str, streams: list[Stream], task: Task) -> list[str]:
    """One sentence per cause for the streams that alarmed."""
    # one sentence for a task's clinician-scale streams, naming their criteria (streams keyed per criterion)
    criteria = [s.name.split(" ")[0].partition(":")[2] for s in streams if s.metric == "clinician_scale"]
    clinician = [f"{_sentence('clinician_scale')} on {', '.join(criteria)}"] if criteria else []
    streams = [s for s in streams if s.metric != "clinician_scale"]
    if cause == "accuracy" and not streams:
        return clinician
    if cause == "accuracy":
        groups = [s for s in streams if "[" in s.metric]
        whole = [s for s in streams if "[" not in s.metric]
        text = (
            "A drift detector found the score below its go-live reference"
            if whole
            else "A drift detector found the score below its go-live reference in some subgroups"
        )
        if whole and groups:
            text += f", and in {len(groups)} subgroup{'s' if len(groups) != 1 else ''} with it"
        return [text, *clinician]
    if cause == "cost":
        budget = task.thresholds.cost_budget_per_call
        return [f"More calls cost over the budget{f' of ${budget:g}' if budget else ''} than at go-live"]
    if cause == "latency":
        slo = task.thresholds.latency_slo_s
        out = []
        if any(s.metric == "latency" for s in streams):
            out.append(f"More calls are slower than the{f' {slo:g} s' if slo else ''} objective than at go-live")
        return out + [t for t in (_sentence(s.metric) for s in streams if s.metric != "latency") if t]
    return [
        _sentence(s.metric) or f"The {s.metric.split('[', 1)[0].replace('_', ' ')} detector alarmed" for s in streams
    ]


def task_status(
    task: Task,
    streams: Sequence[Stream],
    estimate: tuple[float, float, float] | None,
    baseline: float | None,
    problems: Sequence[OpenProblem],
    probed: bool,
    below_since: datetime | None = None,
    building: str | None = None,
) -> tuple[str, list[str]]:
    """The task's status and every reason for it, most serious first, in sentences.

    degraded: a detector alarmed, or the whole 95% interval of the recent score lies under the
    minimum in force; watching: evidence is building up, or an incident is still open;
    ``building the reference`` while the go-live reference is incomplete (``building`` says how far:
    the detectors have nothing to test against yet, so it is never ok); ``no data yet`` before the
    first probe (never ok: nothing says the task is fine); ok otherwise.
    """
    reasons: list[tuple[int, str]] = []
    covered: set[str] = set()
    minimum = task.thresholds.min_score
    if estimate is not None and estimate[2] < minimum:
        value, low, high = estimate
        text = (
            f"Score {value:.2f} ({low:.2f}-{high:.2f}) is below the minimum in force {minimum:.2f}{_when(below_since)}"
        )
        if baseline is not None:
            text += f" (baseline {baseline:.2f})"
        reasons.append((-1, text))
        covered.add("accuracy_minimum")
    degraded = [s for s in streams if s.status == StreamStatus.degraded]
    for cause in CAUSE_ORDER:
        mine = [s for s in degraded if cause_of({"metric": s.metric}).value == cause]
        if mine:
            covered.add(cause)
            reasons += [(CAUSE_ORDER.index(cause), t) for t in _stream_sentences(cause, mine, task)]
    for p in problems:
        if p.cause in covered or (p.cause == "accuracy" and "accuracy_minimum" in covered):
            continue
        covered.add(p.cause)
        rank = CAUSE_ORDER.index(p.cause) if p.cause in CAUSE_ORDER else len(CAUSE_ORDER)
        reasons.append((rank, _plain(p.summary, task.id) + _when(p.since)))
    reasons.sort(key=lambda r: r[0])
    texts = [t for _, t in reasons]
    if degraded or "accuracy_minimum" in covered:
        return "degraded", texts
    watching = sorted({s.name for s in streams if s.status == StreamStatus.watching})
    if watching:
        texts.append("Detectors are still gathering evidence: " + ", ".join(watching))
    if texts:
        return "watching", texts + ([building] if building and probed else [])
    if building and probed:
        return BUILDING, [building]
    if not probed:
        return "no data yet", ["No probe has run for this task yet"]
    if any(s.status == StreamStatus.recovered for s in streams):
        return "ok", ["Recovered: every detector is back at its reference"]
    return "ok", []


def task_overview(session: Session, plan: Plan, task_ids: Sequence[str] | None = None) -> list[TaskRow]:
    """Every monitored task (or those in ``task_ids``) against its baseline, worst first.

    Detector states, last probe times and open-alert counts come from one grouped query each;
    the recent estimate is one indexed query per task.
    """
    tasks = [t for t in plan.tasks if task_ids is None or t.id in task_ids]
    ids = [t.id for t in tasks]
    streams: dict[str, list[Stream]] = {i: [] for i in ids}
    for task_id, key, metric, status in session.exec(
        select(DetectorState.task_id, DetectorState.key, DetectorState.metric, DetectorState.status).where(
            col(DetectorState.task_id).in_(ids)
        )
    ).all():
        streams[task_id].append(Stream(stream_name(key, task_id), metric, StreamStatus(status)))
    last_probe = {
        t: v
        for t, v in session.exec(
            select(ProbeRun.task_id, func.max(ProbeRun.finished_at))
            .where(col(ProbeRun.task_id).in_(ids))
            .group_by(ProbeRun.task_id)
        ).all()
    }
    open_count: dict[str, int] = {i: 0 for i in ids}
    for task_id, count in session.exec(
        select(Incident.task_id, func.count())
        .where(col(Incident.task_id).in_(ids), col(Incident.closed_at).is_(None))
        .group_by(Incident.task_id)
    ).all():
        open_count[task_id] = int(count)
    # One problem per cause of the open alerts: an incident can hold several causes seen at one moment.
    problems: dict[str, list[OpenProblem]] = {i: [] for i in ids}
    for alert in session.exec(
        select(Alert)
        .where(col(Alert.task_id).in_(ids), col(Alert.ends_at).is_(None), col(Alert.incident_id).is_not(None))
        .order_by(col(Alert.starts_at), col(Alert.id))
    ).all():
        cause = cause_of(alert.labels).value
        if all(p.cause != cause for p in problems[alert.task_id]):
            problems[alert.task_id].append(OpenProblem(cause, alert.summary, alert.starts_at))
    below = {
        t: v
        for t, v in session.exec(
            select(Alert.task_id, func.min(Alert.starts_at))
            .where(col(Alert.task_id).in_(ids), Alert.rule == "below_minimum", col(Alert.ends_at).is_(None))
            .group_by(Alert.task_id)
        ).all()
    }
    rows = []
    now = utcnow()
    for effective in effective_tasks(session, plan, ids):
        task, baseline = effective.task, effective.baseline.baseline  # judged by the approved thresholds
        entry = resolve(task.benchmark)
        estimate, lo, hi, n = recent_estimate(session, task.id)
        progress = reference_progress(session, plan, task, now)
        status, reasons = task_status(
            task,
            streams[task.id],
            (estimate, lo, hi) if estimate is not None else None,
            baseline.normalized if baseline else None,
            problems[task.id],
            task.id in last_probe,
            below.get(task.id),
            progress.sentence(now) if progress.building else None,
        )
        owner = task.owner or plan.owners.clinical
        rows.append(
            TaskRow(
                task.id,
                entry.category,
                entry.subcategory,
                task.benchmark,
                baseline.normalized if baseline else None,
                estimate,
                lo if estimate is not None else None,
                hi if estimate is not None else None,
                n,
                status,
                owner.name,
                plan.use_case.risk_tier.value,
                last_probe.get(task.id),
                open_count[task.id],
                task.thresholds.min_score,
                tuple(reasons),
                effective.proposed("min_score"),
                tuple(effective.proposal_sentences()),
                progress if progress.building else None,
            )
        )
    rows.sort(key=lambda r: (STATUS_RANK[r.status], -r.open_incidents, _gap(r), r.task))
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


def baseline_band(
    session: Session, plan: Plan, task_id: str, effective: EffectiveTask | None = None
) -> BaselineBand | None:
    """The baseline a task is compared with, normalised like its scores (None before any exists)."""
    b = (effective or effective_task(session, plan, task_id)).baseline.baseline
    if b is None:
        return None
    span = (b.scale_max - b.scale_min) or 1.0
    return BaselineBand(
        b.normalized,
        (b.ci_low - b.scale_min) / span,
        (b.ci_high - b.scale_min) / span,
        b.n,
        b.source_kind,
        b.version,
        b.model,
    )


@dataclass(frozen=True)
class ServicePulse:
    """When the monitor service last beat, and whether that is within the plan's tolerance."""

    beat_at: datetime | None
    since: datetime | None
    tolerance: timedelta

    def alive(self, now: datetime) -> bool:
        return self.beat_at is not None and now - self.beat_at <= self.tolerance


SCHEDULER_HEARTBEAT = "scheduler"  # medmon.monitor.alerting.signals.HEARTBEAT (which imports this package)


def service_pulse(session: Session, plan: Plan) -> ServicePulse:
    """The scheduler's heartbeat: a dashboard over a stopped service would otherwise look calm."""
    row = last_beat(session, SCHEDULER_HEARTBEAT)
    return ServicePulse(
        row.beat_at if row else None, row.since if row else None, parse_interval(plan.alerts.heartbeat_tolerance)
    )
