"""One task in detail: its score per run, detector evidence, subgroup slices and recent answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import case
from sqlmodel import Session, col, func, select

from medmon.errors import MedmonError
from medmon.monitor.models import DetectorState, FindingRecord
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.monitor.read._sql import latest_runs, safe_float, wilson_interval_of_mean
from medmon.monitor.read.jury import Verdict, verdicts_for
from medmon.monitor.storage import select_row
from medmon.probes.models import ProbeResult, ProbeRun


@dataclass(frozen=True)
class RunPoint:
    """One probe run of a task, aggregated in the database."""

    run_id: int
    at: datetime | None
    purpose: str
    calls: int
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    errors: int
    cost_usd: float | None
    cost_per_call: float | None
    latency_mean: float | None
    latency_max: float | None
    over_slo: int


def run_series(
    session: Session,
    task_id: str,
    *,
    runs: int = 300,
    latency_slo_s: float | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[RunPoint]:
    """The task's latest ``runs`` runs (started between ``since`` and ``until`` when given), oldest
    first: score with interval, errors, cost, latency.

    One ``GROUP BY run_id`` over the results of those runs (found through the run index), so
    the page gets a few hundred rows whatever the table's size.
    """
    over = (
        func.sum(case((col(ProbeResult.latency_s) > latency_slo_s, 1), else_=0))
        if latency_slo_s is not None
        else func.sum(0)
    )
    query = (
        select_row(
            ProbeResult.run_id,
            ProbeRun.purpose,
            func.max(ProbeResult.created_at),
            func.count(),
            func.count(col(ProbeResult.score)),
            func.sum(ProbeResult.score),
            func.count(col(ProbeResult.error_type)),
            func.sum(ProbeResult.cost_usd),
            func.avg(ProbeResult.cost_usd),
            func.avg(ProbeResult.latency_s),
            func.max(ProbeResult.latency_s),
            over,
        )
        .join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
        .where(col(ProbeResult.run_id).in_(latest_runs(task_id, runs, since=since, until=until)))
        .group_by(col(ProbeResult.run_id), ProbeRun.purpose)
        .order_by(col(ProbeResult.run_id))
    )
    points = []
    for run_id, purpose, at, calls, n, total, errors, cost, cost_avg, lat, lat_max, over_n in session.exec(query).all():
        mean = float(total) / n if n else None
        lo, hi = wilson_interval_of_mean(mean, int(n))
        points.append(
            RunPoint(
                int(run_id),
                at,
                str(purpose),
                int(calls),
                int(n),
                mean,
                lo,
                hi,
                int(errors),
                safe_float(cost),
                safe_float(cost_avg),
                safe_float(lat),
                safe_float(lat_max),
                int(over_n or 0),
            )
        )
    return points


def detector_states(session: Session, task_id: str) -> list[DetectorState]:
    """Every stream's detector for the task: status, evidence against the threshold, n, segment."""
    return list(
        session.exec(
            select(DetectorState)
            .where(DetectorState.task_id == task_id)
            .order_by(DetectorState.metric, DetectorState.direction)
        ).all()
    )


def findings(session: Session, task_id: str | None = None, *, limit: int = 100) -> list[FindingRecord]:
    """What the detectors concluded, newest first, optionally for one task."""
    query = select(FindingRecord)
    if task_id is not None:
        query = query.where(FindingRecord.task_id == task_id)
    return list(session.exec(query.order_by(col(FindingRecord.id).desc()).limit(limit)).all())


@dataclass(frozen=True)
class Slice:
    """One subgroup's recent score, with the baseline of the canaries it drew where known."""

    tag: str
    value: str
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    baseline_mean: float | None
    baseline_n: int


@dataclass(frozen=True)
class SliceGap:
    """The spread between a tag's best and worst subgroup, now and in the baseline."""

    tag: str
    gap: float | None
    baseline_gap: float | None
    worst: str | None
    best: str | None

    @property
    def widening(self) -> float | None:
        """How much wider the gap is than the baseline's (positive: more unequal than approved)."""
        if self.gap is None or self.baseline_gap is None:
            return None
        return self.gap - self.baseline_gap


