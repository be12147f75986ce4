"""Real answers judged: a sample of real exchanges goes to the jury with reference-free criteria.

Only calls whose spans carried content are candidates; a call is sampled when a hash of its
span id falls under ``traffic.judging.sample_rate`` (the same calls whichever replica looks),
up to ``daily_cap`` judgements a day. Real text may hold patient data, so it goes only to the
judges the plan marks ``phi_allowed: true`` (in-network endpoints), and what is sent is the
stored text, already redacted. With ``privacy.store_text: false`` no text is stored: the receiver
judges its sampled exchanges from memory as they arrive (``medmon.monitor.traffic.memory_judging``)
and stores only the verdicts, which ``judging_job`` then feeds to the streams.

The verdicts feed two streams per task, like the canaries' jury streams: the judged score
against the task's first ``REFERENCE_JUDGEMENTS`` judged exchanges (a drop is a finding), and
the judges' agreement against the task's ``min_jury_agreement``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, func, select

from medmon.alerts import Signal, apply_signals
from medmon.baselines.canary import canary_from_dict
from medmon.db import session_scope
from medmon.monitor.detection.drift.layout import StreamSpec, margin_z
from medmon.monitor.detection.streams import finding_record, update_stream
from medmon.monitor.governance.current import live_policy
from medmon.monitor.models import TrafficJudgement, TrafficReference, TrafficSpan
from medmon.monitor.plan.model import Plan
from medmon.monitor.traffic.streams import signal_of, traffic_threshold
from medmon.probes.client import ModelSettings
from medmon.probes.jury import Jury, JuryOutcome, JurySettings

log = logging.getLogger("medmon.traffic.judging")

REFERENCE_JUDGEMENTS = 50
BATCH = 50
PENDING = "pending: being judged in memory"  # a receiver's claim (``memory_judging``)
LOST = "lost: the receiver stopped before judging"
LOST_AFTER = timedelta(minutes=15)


def sampled(span_id: str, rate: float) -> bool:
    """Whether a call is in the judged sample: a hash of its span id under ``rate`` (stable everywhere)."""
    digest = hashlib.sha256(span_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def _judges(plan: Plan) -> list[Any]:
    return [j for j in plan.jury.judges if j.phi_allowed] if plan.jury is not None else []


def _today(session: Session, now: datetime) -> int:
    start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return int(
        session.exec(
            select(func.count()).select_from(TrafficJudgement).where(col(TrafficJudgement.judged_at) >= start)
        ).one()
    )


def pick(session: Session, plan: Plan, now: datetime) -> list[TrafficSpan]:
    """The next sampled calls to judge (marking every call looked at, sampled or not)."""
    t = plan.traffic
    assert t is not None and t.judging is not None
    room = t.judging.daily_cap - _today(session, now)
    rows = list(
        session.exec(
            select(TrafficSpan)
            .where(
                col(TrafficSpan.judged).is_(False),
                col(TrafficSpan.has_content).is_(True),
                col(TrafficSpan.task_id).is_not(None),
                col(TrafficSpan.error_type).is_(None),
                col(TrafficSpan.completion).is_not(None),
            )
            .order_by(col(TrafficSpan.id))
            .limit(max(BATCH * 20, 1))
        ).all()
    )
    chosen: list[TrafficSpan] = []
    looked: list[int | None] = []
    for row in rows:
        if len(chosen) >= min(room, BATCH):
            break
        looked.append(row.id)
        if sampled(row.span_id, t.judging.sample_rate):
            chosen.append(row)
    if looked:
        session.execute(update(TrafficSpan).where(col(TrafficSpan.id).in_(looked)).values(judged=True))
    return chosen


async def _judge_all(
    settings: JurySettings, exchanges: Sequence[tuple[str, str | None, str | None]]
) -> list[JuryOutcome]:
    """Verdicts on ``(id, prompt, completion)`` exchanges, in order."""
    async with Jury(settings) as jury:
        return list(
            await asyncio.gather(
                *(
                    jury.judge(
                        canary_from_dict(
                            {
                                "id": f"traffic-{key}",
                                "messages": [{"role": "user", "content": prompt or ""}],
                                "scorer": "jury",
                            }
                        ),
                        completion or "",
                    )
                    for key, prompt, completion in exchanges
                )
            )
        )


def judge_exchanges(plan: Plan, exchanges: Sequence[tuple[str, str | None, str | None]]) -> list[JuryOutcome]:
    """The in-network judges' verdicts on redacted ``(id, prompt, completion)`` exchanges."""
    assert plan.jury is not None and plan.traffic is not None and plan.traffic.judging is not None
    settings = JurySettings(
        judges=tuple(ModelSettings.from_endpoint(j) for j in _judges(plan)),
        criteria=tuple(plan.traffic.judging.criteria),
        scale_min=plan.jury.scale_min,
        scale_max=plan.jury.scale_max,
    )
    return asyncio.run(_judge_all(settings, exchanges))


def record_verdict(row: TrafficJudgement, outcome: JuryOutcome) -> TrafficJudgement:
    """Scores only: the mean, the agreement and each judge's score per criterion (never the text)."""
    row.score, row.agreement, row.error = outcome.score, outcome.agreement, outcome.error
    row.scores = {v.judge: {s.criterion: s.score for s in v.scores} for v in outcome.verdicts}
    row.judge_cost_usd = sum(v.cost_usd or 0.0 for v in outcome.verdicts)
    return row


