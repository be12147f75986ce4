"""Whether the LLM jury still stands in for clinicians: agreement on the answers both have rated.

MedHELM validated its jury once, against clinicians, and found moderate agreement (ICC 0.47,
about that of clinicians with each other, 0.43), with the caveat that the jury "requires
further validation". Here every clinician review extends that validation, per task and
criterion, over the task's latest reviewed answers:

- ``jury_icc``: ICC(A,1) (two-way random effects, absolute agreement, single rater; McGraw and
  Wong 1996) between the jury's mean score and the clinicians' mean score, with its 95% interval.
  Absolute agreement, because a jury that is consistently one point lenient does not stand in.
- ``jury_alpha``: Krippendorff's alpha (interval) on the same pairs.
- ``reviewer_icc`` and ``reviewer_alpha``: clinicians with each other on double-reviewed answers:
  ICC(1,1) (one-way: the two reviewers differ from answer to answer) and ordinal alpha.
- ``bias[<judge>]``: the mean of one judge's score minus the clinicians' on the same answer and
  criterion, with its t interval: a judge turning lenient or severe against clinicians.

The ICCs come from ``pingouin`` (imported on first use: it takes seconds), alpha from
``krippendorff``, the t interval from ``scipy``; nothing here re-derives them.

References
----------
McGraw, K. O. and Wong, S. P. (1996). Forming inferences about some intraclass correlation
coefficients. Psychological Methods, 1(1), 30-46.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import krippendorff
import numpy as np
from sqlmodel import Session, col, func, select

from medmon.monitor.models import AgreementRecord, ClinicianReview
from medmon.probes.models import JuryVerdict, ParseStatus

VALID = (ParseStatus.ok, ParseStatus.retried_ok)


@dataclass(frozen=True)
class Agreement:
    """One statistic for (task, criterion): estimate, 95% interval where there is one, items used."""

    task_id: str
    criterion: str
    statistic: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    reason: str | None = None  # why ``value`` is None


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def icc(ratings: Sequence[Sequence[float]], kind: str = "ICC(A,1)") -> tuple[float | None, float | None, float | None]:
    """An ICC with its 95% interval over items x raters (complete rows only), from pingouin.

    ``kind`` is one of pingouin's types: ``ICC(A,1)`` (two-way, absolute agreement) or
    ``ICC(1,1)`` (one-way). Fewer than three items or no spread gives ``(None, None, None)``.

    Examples
    --------
    >>> round(icc([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    ...           "ICC(1,1)")[0], 2)
    0.17
    """
    rows = [list(map(float, r)) for r in ratings if all(v is not None and math.isfinite(v) for v in r)]
    if len(rows) < 3 or len({v for r in rows for v in r}) < 2:
        return None, None, None
    import pandas as pd
    import pingouin  # seconds to import: only when there is something to compute

    long = pd.DataFrame(
        [(i, j, v) for i, r in enumerate(rows) for j, v in enumerate(r)], columns=["item", "rater", "score"]
    )
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        # A degenerate table (every item's mean alike) divides by zero in the k-rater variants,
        # which are not used here.
        warnings.simplefilter("ignore", RuntimeWarning)
        table = pingouin.intraclass_corr(data=long, targets="item", raters="rater", ratings="score").set_index("Type")
    row = table.loc[kind]
    low, high = row["CI95"]
    value, low, high = _finite(row["ICC"]), _finite(low), _finite(high)
    return value, (low if high is not None else None), (high if low is not None else None)


def alpha(
    data: np.ndarray,
    level: Literal["nominal", "ordinal", "interval", "ratio"],
    value_domain: Sequence[int] | None = None,
) -> float | None:
    """Krippendorff's alpha over coders x units (NaN: missing), or None when undefined."""
    values = data[~np.isnan(data)]
    if data.shape[0] < 2 or len(set(values.tolist())) < 2:
        return None
    kwargs = {"value_domain": list(value_domain)} if value_domain is not None and level == "ordinal" else {}
    return _finite(krippendorff.alpha(reliability_data=data, level_of_measurement=level, **kwargs))


def mean_interval(diffs: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """Mean with its 95% t interval (scipy), or None where fewer than two values or no spread."""
    if not diffs:
        return None, None, None
    mean = float(np.mean(diffs))
    if len(diffs) < 2 or float(np.std(diffs)) == 0.0:
        return mean, mean, mean
    from scipy import stats

    ci = stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
    return mean, float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Rated:
    """The scores both sides gave one answer on one criterion."""

    result_id: int
    criterion: str
    clinicians: dict[str, int]
    judges: dict[str, int]

    @property
    def clinician_mean(self) -> float:
        return sum(self.clinicians.values()) / len(self.clinicians)

    @property
    def jury_mean(self) -> float | None:
        return sum(self.judges.values()) / len(self.judges) if self.judges else None


def rated(session: Session, task_id: str, window: int) -> list[Rated]:
    """The task's latest ``window`` reviewed answers, per criterion, with the judges' valid scores."""
    result_ids = list(
        session.exec(
            select(ClinicianReview.result_id)
            .where(ClinicianReview.task_id == task_id)
            .distinct()
            .order_by(col(ClinicianReview.result_id).desc())
            .limit(window)
        ).all()
    )
    if not result_ids:
        return []
    clinicians: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
    for review in session.exec(
        select(ClinicianReview).where(col(ClinicianReview.result_id).in_(result_ids)).order_by(col(ClinicianReview.id))
    ).all():
        for criterion, score in review.scores.items():
            clinicians[(review.result_id, criterion)][review.reviewer] = int(score)
    judges: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
    for result_id, criterion, judge, score in session.exec(
        select(JuryVerdict.result_id, JuryVerdict.criterion, JuryVerdict.judge, JuryVerdict.score).where(
            col(JuryVerdict.result_id).in_(result_ids),
            col(JuryVerdict.parse_status).in_(VALID),
            col(JuryVerdict.score).is_not(None),
        )
    ).all():
        if score is not None:  # the query keeps scored verdicts only; this tells the type checker
            judges[(result_id, criterion)][judge] = int(score)
    return [Rated(rid, crit, scores, judges.get((rid, crit), {})) for (rid, crit), scores in sorted(clinicians.items())]


def task_agreement(
    session: Session, task_id: str, *, window: int = 200, scale: tuple[int, int] = (1, 5), min_items: int = 3
) -> list[Agreement]:
    """Every statistic for every criterion of one task; a statistic with too few items says why."""
    items = rated(session, task_id, window)
    out: list[Agreement] = []
    for criterion in sorted({i.criterion for i in items}):
        rows = [i for i in items if i.criterion == criterion]
        out += _jury_stats(task_id, criterion, [r for r in rows if r.judges], min_items)
        out += _reviewer_stats(task_id, criterion, [r for r in rows if len(r.clinicians) >= 2], scale, min_items)
        out += _bias_stats(task_id, criterion, [r for r in rows if r.judges])
    return out


def _too_few(task_id: str, criterion: str, statistic: str, n: int, min_items: int) -> Agreement | None:
    if n >= min_items:
        return None
    return Agreement(task_id, criterion, statistic, None, None, None, n, f"{n} of the {min_items} answers needed")


def _jury_stats(task_id: str, criterion: str, rows: list[Rated], min_items: int) -> list[Agreement]:
    n = len(rows)
    short = [_too_few(task_id, criterion, s, n, min_items) for s in ("jury_icc", "jury_alpha")]
    if short[0] is not None:
        return [s for s in short if s is not None]
    pairs = [(float(r.jury_mean or 0.0), r.clinician_mean) for r in rows]
    value, low, high = icc(pairs, "ICC(A,1)")
    a = alpha(np.array(pairs, dtype=float).T, "interval")
    reason = None if value is not None else "no spread in the scores"
    return [
        Agreement(task_id, criterion, "jury_icc", value, low, high, n, reason),
        Agreement(task_id, criterion, "jury_alpha", a, None, None, n, None if a is not None else reason),
    ]


def _reviewer_stats(
    task_id: str, criterion: str, rows: list[Rated], scale: tuple[int, int], min_items: int
) -> list[Agreement]:
    n = len(rows)
    if n < min_items:
        return [
            a
            for a in (_too_few(task_id, criterion, s, n, min_items) for s in ("reviewer_icc", "reviewer_alpha"))
            if a is not None
        ]
    value, low, high = icc([list(r.clinicians.values())[:2] for r in rows], "ICC(1,1)")
    reviewers = sorted({name for r in rows for name in r.clinicians})
    data = np.full((len(reviewers), n), np.nan)
    for u, r in enumerate(rows):
        for name, score in r.clinicians.items():
            data[reviewers.index(name), u] = score
    a = alpha(data, "ordinal", range(scale[0], scale[1] + 1))
    return [
        Agreement(task_id, criterion, "reviewer_icc", value, low, high, n),
        Agreement(task_id, criterion, "reviewer_alpha", a, None, None, n),
    ]


def _bias_stats(task_id: str, criterion: str, rows: list[Rated]) -> list[Agreement]:
    diffs: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        for judge, score in r.judges.items():
            diffs[judge].append(score - r.clinician_mean)
    out = []
    for judge in sorted(diffs):
        mean, low, high = mean_interval(diffs[judge])
        out.append(Agreement(task_id, criterion, f"bias[{judge}]", mean, low, high, len(diffs[judge])))
    return out


def record_agreement(session: Session, stats: Sequence[Agreement], now: datetime) -> list[AgreementRecord]:
    """Append a point to each stream whose item count moved since its last point."""
    added = []
    for s in stats:
        if s.value is None:
            continue
        last = session.exec(
            select(AgreementRecord.n)
            .where(
                AgreementRecord.task_id == s.task_id,
                AgreementRecord.criterion == s.criterion,
                AgreementRecord.statistic == s.statistic,
            )
            .order_by(col(AgreementRecord.id).desc())
            .limit(1)
        ).first()
        if last == s.n:
            continue
        row = AgreementRecord(
            task_id=s.task_id,
            criterion=s.criterion,
            statistic=s.statistic,
            value=s.value,
            ci_low=s.ci_low,
            ci_high=s.ci_high,
            n=s.n,
            created_at=now,
        )
        session.add(row)
        added.append(row)
    session.flush()
    return added


def latest_agreements(
    session: Session, *, before: datetime | None = None, task_ids: list[str] | None = None
) -> list[AgreementRecord]:
    """The newest point of every (task, criterion, statistic) stream, optionally before ``before``."""
    newest = select(func.max(AgreementRecord.id))
    if before is not None:
        newest = newest.where(col(AgreementRecord.created_at) < before)
    newest = newest.group_by(AgreementRecord.task_id, AgreementRecord.criterion, AgreementRecord.statistic)
    query = select(AgreementRecord).where(col(AgreementRecord.id).in_(newest))
    if task_ids is not None:
        query = query.where(col(AgreementRecord.task_id).in_(task_ids))
    order = (AgreementRecord.task_id, AgreementRecord.criterion, AgreementRecord.statistic)
    return list(session.exec(query.order_by(*order)).all())