def subgroup_slices(session: Session, task_id: str, tags: Sequence[str], *, runs: int = 200) -> list[Slice]:
    """Score per subgroup (e.g. ``age_band``, ``sex``) over the task's latest ``runs`` runs.

    One ``GROUP BY`` on the JSON tag per tag name; results without the tag are left out.
    """
    slices: list[Slice] = []
    for tag in tags:
        value = col(ProbeResult.tags)[tag].as_string()
        query = (
            select_row(
                value,
                func.count(col(ProbeResult.score)),
                func.sum(ProbeResult.score),
                func.count(col(ProbeResult.baseline_score)),
                func.avg(ProbeResult.baseline_score),
            )
            .where(
                ProbeResult.task_id == task_id,
                col(ProbeResult.run_id).in_(latest_runs(task_id, runs)),
                value.is_not(None),
            )
            .group_by(value)
            .order_by(value)
        )
        for v, n, total, bn, bmean in session.exec(query).all():
            mean = float(total) / n if n else None
            lo, hi = wilson_interval_of_mean(mean, int(n))
            slices.append(Slice(tag, str(v), int(n), mean, lo, hi, safe_float(bmean), int(bn)))
    return slices


def slice_gaps(slices: Sequence[Slice]) -> list[SliceGap]:
    """Gap between the best and worst subgroup of each tag, and the same gap in the baseline."""
    gaps = []
    for tag in dict.fromkeys(s.tag for s in slices):
        scored = [s for s in slices if s.tag == tag and s.mean is not None]
        if len(scored) < 2:
            gaps.append(SliceGap(tag, None, None, None, None))
            continue
        worst = min(scored, key=lambda s: s.mean or 0.0)
        best = max(scored, key=lambda s: s.mean or 0.0)
        base = [s.baseline_mean for s in scored if s.baseline_mean is not None]
        gaps.append(
            SliceGap(
                tag,
                (best.mean or 0.0) - (worst.mean or 0.0),
                max(base) - min(base) if len(base) == len(scored) else None,
                worst.value,
                best.value,
            )
        )
    return gaps


@dataclass(frozen=True)
class AnswerRow:
    """A recent canary answer with its score and, when a jury judged it, each judge's verdict."""

    result_id: int
    at: datetime | None
    canary_id: str
    answer: str | None
    score: float | None
    correct: bool | None
    error_type: str | None
    served_model: str | None
    latency_s: float | None
    cost_usd: float | None
    tags: dict[str, Any] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()
    extracted: str | None = None  # what the scorer read from the answer (e.g. the chosen letter)
    parsed: bool | None = None  # False: the scorer could not read the answer (unparsed, not wrong)
    read_path: str | None = None  # which path decided: "rules", "reader model" or "none"


def recent_answers(session: Session, task_id: str, *, limit: int = 20) -> list[AnswerRow]:
    """The task's latest ``limit`` answers, newest first, with the jury's verdicts attached.

    ``extracted`` and ``parsed`` carry the scorer's reading where the stored result has it.
    """

    rows = session.exec(
        select(ProbeResult).where(ProbeResult.task_id == task_id).order_by(col(ProbeResult.id).desc()).limit(limit)
    ).all()
    verdicts = verdicts_for(session, [r.id for r in rows if r.id is not None])
    return [
        AnswerRow(
            r.id or 0,
            r.created_at,
            r.canary_id,
            r.answer,
            r.score,
            r.correct,
            r.error_type,
            r.served_model,
            r.latency_s,
            r.cost_usd,
            dict(r.tags or {}),
            tuple(verdicts.get(r.id or 0, ())),
            getattr(r, "extracted", None),
            getattr(r, "parsed", None),
            getattr(r, "read_path", None),
        )
        for r in rows
    ]


def data_span(session: Session, task_id: str) -> tuple[datetime | None, datetime | None]:
    """When the task's first and latest probe runs started (None, None before any)."""
    first, last = session.exec(
        select(func.min(ProbeRun.started_at), func.max(ProbeRun.started_at)).where(ProbeRun.task_id == task_id)
    ).one()
    return first, last


@dataclass(frozen=True)
class CanaryText:
    """What a canary asks and what counts as right: its question and references."""

    prompt: str
    references: tuple[str, ...]


def canary_texts(plan: Plan, task_id: str) -> dict[str, CanaryText]:
    """The task's canaries by id, as stored in their pack or file (imported canaries were
    redacted when imported); empty when the canary source cannot be read."""
    try:
        ctx = load_context(plan, plan.task(task_id))
    except (MedmonError, OSError, ValueError):
        return {}
    return {c.id: CanaryText(c.prompt, tuple(c.references)) for c in ctx.canaries}
