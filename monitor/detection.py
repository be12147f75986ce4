"""Streams and their detectors: turn a probe run's results into observations and decisions.

Each task has a few streams (score, error rate, cost over budget, latency over objective), each
a one-sided mixture Shiryaev-Roberts detector against a null derived from the baseline. The
plan's false-alarm budget (expected probes between false alarms for the whole deployment) is
split evenly over every stream-direction: threshold ``A = m * budget``, so adding tasks does
not add false alarms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session

from baselines import Baseline
from monitor.drift import Finding, MixtureSR, MixtureSRState
from monitor.models import DetectorState, StreamStatus
from monitor.plan import Plan, Task
from probes.models import ProbeResultBase

ERROR_NULL = 0.05  # tolerated share of failed calls before availability is in question
EXCEEDANCE_NULL = 0.10  # tolerated share of calls over the cost budget or latency objective
RECOVERY_RUNS = 3
WATCHING_EVIDENCE = 0.5


@dataclass(frozen=True)
class StreamSpec:
    key: str
    task_id: str
    metric: str
    direction: str
    null_mean: float
    baseline_mean: float
    sigma2: float
    observe: Callable[[ProbeResultBase], float | None]


def baseline_margin(p: float, n: int, min_margin: float) -> float:
    """Tolerance for the baseline's own sampling error: two standard errors, at least ``min_margin``.

    Without it a detector eventually 'detects' the error of a baseline measured on a finite
    benchmark (a 500-item baseline used as exact gave a 32% false-alarm rate in simulation).
    """
    se = math.sqrt(max(p * (1 - p), 1e-6) / max(n, 1))
    return max(min_margin, 2 * se)


def task_streams(plan: Plan, task: Task, baseline: Baseline) -> list[StreamSpec]:
    """The streams monitored for one task, with their null hypotheses."""
    p0 = baseline.normalized
    margin = max(baseline_margin(p0, baseline.n, plan.detection.min_margin), task.thresholds.tolerated_drop / 2)
    mu0 = min(max(p0 - margin, 0.01), 0.99)
    specs = [
        StreamSpec(f"{task.id}:score:drop", task.id, "score", "drop", mu0, p0, max(p0 * (1 - p0), 0.01),
                   lambda r: r.score if r.error_type is None else None),
        StreamSpec(f"{task.id}:error_rate:rise", task.id, "error_rate", "rise", ERROR_NULL, 0.0,
                   ERROR_NULL * (1 - ERROR_NULL), lambda r: 1.0 if r.error_type else 0.0),
    ]
    budget = task.thresholds.cost_budget_per_call
    if budget is not None:
        specs.append(StreamSpec(f"{task.id}:cost:rise", task.id, "cost", "rise", EXCEEDANCE_NULL, 0.0,
                                EXCEEDANCE_NULL * (1 - EXCEEDANCE_NULL),
                                lambda r: None if r.cost_usd is None else float(r.cost_usd > budget)))
    slo = task.thresholds.latency_slo_s
    if slo is not None:
        specs.append(StreamSpec(f"{task.id}:latency:rise", task.id, "latency", "rise", EXCEEDANCE_NULL, 0.0,
                                EXCEEDANCE_NULL * (1 - EXCEEDANCE_NULL),
                                lambda r: None if r.latency_s is None else float(r.latency_s > slo)))
    return specs


def stream_count(plan: Plan) -> int:
    """Stream-directions in the whole plan: the ``m`` that the false-alarm budget is split over."""
    count = 0
    for t in plan.tasks:
        count += 2 + (t.thresholds.cost_budget_per_call is not None) + (t.thresholds.latency_slo_s is not None)
    return count


def detector_threshold(plan: Plan) -> float:
    return stream_count(plan) * plan.detection.probes_between_false_alarms


@dataclass(frozen=True)
class StreamUpdate:
    spec: StreamSpec
    status: StreamStatus
    previous: StreamStatus
    finding: Finding | None
    run_mean: float | None
    evidence: float
    n: int


def update_stream(session: Session, spec: StreamSpec, threshold: float, results: Sequence[ProbeResultBase],
                  now: datetime) -> StreamUpdate:
    """Feed one run's observations to a stream's persisted detector and store its new state."""
    row = session.get(DetectorState, spec.key)
    if row is None or row.null_mean != spec.null_mean or row.threshold != threshold:
        # A new baseline or budget starts a new segment: evidence against the old null is void.
        segment = (row.segment + 1) if row is not None else 1
        row = DetectorState(key=spec.key, task_id=spec.task_id, metric=spec.metric, direction=spec.direction,
                            null_mean=spec.null_mean, baseline_mean=spec.baseline_mean, threshold=threshold,
                            segment=segment, status=row.status if row is not None else StreamStatus.ok)
    detector = MixtureSR(spec.null_mean, spec.sigma2, threshold, spec.direction,
                         state=MixtureSRState.from_dict(row.state) if row.state else None)
    previous = row.status
    xs = [x for x in (spec.observe(r) for r in results) if x is not None]
    finding = None
    for x in xs:
        finding = detector.update(x) or finding
    run_mean = sum(xs) / len(xs) if xs else None
    status = row.status
    if finding is not None and status == StreamStatus.degraded:
        finding = None  # already alarmed: one alert per episode, until the stream recovers
    if finding is not None:
        status, row.recovery_runs = StreamStatus.degraded, 0
    elif status == StreamStatus.degraded and run_mean is not None:
        holds = run_mean >= spec.null_mean if spec.direction == "drop" else run_mean <= spec.null_mean
        row.recovery_runs = row.recovery_runs + 1 if holds else 0
        if row.recovery_runs >= RECOVERY_RUNS:
            status, row.recovery_runs = StreamStatus.recovered, 0
            detector.reset()
    elif status in (StreamStatus.ok, StreamStatus.watching, StreamStatus.recovered):
        if detector.evidence >= WATCHING_EVIDENCE:
            status = StreamStatus.watching
        elif status == StreamStatus.watching:
            status = StreamStatus.ok
    row.status, row.evidence, row.n = status, detector.evidence, detector.state.total
    row.state, row.updated_at = detector.state.to_dict(), now
    session.add(row)
    return StreamUpdate(spec, status, previous, finding, run_mean, detector.evidence, detector.state.total)


def reset_task_streams(session: Session, task_id: str, now: datetime) -> int:
    """Open a new segment for every stream of a task (after a model change or re-baselining)."""
    from sqlmodel import select

    rows = session.exec(select(DetectorState).where(DetectorState.task_id == task_id)).all()
    for row in rows:
        row.state, row.segment, row.evidence, row.updated_at = {}, row.segment + 1, 0.0, now
        row.status, row.recovery_runs = StreamStatus.ok, 0
        session.add(row)
    return len(rows)
