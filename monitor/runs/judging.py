"""The judge-canary job: re-judge fixed (answer, gold score) pairs and watch each judge's agreement.

Each run is stored as a probe run of the pseudo-task ``judge_canaries`` (purpose
``judge_canaries``): one result per pair holding the jury's verdict, and one ``JudgeCall`` per
judge in the judges' own cost ledger. Each judge's ``(judge mean, gold)`` pairs then feed that
judge's stream (``judge:<name>``, metric ``judge_canaries``); an alarm there is judge drift, and
goes through the same alert path as a probe's findings, addressed to the technical owner who
runs the judges.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import Signal, apply_signals
from medmon.monitor.alerting.signals import monitor_subject, update_signal
from medmon.monitor.detection.drift.judge import judge_agreement
from medmon.monitor.detection.streams import StreamUpdate, finding_record, update_judge_canaries
from medmon.monitor.governance.audit import seal_run
from medmon.monitor.governance.current import live_policy
from medmon.monitor.plan.model import Plan, parse_interval
from medmon.monitor.plan.privacy import text_policy
from medmon.probes.judge_canaries import JUDGE_CANARIES, Rejudged, load_judge_canaries, rejudge
from medmon.probes.jury import JURY_SCORER, JurySettings
from medmon.probes.models import ProbeRecord, ProbeResultBase, ProbeRun
from medmon.probes.pool import ClientPool
from medmon.probes.runs import execute_probe

log = logging.getLogger("medmon.judging")

JOB_ID = "judge-canaries"


def judging_trigger(
    schedule: str, *, time_scale: float = 1.0, start_date: datetime | None = None
) -> IntervalTrigger | CronTrigger:
    """The trigger for ``jury.canary_schedule``: an interval (sped up by ``time_scale``) or a UTC cron line."""
    try:
        interval = parse_interval(schedule)
    except ValueError:  # the plan accepted it, so it is a cron line
        return CronTrigger.from_crontab(schedule, timezone=UTC)
    seconds = max(interval.total_seconds() / time_scale, 0.05)
    return IntervalTrigger(seconds=seconds, start_date=start_date, timezone=UTC)


@dataclass
class JudgingOutcome:
    """What one judge-canary run found: the run, each judge's stream update and the signals."""

    run_id: int
    canaries: int
    agreement: dict[str, float | None] = field(default_factory=dict)  # per judge, this run's mean
    updates: dict[str, StreamUpdate] = field(default_factory=dict)  # per judge: agreement with gold
    bias: dict[str, StreamUpdate] = field(default_factory=dict)  # per judge: signed error vs its go-live level
    signals: list[Signal] = field(default_factory=list)


def judge_signal(plan: Plan, update: StreamUpdate) -> Signal | None:
    """A firing signal when a judge's stream alarms, a clearing one when it recovers, else None."""
    return update_signal(replace(monitor_subject(plan), task=update.spec.task_id), update)


def _record(item: Rejudged) -> ProbeRecord:
    o = item.outcome
    return ProbeRecord(
        task_id=JUDGE_CANARIES,
        canary_id=item.canary.id,
        pack=JUDGE_CANARIES,
        scorer=JURY_SCORER,
        score=o.score,
        answer=item.canary.answer,
        jury_mean=o.mean,
        jury_judges=o.judges_answered,
        jury_agreement=o.agreement,
        jury_unanimous=o.unanimous,
        error_type="jury" if o.error else None,
        error=o.error,
        tags={**item.canary.tags, "gold_score": str(item.gold)},
        jury=o,
    )


def _agreement(pairs: Sequence[tuple[float, float]], lo: int, hi: int) -> float | None:
    """This run's mean agreement, for the outcome and the log (the detector keeps its own)."""
    return sum(judge_agreement(j, g, lo, hi) for j, g in pairs) / len(pairs) if pairs else None


