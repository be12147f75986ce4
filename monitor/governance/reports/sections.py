"""The report's evidence sections beyond each task's verdict: trend, equity and the monitor's health.

Every figure is a SQL aggregate over monitoring runs within ``[start, end)`` (re-evaluation
runs never count), so re-rendering a past period gives the same numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case
from sqlmodel import Session, col, func, select

from medmon.baselines.interval import mean_interval, wilson_interval
from medmon.monitor.governance.reports.period import Period, previous
from medmon.monitor.models import FindingRecord
from medmon.monitor.plan.model import Plan, Task
from medmon.monitor.storage import select_row
from medmon.probes.models import ProbeResult, ProbeRun, RunStatus

REEVALUATION = "reevaluation"
TREND_PERIODS = 3
MIN_SUBGROUP_N = 30  # fewer scored answers than this: the subgroup's interval is too wide to read


@dataclass(frozen=True)
class Estimate:
    n: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None


def in_period(column: Any, period: Period) -> Any:
    return (column >= period.start) & (column < period.end)


def monitoring() -> Any:
    return col(ProbeRun.purpose) != REEVALUATION


def interval(n: int, total: float, total2: float, binary: bool) -> Estimate:
    """Mean with its 95% interval: Wilson for 0/1 scores, normal for bounded ones."""
    if n == 0:
        return Estimate(0, None, None, None)
    mean = total / n
    if binary:
        lo, hi = wilson_interval(mean, n)
    else:
        var = max(total2 - n * mean * mean, 0.0) / (n - 1) if n > 1 else 0.0
        lo, hi = mean_interval(mean, math.sqrt(var), n)
    return Estimate(n, mean, lo, hi)


def _score_columns() -> tuple[Any, ...]:
    score = col(ProbeResult.score)
    return (
        func.count(score),
        func.sum(score),
        func.sum(score * score),
        func.sum(case((score.in_([0.0, 1.0]), 0), else_=1)),
    )


def _scored(task_id: str, period: Period) -> tuple[Any, ...]:
    return (
        ProbeResult.task_id == task_id,
        col(ProbeResult.score).is_not(None),
        monitoring(),
        in_period(col(ProbeResult.created_at), period),
    )


def task_estimate(session: Session, task_id: str, period: Period) -> Estimate:
    """The task's mean monitoring score in the period with its 95% interval."""
    n, total, total2, non_binary = session.exec(
        select(*_score_columns())
        .join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
        .where(*_scored(task_id, period))
    ).one()
    return interval(int(n or 0), float(total or 0.0), float(total2 or 0.0), not non_binary)


def trend(session: Session, task_id: str, period: Period, periods: int = TREND_PERIODS) -> list[dict[str, Any]]:
    """The task's estimate in each of the ``periods`` periods before this one, oldest first."""
    out, current = [], period
    for _ in range(periods):
        current = previous(current)
        e = task_estimate(session, task_id, current)
        out.append({"period": current.label, "n": e.n, "estimate": e.mean, "ci_low": e.ci_low, "ci_high": e.ci_high})
    return list(reversed(out))


@dataclass
class SubgroupRow:
    tag: str
    value: str
    n: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    too_little_data: bool
    below_threshold: bool | None


@dataclass
class EquityRow:
    """One task's subgroups under one tag, the gap between best and worst, and that gap before."""

    task: str
    tag: str
    subgroups: list[SubgroupRow]
    gap: float | None
    previous_gap: float | None
    max_gap: float | None
    gap_exceeds: bool | None
    subgroup_min_score: float | None
    notes: list[str] = field(default_factory=list)


def _subgroups(session: Session, task: Task, tag: str, period: Period) -> list[SubgroupRow]:
    value = col(ProbeResult.tags)[tag].as_string()
    rows = session.exec(
        select(value, *_score_columns())
        .join(ProbeRun, col(ProbeRun.id) == col(ProbeResult.run_id))
        .where(*_scored(task.id, period), value.is_not(None))
        .group_by(value)
        .order_by(value)
    ).all()
    floor = task.thresholds.subgroup_min_score
    out = []
    for v, n, total, total2, non_binary in rows:
        e = interval(int(n), float(total or 0.0), float(total2 or 0.0), not non_binary)
        below = None if floor is None or e.ci_high is None else e.ci_high < floor
        out.append(SubgroupRow(tag, str(v), e.n, e.mean, e.ci_low, e.ci_high, e.n < MIN_SUBGROUP_N, below))
    return out


def _gap(rows: list[SubgroupRow]) -> float | None:
    readable = [r.estimate for r in rows if r.estimate is not None and not r.too_little_data]
    return max(readable) - min(readable) if len(readable) >= 2 else None


