"""Real traffic for the dashboard's Production traffic page and the committee report.

Everything is read from the hourly rollups (raw spans expire after ``traffic.retention``), with
sums computed by the database; latency percentiles come from the summed histogram buckets,
interpolated within the bucket that holds them. Judged quality comes from the jury's verdicts
on sampled real exchanges.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any

from sqlalchemy import ColumnElement
from sqlmodel import Session, col, func, select

from medmon.monitor.models import LATENCY_BUCKETS, TrafficJudgement, TrafficRejection, TrafficRollup
from medmon.monitor.read._sql import as_day, day_of, safe_float
from medmon.monitor.storage import select_row

_BUCKETS = [getattr(TrafficRollup, f"latency_b{i}") for i in range(len(LATENCY_BUCKETS))]
_SUMS = (
    func.sum(TrafficRollup.calls),
    func.sum(TrafficRollup.errors),
    func.sum(TrafficRollup.cost_usd),
    func.sum(TrafficRollup.input_tokens),
    func.sum(TrafficRollup.output_tokens),
    func.sum(TrafficRollup.latency_sum_s),
    func.max(TrafficRollup.latency_max_s),
    func.sum(TrafficRollup.truncated),
    func.sum(TrafficRollup.with_content),
    func.sum(TrafficRollup.refusals),
    *[func.sum(b) for b in _BUCKETS],
)


def percentile(hist: list[int], q: float, top: float) -> float | None:
    """The ``q`` quantile of a latency histogram over ``LATENCY_BUCKETS`` (``top``: the largest seen).

    Examples
    --------
    >>> percentile([0, 10, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0.5, 0.4)
    0.25
    """
    total = sum(hist)
    if not total:
        return None
    rank = q * total
    seen = 0
    for i, count in enumerate(hist):
        if count and seen + count >= rank:
            low = LATENCY_BUCKETS[i - 1] if i else 0.0
            high = min(LATENCY_BUCKETS[i], top)
            return low + (high - low) * (rank - seen) / count if high > low else high
        seen += count
    return top


@dataclass(frozen=True)
class TrafficFigures:
    """Sums over a group of rollups (a task and model, a day), with rates and percentiles."""

    calls: int
    errors: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    latency_sum_s: float
    latency_max_s: float
    truncated: int
    with_content: int
    refusals: int
    hist: tuple[int, ...]

    @classmethod
    def of(cls, row: Any) -> TrafficFigures:
        vals = list(row)
        return cls(
            int(vals[0] or 0),
            int(vals[1] or 0),
            safe_float(vals[2]) or 0.0,
            int(vals[3] or 0),
            int(vals[4] or 0),
            safe_float(vals[5]) or 0.0,
            safe_float(vals[6]) or 0.0,
            int(vals[7] or 0),
            int(vals[8] or 0),
            int(vals[9] or 0),
            tuple(int(v or 0) for v in vals[10:]),
        )

    @property
    def ok_calls(self) -> int:
        return self.calls - self.errors

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0

    @property
    def truncation_rate(self) -> float:
        return self.truncated / self.ok_calls if self.ok_calls else 0.0

    @property
    def refusal_rate(self) -> float | None:
        return self.refusals / self.with_content if self.with_content else None

    @property
    def cost_per_call(self) -> float | None:
        return self.cost_usd / self.calls if self.calls else None

    @property
    def p50_s(self) -> float:
        return percentile(list(self.hist), 0.5, self.latency_max_s) or 0.0

    @property
    def p95_s(self) -> float:
        return percentile(list(self.hist), 0.95, self.latency_max_s) or 0.0

    @property
    def p99_s(self) -> float:
        return percentile(list(self.hist), 0.99, self.latency_max_s) or 0.0


@dataclass(frozen=True)
class TrafficGroup(TrafficFigures):
    task: str = ""  # '' for calls no route matched
    model: str = ""


@dataclass(frozen=True)
class TrafficDay(TrafficFigures):
    day: date = date.min
    task: str = ""


@dataclass(frozen=True)
class JudgedDay:
    """The jury's verdicts on sampled real exchanges of one task on one day."""

    day: date
    task: str
    judged: int
    score: float | None
    agreement: float | None


@dataclass
class TrafficSummary:
    groups: list[TrafficGroup] = field(default_factory=list)
    days: list[TrafficDay] = field(default_factory=list)
    judged: list[JudgedDay] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)

    @property
    def calls(self) -> int:
        return sum(g.calls for g in self.groups)

    @property
    def unmatched(self) -> int:
        return sum(g.calls for g in self.groups if not g.task)

    def as_dict(self) -> dict[str, Any]:
        def plain(f: TrafficFigures) -> dict[str, Any]:
            d = asdict(f)
            d.pop("hist")
            d.update(
                error_rate=f.error_rate,
                truncation_rate=f.truncation_rate,
                refusal_rate=f.refusal_rate,
                cost_per_call=f.cost_per_call,
                p50_s=f.p50_s,
                p95_s=f.p95_s,
                p99_s=f.p99_s,
            )
            return {k: (v.isoformat() if isinstance(v, date) else v) for k, v in d.items()}

        return {
            "calls": self.calls,
            "unmatched": self.unmatched,
            "groups": [plain(g) for g in self.groups],
            "days": [plain(d) for d in self.days],
            "judged": [{**asdict(j), "day": j.day.isoformat()} for j in self.judged],
            "refused": dict(self.refused),
        }


