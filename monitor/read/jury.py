"""The LLM jury as the dashboard shows it: agreement over time, each judge's scores, failures, cost.

Judges keep their own ledger (``JudgeCall``): their cost is reported beside the production
model's, never added to it. Every function answers empty where no judge has been called, which
the pages show as "no jury configured".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import case
from sqlmodel import Session, col, func, select

from medmon.monitor.read._sql import as_day, day_of, safe_float
from medmon.monitor.storage import select_row
from medmon.probes.agreement import WindowAgreement, window_agreement
from medmon.probes.models import JudgeCall, JuryVerdict, ParseStatus, ProbeResult

NOT_READ = (ParseStatus.unparsed, ParseStatus.failed)


def verdict_count(session: Session) -> int:
    """How many judge calls are stored (0 means: no jury has judged anything)."""
    return int(session.exec(select(func.count()).select_from(JudgeCall)).one())


def verdicts_for(session: Session, result_ids: Sequence[int]) -> dict[int, list[Verdict]]:
    """Each result's verdicts, by judge and criterion."""
    if not result_ids:
        return {}
    out: dict[int, list[Verdict]] = defaultdict(list)
    for v in session.exec(
        select(JuryVerdict)
        .where(col(JuryVerdict.result_id).in_(list(result_ids)))
        .order_by(JuryVerdict.judge, JuryVerdict.criterion)
    ).all():
        out[v.result_id].append(
            Verdict(
                v.judge,
                v.criterion,
                None if v.score is None else float(v.score),
                ParseStatus(v.parse_status).value,
                (v.explanation or "")[:300],
            )
        )
    return dict(out)


@dataclass(frozen=True)
class Verdict:
    """One judge's score of one criterion for one answer."""

    judge: str
    criterion: str
    score: float | None
    parse_status: str
    explanation: str = ""


@dataclass(frozen=True)
class JudgeDay:
    """One judge's verdicts on one UTC day: mean score, how many, how many could not be read."""

    day: date
    judge: str
    n: int
    mean: float | None
    unread: int


def judge_series(session: Session, since: datetime) -> list[JudgeDay]:
    """Each judge's daily mean score (on the jury's scale): one drifting judge stands out."""
    day = day_of(session, JuryVerdict.created_at)
    unread = func.sum(case((col(JuryVerdict.parse_status).in_(NOT_READ), 1), else_=0))
    query = (
        select_row(day, JuryVerdict.judge, func.count(col(JuryVerdict.score)), func.avg(JuryVerdict.score), unread)
        .where(col(JuryVerdict.created_at) >= since)
        .group_by(day, JuryVerdict.judge)
        .order_by(day, JuryVerdict.judge)
    )
    return [
        JudgeDay(as_day(d), str(j), int(n), safe_float(m), int(u or 0)) for d, j, n, m, u in session.exec(query).all()
    ]


@dataclass(frozen=True)
class AgreementDay:
    """Agreement between judges on one UTC day (mean of the per-answer agreement stored by the jury)."""

    day: date
    items: int
    agreement: float | None
    unanimous: float | None


def agreement_series(session: Session, since: datetime) -> list[AgreementDay]:
    """Daily mean per-answer agreement (1 - mean pairwise gap / scale width) and share unanimous."""
    day = day_of(session, ProbeResult.created_at)
    unanimous = func.avg(case((col(ProbeResult.jury_unanimous).is_(True), 1.0), else_=0.0))
    query = (
        select(day, func.count(), func.avg(ProbeResult.jury_agreement), unanimous)
        .where(col(ProbeResult.created_at) >= since, col(ProbeResult.jury_agreement).is_not(None))
        .group_by(day)
        .order_by(day)
    )
    return [AgreementDay(as_day(d), int(n), safe_float(a), safe_float(u)) for d, n, a, u in session.exec(query).all()]


def window_alphas(
    session: Session, task_ids: Sequence[str], *, window: int = 200, scale_min: int = 1, scale_max: int = 5
) -> list[WindowAgreement]:
    """Krippendorff's alpha (ordinal) over each task's latest ``window`` judged answers."""
    return [window_agreement(session, t, window, scale_min=scale_min, scale_max=scale_max) for t in task_ids]


@dataclass(frozen=True)
class UnreadVerdict:
    """A judge call whose verdict could not be read (or that failed): kept for review."""

    result_id: int
    task: str
    at: datetime | None
    judge: str
    model: str
    parse_status: str
    asks: int
    error: str


def unread_verdicts(session: Session, *, limit: int = 100) -> list[UnreadVerdict]:
    """Judge calls whose answer could not be parsed, or that failed, newest first."""
    query = (
        select(JudgeCall)
        .where(col(JudgeCall.parse_status).in_(NOT_READ))
        .order_by(col(JudgeCall.id).desc())
        .limit(limit)
    )
    return [
        UnreadVerdict(
            c.result_id,
            c.task_id,
            c.created_at,
            c.judge,
            c.model,
            ParseStatus(c.parse_status).value,
            c.asks,
            (c.error or c.error_type or "")[:500],
        )
        for c in session.exec(query).all()
    ]


def judge_cost_by_task(session: Session, since: datetime) -> dict[str, float]:
    """The judges' cost per task since ``since``: its own ledger, never the production model's."""
    query = (
        select(JudgeCall.task_id, func.coalesce(func.sum(JudgeCall.cost_usd), 0.0))
        .where(col(JudgeCall.created_at) >= since)
        .group_by(JudgeCall.task_id)
    )
    return {str(t): float(c or 0.0) for t, c in session.exec(query).all()}


def judge_cost_by_day(session: Session, since: datetime) -> dict[date, float]:
    """The judges' cost per UTC day since ``since``."""
    day = day_of(session, JudgeCall.created_at)
    query = (
        select(day, func.coalesce(func.sum(JudgeCall.cost_usd), 0.0))
        .where(col(JudgeCall.created_at) >= since)
        .group_by(day)
    )
    return {as_day(d): float(c or 0.0) for d, c in session.exec(query).all()}