def equity(session: Session, plan: Plan, period: Period) -> list[EquityRow]:
    """Per-subgroup estimates with intervals for every tag a task names, the gap and its trend."""
    out = []
    for task in plan.tasks:
        for tag in task.subgroups:
            rows = _subgroups(session, task, tag, period)
            gap = _gap(rows)
            before = _gap(_subgroups(session, task, tag, previous(period)))
            limit = task.thresholds.max_subgroup_gap
            notes = [
                f"{r.value}: only {r.n} scored answers (fewer than {MIN_SUBGROUP_N}); its interval is too wide "
                "to compare"
                for r in rows
                if r.too_little_data
            ]
            if not rows:
                notes.append(f"no answer in this period carried the tag {tag!r}")
            out.append(
                EquityRow(
                    task.id,
                    tag,
                    rows,
                    gap,
                    before,
                    limit,
                    None if gap is None or limit is None else gap > limit,
                    task.thresholds.subgroup_min_score,
                    notes,
                )
            )
    return out


@dataclass
class HealthRow:
    """Whether the monitor itself did its job for one task in the period."""

    task: str
    runs: int
    complete: int
    failed: int
    interrupted: int
    success_rate: float | None
    expected_runs: int | None
    longest_gap_hours: float | None
    allowed_gap_hours: float | None
    stale: bool | None
    streams_alarmed: list[str]


def health(session: Session, plan: Plan, period: Period, *, stale_after: float, now: datetime) -> list[HealthRow]:
    """Runs succeeded, the longest silence against the schedule, and which streams alarmed.

    Counting starts at the task's first run in the period (a task may go live mid-period) and
    ends at the period's end, or now for a period still open: a monitor that stopped probing
    shows as a long final gap.
    """
    horizon = min(period.end, now)
    out = []
    for task in plan.tasks:
        counts = dict(
            session.exec(
                select(ProbeRun.status, func.count())
                .where(ProbeRun.task_id == task.id, monitoring(), in_period(col(ProbeRun.started_at), period))
                .group_by(ProbeRun.status)
            ).all()
        )
        starts = list(
            session.exec(
                select(ProbeRun.started_at)
                .where(ProbeRun.task_id == task.id, monitoring(), in_period(col(ProbeRun.started_at), period))
                .order_by(col(ProbeRun.started_at))
            ).all()
        )
        runs = sum(int(v) for v in counts.values())
        complete = int(counts.get(RunStatus.complete, 0))
        every = task.interval
        expected = int((horizon - starts[0]) / every) if every is not None and starts else None
        gap = _longest_gap(starts, horizon) if starts else None
        allowed = every * stale_after if every is not None else None
        alarmed = (
            sorted(
                {
                    str(m)
                    for m in session.exec(
                        select(FindingRecord.metric)
                        .where(
                            FindingRecord.task_id == task.id,
                            FindingRecord.kind == "drift",
                            in_period(col(FindingRecord.created_at), period),
                        )
                        .distinct()
                    ).all()
                }
            )
            if runs
            else []
        )
        out.append(
            HealthRow(
                task.id,
                runs,
                complete,
                int(counts.get(RunStatus.failed, 0)),
                int(counts.get(RunStatus.interrupted, 0)),
                complete / runs if runs else None,
                expected,
                _hours(gap),
                _hours(allowed),
                None if gap is None or allowed is None else gap > allowed,
                alarmed,
            )
        )
    return out


def _longest_gap(starts: list[datetime], horizon: datetime) -> timedelta:
    """The longest wait between runs, and from the last run to the horizon."""
    gaps = [b - a for a, b in zip(starts, [*starts[1:], horizon])]
    return max(gaps, default=timedelta(0))


def _hours(gap: timedelta | None) -> float | None:
    return None if gap is None else round(gap / timedelta(hours=1), 2)


def provenance(session: Session, task_id: str, period: Period) -> list[dict[str, Any]]:
    """Which canaries (content hash), prompt and decoding, and scorer produced the period's runs."""
    rows = session.exec(
        select_row(
            ProbeRun.pack_sha256,
            ProbeRun.prompt_sha256,
            ProbeRun.scorer_version,
            func.count(),
            func.min(ProbeRun.started_at),
            func.max(ProbeRun.started_at),
        )
        .where(ProbeRun.task_id == task_id, in_period(col(ProbeRun.started_at), period))
        .group_by(ProbeRun.pack_sha256, ProbeRun.prompt_sha256, ProbeRun.scorer_version)
        .order_by(func.min(ProbeRun.started_at))
    ).all()
    return [
        {
            "pack_sha256": pack,
            "prompt_sha256": prompt,
            "scorer_version": scorer,
            "runs": int(n),
            "first": first,
            "last": last,
        }
        for pack, prompt, scorer, n, first, last in rows
    ]