def run_judge_canaries(
    engine: Engine, plan: Plan, *, now: Callable[[], datetime], settings: JurySettings | None = None
) -> JudgingOutcome:
    """Re-judge every judge canary with every judge, store the verdicts and act on each judge's stream.

    ``settings`` default to the plan's jury (keys from the environment); the canaries are the
    plan's ``jury.canary_path``, else the bundled set. A judge with no valid verdict in a run
    feeds nothing (its failures are in the ledger and the judge-call error counts).
    """
    if plan.jury is None:
        raise ValueError("judge canaries need a jury in the plan")
    jury_plan = plan.jury
    settings = settings or JurySettings.from_plan(jury_plan)
    pairs_of = load_judge_canaries(jury_plan.canary_path, scale=(jury_plan.scale_min, jury_plan.scale_max))
    rejudged: list[Rejudged] = []

    async def call(pool: ClientPool) -> list[ProbeRecord]:
        rejudged.extend(await rejudge(pool.jury(settings), pairs_of))
        return [_record(r) for r in rejudged]

    def store(session: Session, run: ProbeRun, _records: list[ProbeResultBase], stamp: datetime) -> JudgingOutcome:
        assert run.id is not None
        seal_run(session, run, stamp)  # the results enter the audit chain
        outcome = JudgingOutcome(run.id, len(rejudged))
        for judge in settings.judges:
            pairs = [p for r in rejudged if (p := r.pairs().get(judge.name)) is not None]
            outcome.agreement[judge.name] = _agreement(pairs, jury_plan.scale_min, jury_plan.scale_max)
            if not pairs:
                continue
            agreement, bias = update_judge_canaries(session, plan, judge.name, pairs, stamp, canaries=len(pairs_of))
            outcome.updates[judge.name], outcome.bias[judge.name] = agreement, bias
            for update in (agreement, bias):
                signal = judge_signal(plan, update)
                if update.finding is not None:
                    session.add(finding_record(update, run.id, signal.summary if signal else update.summary, stamp))
                if signal is not None:
                    outcome.signals.append(signal)
        apply_signals(session, outcome.signals, live_policy(plan), stamp)
        return outcome

    done = execute_probe(
        engine,
        JUDGE_CANARIES,
        call,
        now=now,
        texts=text_policy(plan),
        purpose=JUDGE_CANARIES,
        deployment=plan.deployment.name,
        store=store,
    )
    outcome = done.stored or JudgingOutcome(done.run_id, len(rejudged))  # superseded: nothing stored
    log.info(
        "judge canaries re-judged (%d pairs): agreement %s",
        len(rejudged),
        ", ".join(f"{j} {a:.3f}" if a is not None else f"{j} none" for j, a in outcome.agreement.items()),
    )
    return outcome


def judging_job(
    engine: Engine,
    plan: Plan,
    now: Callable[[], datetime],
    settings: JurySettings | None = None,
    on_outcome: Callable[[JudgingOutcome], None] | None = None,
) -> None:
    """The scheduler's judge-canary job: a failure is stored on the run (``execute_probe``) and logged, never raised."""
    try:
        outcome = run_judge_canaries(engine, plan, now=now, settings=settings)
    except Exception:  # the run, if one was opened, is already failed with its error
        log.exception("judge-canary run failed")
        return
    if on_outcome is not None:
        on_outcome(outcome)


def add_judging_job(
    scheduler: BaseScheduler,
    engine: Engine,
    plan: Plan,
    now: Callable[[], datetime],
    *,
    time_scale: float = 1.0,
    anchor: datetime | None = None,
    **job_options: Any,
) -> bool:
    """Add the judge-canary job when the plan has a jury with a ``canary_schedule``; say whether it did.

    ``anchor`` (the service's ``GRID_EPOCH``) puts an interval on the same grid as the probe jobs
    whenever the process started. ``job_options`` go to ``add_job`` (the service puts the job in
    its in-memory store, since it carries the engine and plan and cannot be pickled).
    """
    if plan.jury is None or plan.jury.canary_schedule is None:
        return False
    trigger = judging_trigger(plan.jury.canary_schedule, time_scale=time_scale, start_date=anchor)
    grace = max(1, round(trigger.interval.total_seconds())) if isinstance(trigger, IntervalTrigger) else 300
    scheduler.add_job(
        judging_job,
        trigger,
        args=[engine, plan, now],
        id=JOB_ID,
        name="judge canaries",
        misfire_grace_time=grace,
        **job_options,
    )
    return True