def judgement_specs(plan: Plan, task_id: str, ref: TrafficReference | None) -> list[StreamSpec[TrafficJudgement]]:
    """The judged-score stream (once its reference exists) and the agreement stream of a task."""
    specs: list[StreamSpec[TrafficJudgement]] = []
    judged = (ref.stats.get("judged") if ref is not None else None) or {}
    if judged.get("n", 0) >= REFERENCE_JUDGEMENTS:
        p, n = judged["score"], judged["n"]
        margin = max(plan.detection.min_margin, margin_z(plan) * math.sqrt(max(judged.get("var", 0.05), 0.01) / n))
        mu0 = min(max(p - margin, 0.01), 0.99)
        specs.append(
            StreamSpec(
                f"{task_id}:traffic_judged_score:drop",
                task_id,
                "traffic_judged_score",
                "drop",
                mu0,
                p,
                lambda j: j.score,
                "mixture_sr",
                {"mu0": mu0, "sigma2": max(judged.get("var", 0.05), 0.01)},
            )
        )
    floor = plan.task(task_id).thresholds.min_jury_agreement
    if floor is not None:
        a0 = min(max(floor, 0.01), 0.99)
        specs.append(
            StreamSpec(
                f"{task_id}:traffic_jury_agreement:drop",
                task_id,
                "traffic_jury_agreement",
                "drop",
                a0,
                a0,
                lambda j: j.agreement,
                "mixture_sr",
                {"mu0": a0, "sigma2": 0.02},
            )
        )
    return specs


def _reference(session: Session, task_id: str) -> None:
    """Fix the judged-score reference from the task's first judgements, once there are enough."""
    ref = session.get(TrafficReference, task_id)
    if ref is None or ref.stats.get("judged", {}).get("n", 0) >= REFERENCE_JUDGEMENTS:
        return
    scores = [
        s
        for s in session.exec(
            select(TrafficJudgement.score)
            .where(TrafficJudgement.task_id == task_id, col(TrafficJudgement.score).is_not(None))
            .order_by(col(TrafficJudgement.id))
            .limit(REFERENCE_JUDGEMENTS)
        ).all()
        if s is not None
    ]
    if len(scores) >= REFERENCE_JUDGEMENTS:
        mean = sum(scores) / len(scores)
        var = sum((x - mean) ** 2 for x in scores) / (len(scores) - 1)
        ref.stats = {**ref.stats, "judged": {"n": len(scores), "score": mean, "var": var}}
        session.add(ref)


def feed_streams(session: Session, plan: Plan, rows: Sequence[TrafficJudgement], now: datetime) -> None:
    """Feed verdicts to their tasks' judged-score and agreement streams; apply the alerts they raise."""
    signals: list[Signal] = []
    for task_id in sorted({r.task_id for r in rows}):
        mine = [r for r in rows if r.task_id == task_id]
        specs = judgement_specs(plan, task_id, session.get(TrafficReference, task_id))
        for spec in specs:
            update = update_stream(session, spec, traffic_threshold(plan, len(specs)), mine, now)
            signal = signal_of(plan, update)
            if update.finding is not None:
                session.add(finding_record(update, None, signal.summary if signal else update.summary, now))
            if signal is not None:
                signals.append(signal)
        _reference(session, task_id)
    if signals:
        apply_signals(session, signals, live_policy(plan), now)


def judge_traffic(engine: Engine, plan: Plan, now: datetime) -> list[TrafficJudgement]:
    """One judging pass: pick, judge, store the verdicts, update the streams and apply their alerts."""
    if plan.traffic is None or plan.traffic.judging is None or plan.jury is None or not plan.privacy.store_text:
        return []
    if not _judges(plan):
        log.warning("traffic.judging is set but no judge is marked phi_allowed: real answers are not judged")
        return []
    with session_scope(engine) as session:
        chosen = pick(session, plan, now)
    if not chosen:
        return []
    outcomes = judge_exchanges(plan, [(str(s.id), s.prompt, s.completion) for s in chosen])
    rows = []
    with session_scope(engine) as session:
        for span, outcome in zip(chosen, outcomes, strict=True):
            row = record_verdict(
                TrafficJudgement(span_id=span.id or 0, task_id=span.task_id or "", judged_at=now), outcome
            )
            session.add(row)
            rows.append(row)
        session.flush()
        feed_streams(session, plan, rows, now)
    return rows


def feed_verdicts(engine: Engine, plan: Plan, now: datetime) -> list[TrafficJudgement]:
    """The leader's part: feed verdicts judged in memory to the streams; claims left too long are lost."""
    with session_scope(engine) as s:
        rows = s.exec(
            select(TrafficJudgement)
            .where(col(TrafficJudgement.streamed).is_(False))
            .order_by(col(TrafficJudgement.id))
            .limit(BATCH * 10)
        ).all()
        ready = []
        for r in rows:
            if r.error == PENDING:
                if now - r.judged_at < LOST_AFTER:
                    continue
                r.error = LOST
            else:
                ready.append(r)
            r.streamed = True
            s.add(r)
        feed_streams(s, plan, ready, now)
    return ready


def judging_job(engine: Engine, plan: Plan, now: Callable[[], datetime]) -> None:
    """The scheduler's job (``traffic.judging.every``): a failure is logged, the calls are not retried.

    With ``privacy.store_text: false`` the receivers judge in memory; the job feeds their verdicts
    to the streams (``feed_verdicts``).
    """
    try:
        if not plan.privacy.store_text:
            done = feed_verdicts(engine, plan, now())
        else:
            done = judge_traffic(engine, plan, now())
    except Exception:
        log.exception("judging of real answers failed")
        return
    if done:
        log.info("judged %d real answer(s)", len(done))
