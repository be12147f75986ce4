"""The LLM jury as the dashboard shows it: agreement over time, each judge's scores, failures.

Every function degrades to an empty answer where no jury verdicts are stored (a plan without a
jury, or an installation whose probes package has no verdict table).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import case
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, func, select

from monitor.read._sql import as_day, as_time, day_of, safe_float
from monitor.read.task import Verdict
from probes import models as probe_models
from probes.models import ProbeResult

UNPARSED = ("unparsed", "failed")


def verdict_table() -> Any:
    """The jury verdict table, or None where this installation has none."""
    return getattr(probe_models, "JuryVerdict", None)


def verdict_count(session: Session) -> int:
    """How many judge verdicts are stored (0 means: no jury has judged anything)."""
    table = verdict_table()
    if table is None:
        return 0
    return int(session.exec(select(func.count()).select_from(table)).one())


def verdicts_for(session: Session, result_ids: Sequence[int]) -> dict[int, list[Verdict]]:
    """Each result's verdicts, by judge and criterion."""
    table = verdict_table()
    if table is None or not result_ids:
        return {}
    out: dict[int, list[Verdict]] = defaultdict(list)
    for v in session.exec(select(table).where(col(table.result_id).in_(list(result_ids)))
                          .order_by(table.judge, table.criterion)).all():
        out[v.result_id].append(Verdict(v.judge, v.criterion, v.score, str(v.parse_status),
                                        (v.explanation or "")[:300]))
    return dict(out)


@dataclass(frozen=True)
class JudgeDay:
    """One judge's verdicts on one day: mean score, how many, how many could not be read."""

    day: date
    judge: str
    n: int
    mean: float | None
    unparsed: int


def judge_series(session: Session, since: datetime, task_id: str | None = None) -> list[JudgeDay]:
    """Each judge's daily mean score (on the jury's scale): one drifting judge stands out."""
    table = verdict_table()
    if table is None:
        return []
    day = day_of(session, ProbeResult.created_at)
    query = (select(day, table.judge, func.count(table.score), func.avg(table.score),
                    func.count() - func.count(table.score))
             .join(ProbeResult, col(ProbeResult.id) == col(table.result_id))
             .where(col(ProbeResult.created_at) >= since))
    if task_id is not None:
        query = query.where(ProbeResult.task_id == task_id)
    query = query.group_by(day, table.judge).order_by(day, table.judge)
    return [JudgeDay(as_day(d), str(j), int(n), safe_float(m), int(u)) for d, j, n, m, u in session.exec(query).all()]


@dataclass(frozen=True)
class AgreementDay:
    """Agreement between judges on one day: 1 minus the mean pairwise gap on the jury's scale."""

    day: date
    items: int
    agreement: float | None
    unanimous: float | None


def agreement_series(session: Session, since: datetime, *, scale_span: float,
                     task_id: str | None = None) -> list[AgreementDay]:
    """Daily mean of per-item agreement, from a self-join of verdicts on the same answer and criterion.

    Per item (answer x criterion): agreement = 1 - mean over judge pairs of ``|a - b| / span``;
    unanimous is the share of pairs that agree exactly. Computed with one grouped query.
    """
    table = verdict_table()
    if table is None:
        return []
    a, b = aliased(table), aliased(table)
    day = day_of(session, ProbeResult.created_at)
    gap = func.abs(a.score - b.score) / scale_span
    query = (select(day, func.count(func.distinct(a.result_id)), func.avg(gap),
                    func.avg(case((a.score == b.score, 1.0), else_=0.0)))
             .select_from(a).join(b, (a.result_id == b.result_id) & (a.criterion == b.criterion) & (a.judge < b.judge))
             .join(ProbeResult, col(ProbeResult.id) == a.result_id)
             .where(col(ProbeResult.created_at) >= since, a.score.is_not(None), b.score.is_not(None)))
    if task_id is not None:
        query = query.where(ProbeResult.task_id == task_id)
    query = query.group_by(day).order_by(day)
    return [AgreementDay(as_day(d), int(n), None if g is None else 1 - float(g), safe_float(u))
            for d, n, g, u in session.exec(query).all()]


@dataclass(frozen=True)
class UnparsedVerdict:
    """A verdict the jury could not read: the judge's own words are kept for review."""

    result_id: int
    task: str
    at: datetime | None
    judge: str
    criterion: str
    parse_status: str
    explanation: str


def unparsed_verdicts(session: Session, *, limit: int = 100) -> list[UnparsedVerdict]:
    """Verdicts whose judge answered something that could not be parsed, or failed, newest first."""
    table = verdict_table()
    if table is None:
        return []
    query = (select(table, ProbeResult.task_id, ProbeResult.created_at)
             .join(ProbeResult, col(ProbeResult.id) == col(table.result_id))
             .where(col(table.parse_status).in_(UNPARSED)).order_by(col(table.id).desc()).limit(limit))
    return [UnparsedVerdict(v.result_id, str(t), as_time(at), v.judge, v.criterion, str(v.parse_status),
                            (v.explanation or "")[:500]) for v, t, at in session.exec(query).all()]


def judge_cost_by_task(session: Session, since: datetime) -> dict[str, float]:
    """The judges' cost per task since ``since``: its own ledger, never the production model's."""
    table = verdict_table()
    if table is None:
        return {}
    query = (select(ProbeResult.task_id, func.coalesce(func.sum(table.cost_usd), 0.0))
             .join(ProbeResult, col(ProbeResult.id) == col(table.result_id))
             .where(col(ProbeResult.created_at) >= since).group_by(ProbeResult.task_id))
    return {str(t): float(c) for t, c in session.exec(query).all()}


def judge_cost_by_day(session: Session, since: datetime) -> dict[date, float]:
    """The judges' cost per UTC day since ``since``."""
    table = verdict_table()
    if table is None:
        return {}
    day = day_of(session, ProbeResult.created_at)
    query = (select(day, func.coalesce(func.sum(table.cost_usd), 0.0))
             .join(ProbeResult, col(ProbeResult.id) == col(table.result_id))
             .where(col(ProbeResult.created_at) >= since).group_by(day))
    return {as_day(d): float(c) for d, c in session.exec(query).all()}
