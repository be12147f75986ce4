"""One probe of one task, end to end: canaries -> model -> scores -> storage -> detectors -> alerts."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from alerts import Signal, apply_signal
from monitor.context import TaskContext, task_baseline
from monitor.detection import StreamUpdate, detector_threshold, reset_task_streams, task_streams, update_stream
from monitor.models import FindingRecord, ModelIdentity
from monitor.plan import Plan
from monitor.signals import model_change_signal, stream_signal
from monitor.storage import session_scope
from probes.client import ModelClient, ModelSettings
from probes.models import ProbeResultBase, ProbeRun
from probes.runner import finish_run, probe_canaries, sample_canaries, start_run


@dataclass
class ProbeOutcome:
    task_id: str
    run_id: int
    results: int
    errors: int
    mean_score: float | None
    updates: list[StreamUpdate] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)


def route_names(plan: Plan) -> list[str]:
    return [r.name for r in plan.alerts.routes]


def _model_change(session: Session, task_id: str, results: list[ProbeResultBase], run_id: int,
                  now: datetime) -> tuple[tuple[str, str | None], tuple[str, str | None]] | None:
    served = [(r.served_model, r.system_fingerprint) for r in results if r.served_model]
    if not served:
        return None
    current = served[-1]
    last = session.exec(select(ModelIdentity).where(ModelIdentity.task_id == task_id)
                        .order_by(col(ModelIdentity.id).desc())).first()
    if last is not None and (last.served_model, last.system_fingerprint) == current:
        return None
    session.add(ModelIdentity(task_id=task_id, served_model=current[0], system_fingerprint=current[1],
                              first_seen=now, run_id=run_id))
    if last is None:
        return None
    return (last.served_model, last.system_fingerprint), (current[0], current[1])  # type: ignore[return-value]


def run_task_probe(engine: Engine, plan: Plan, ctx: TaskContext, *, rng: random.Random,
                   now: Callable[[], datetime], settings: ModelSettings | None = None,
                   purpose: str = "scheduled") -> ProbeOutcome:
    """Probe a task once and act on what the detectors conclude.

    The run row is committed before the model is called, so a crash leaves a 'running' run that
    the service marks interrupted; results, detector states, findings and alert changes (with
    their outbox rows) are then committed together.
    """
    task = ctx.task
    settings = settings or ModelSettings.from_endpoint(plan.deployment)
    with session_scope(engine) as session:
        baseline = task_baseline(session, plan, ctx)
        run = start_run(session, task.id, started_at=now(), purpose=purpose, deployment=plan.deployment.name)
        run_id = run.id
        specs = task_streams(plan, task, baseline)
    assert run_id is not None
    chosen = sample_canaries(ctx.canaries, task.sample_size, rng)

    async def call() -> list[ProbeResultBase]:
        async with ModelClient(settings) as client:
            return await probe_canaries(client, chosen, task.id, ctx.scorer)

    results = asyncio.run(call())
    threshold = detector_threshold(plan)
    outcome = ProbeOutcome(task.id, run_id, len(results), sum(1 for r in results if r.error_type), None)
    with session_scope(engine) as session:
        run = session.get(ProbeRun, run_id)
        assert run is not None
        stamp = now()
        finish_run(session, run, results, stamp)
        outcome.mean_score = run.mean_score
        change = _model_change(session, task.id, results, run_id, stamp)
        if change is not None:
            signal = model_change_signal(plan, ctx, *change)
            session.add(FindingRecord(task_id=task.id, metric="served_model", kind="model_change", run_id=run_id,
                                      summary=signal.summary, evidence=signal.evidence, created_at=stamp))
            reset_task_streams(session, task.id, stamp)
            outcome.signals.append(signal)
        for spec in specs:
            update = update_stream(session, spec, threshold, results, stamp)
            outcome.updates.append(update)
            signal = stream_signal(plan, ctx, update)
            if update.finding is not None:
                f = update.finding
                session.add(FindingRecord(task_id=task.id, metric=spec.metric, kind="drift", direction=spec.direction,
                                          statistic=f.statistic, threshold=f.threshold, estimate=f.estimate,
                                          ci_low=f.ci_low, ci_high=f.ci_high, n=f.n, null_mean=f.null_mean,
                                          run_id=run_id, summary=signal.summary if signal else "",
                                          evidence={"change_point": f.change_point}, created_at=stamp))
            if signal is not None:
                outcome.signals.append(signal)
        for signal in outcome.signals:
            apply_signal(session, signal, route_names(plan), stamp)
    return outcome