def traffic_summary(session: Session, since: datetime, until: datetime, task: str | None = None) -> TrafficSummary:
    """Traffic between ``since`` and ``until`` per (task, model) and per (day, task), from the rollups."""
    where: list[ColumnElement[bool]] = [col(TrafficRollup.hour) >= since, col(TrafficRollup.hour) < until]
    if task is not None:
        where.append(col(TrafficRollup.task_id) == task)
    out = TrafficSummary()
    for row in session.exec(
        select_row(TrafficRollup.task_id, TrafficRollup.model, *_SUMS)
        .where(*where)
        .group_by(TrafficRollup.task_id, TrafficRollup.model)
        .order_by(TrafficRollup.task_id, TrafficRollup.model)
    ).all():
        out.groups.append(TrafficGroup(**asdict(TrafficFigures.of(row[2:])), task=row[0], model=row[1]))
    day = day_of(session, TrafficRollup.hour)
    for row in session.exec(
        select_row(day, TrafficRollup.task_id, *_SUMS)
        .where(*where)
        .group_by(day, TrafficRollup.task_id)
        .order_by(day, TrafficRollup.task_id)
    ).all():
        out.days.append(TrafficDay(**asdict(TrafficFigures.of(row[2:])), day=as_day(row[0]), task=row[1]))
    jday = day_of(session, TrafficJudgement.judged_at)
    jwhere: list[ColumnElement[bool]] = [
        col(TrafficJudgement.judged_at) >= since,
        col(TrafficJudgement.judged_at) < until,
    ]
    if task is not None:
        jwhere.append(col(TrafficJudgement.task_id) == task)
    for row in session.exec(
        select_row(
            jday,
            TrafficJudgement.task_id,
            func.count(col(TrafficJudgement.score)),
            func.avg(TrafficJudgement.score),
            func.avg(TrafficJudgement.agreement),
        )
        .where(*jwhere)
        .group_by(jday, TrafficJudgement.task_id)
        .order_by(jday, TrafficJudgement.task_id)
    ).all():
        out.judged.append(JudgedDay(as_day(row[0]), row[1], int(row[2]), safe_float(row[3]), safe_float(row[4])))
    for reason, count in session.exec(
        select(TrafficRejection.reason, func.sum(TrafficRejection.count))
        .where(col(TrafficRejection.hour) >= since, col(TrafficRejection.hour) < until)
        .group_by(TrafficRejection.reason)
    ).all():
        out.refused[reason] = int(count or 0)
    return out
