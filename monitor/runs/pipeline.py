"""One probe of one task, end to end: canaries -> model -> scores -> storage -> detectors -> alerts."""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from medmon.alerts import Signal, apply_signals
from medmon.monitor.alerting.signals import (
    model_change_signal,
    stream_signal,
    threshold_signals,
)
from medmon.monitor.detection.identity import observe_identities
from medmon.monitor.detection.streams import (
    StreamUpdate,
    finding_record,
    go_live_replay,
    reset_task_streams,
    start_reevaluation,
    update_task_streams,
)
from medmon.monitor.governance.changes import record_detected_change
from medmon.monitor.governance.reevaluation import (auto_reevaluates, plan_change_due, reevaluate_pending,
                                                    reevaluation_due)
from medmon.monitor.models import FindingRecord, ProbeSlot
from medmon.monitor.plan.context import TaskContext, run_provenance, task_baseline
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.privacy import text_policy
from medmon.monitor.plan.routing import notify_policy
from medmon.probes.client import ModelSettings
from medmon.probes.jury import JURY_SCORER, JurySettings
from medmon.probes.models import ProbeResultBase, ProbeRun, RunStatus
from medmon.probes.pool import shared_pool
from medmon.probes.runner import failing_run, finish_run, probe_canaries, sample_canaries, start_run
from sqlalchemy.engine import Engine
from sqlmodel import select

from medmon.db import session_scope

log = logging.getLogger("medmon.pipeline")


@dataclass
class ProbeOutcome:
    task_id: str
    run_id: int
    results: int
    errors: int
    mean_score: float | None
    updates: list[StreamUpdate] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    reevaluation_id: int | None = None  # the re-evaluation a detected model change set off
    superseded: bool = False  # the run was marked interrupted while probing: results discarded
    causes: dict[str, int] = field(default_factory=dict)  # why calls failed, grouped: {"HTTP 401 ...": 20}
    refused: int = 0  # calls the endpoint answered with a refusal (bad key, unknown model, bad parameter)


def failure_cause(result: ProbeResultBase) -> str:
    """One line that groups failed results by what really happened.

    Examples
    --------
    >>> failure_cause(ProbeResultBase(task_id="t", canary_id="c", error_type="refused",
    ...                               error="HTTP 401 Incorrect API key provided: ***", http_status=401))
    'HTTP 401 Incorrect API key provided: ***'
    >>> failure_cause(ProbeResultBase(task_id="t", canary_id="c", error_type="circuit_open", error="circuit open ..."))
    'circuit open: not attempted'
    """
    if result.error_type == "circuit_open":
        return "circuit open: not attempted"
    text = (result.error or result.error_type or "error").split("; not retried", 1)[0]
    return text if result.http_status is not None or result.error_type == "jury_unavailable" else \
        f"{result.error_type}: {text}"[:160]


def route_names(plan: Plan) -> list[str]:
    return [r.name for r in plan.alerts.routes]


def run_task_probe(engine: Engine, plan: Plan, ctx: TaskContext, *, rng: random.Random,
                   now: Callable[[], datetime], settings: ModelSettings | None = None,
                   purpose: str = "scheduled", on_start: Callable[[int], None] | None = None,
                   slot_id: int | None = None) -> ProbeOutcome:
    """Probe a task once and act on what the detectors conclude.

    The run row is committed before the model is called, so a crash leaves a 'running' run that
    the service marks interrupted; results, detector states, findings and alert changes (with
    their outbox rows) are then committed together. ``on_start`` receives the run id once that
    first row is committed. ``slot_id`` names the scheduled slot being probed: it is linked to
    the run in the transaction that opens the run, so a crash can never leave a running run that
    its slot does not know about (and a retry of the slot could not mark interrupted).
    """
    task = ctx.task
    settings = settings or ModelSettings.from_endpoint(plan.deployment)
    texts = text_policy(plan)  # a redactor that cannot load fails here, before a run is opened
    with session_scope(engine) as session:
        baseline = task_baseline(session, plan, ctx, now=now())
        run = start_run(session, task.id, started_at=now(), purpose=purpose, deployment=plan.deployment.name,
                        provenance=run_provenance(plan, ctx))
        run_id = run.id
        slot = session.get(ProbeSlot, slot_id) if slot_id is not None else None
        if slot is not None:
            slot.run_id = run_id
            session.add(slot)
        replay = go_live_replay(session, plan, ctx, task.sample_size)  # the go-live reference comes first
    assert run_id is not None
    if on_start is not None:
        on_start(run_id)
    chosen = replay if replay is not None else sample_canaries(ctx.canaries, task.sample_size, rng)

    pool = shared_pool()

    async def call() -> list[ProbeResultBase]:
        # The judges are asked only for a jury-scored task; without a plan jury, probe_canaries
        # raises JuryNotConfigured before any call (``medmon check`` reports it earlier). The
        # clients are the process's long-lived ones (``medmon.probes.pool``).
        jury = (pool.jury(JurySettings.from_plan(plan.jury))
                if plan.jury is not None and ctx.scorer == JURY_SCORER else None)
        decoding = task.decoding.overrides() if task.decoding is not None else None
        return list(await probe_canaries(pool.client(settings), chosen, task.id, ctx.scorer, jury=jury,
                                         decoding=decoding))

    with failing_run(engine, run_id, texts, now):
        results = pool.run(call)
    failed = [r for r in results if r.error_type]
    outcome = ProbeOutcome(task.id, run_id, len(results), len(failed), None,
                           causes=dict(Counter(failure_cause(r) for r in failed).most_common()),
                           refused=sum(1 for r in failed if r.error_type == "refused"))
    with failing_run(engine, run_id, texts, now), session_scope(engine) as session:
        run = session.exec(select(ProbeRun).where(ProbeRun.id == run_id).with_for_update()).one()
        if run.status != RunStatus.running:
            # Its slot was taken over (a redelivered message, a retry after this process was
            # presumed dead) or the service gave up on it: the taker's run is the one that counts.
            log.warning("run %d of %s was marked %s while probing; its %d results are discarded", run_id, task.id,
                        run.status.value, len(results))
            outcome.superseded = True
            return outcome
        stamp = now()
        # Stored copies are redacted (or text-free); detectors below still see every score.
        finish_run(session, run, results, stamp, policy=texts)
        outcome.mean_score = run.mean_score
        report = observe_identities(session, plan.deployment, task.id, results, run_id, stamp)
        change = (report.change.old, report.change.new) if report.change is not None else None
        if report.new_fingerprints:
            session.add(FindingRecord(task_id=task.id, metric="system_fingerprint", kind="fingerprint", run_id=run_id,
                                      summary=f"new system fingerprint(s) {', '.join(report.new_fingerprints)} "
                                              "(recorded; the plan does not treat fingerprints as a change)",
                                      evidence={"fingerprints": list(report.new_fingerprints)}, created_at=stamp))
        if change is not None and report.change is not None:
            signal = model_change_signal(plan, ctx, *change)
            session.add(FindingRecord(task_id=task.id, metric="served_model", kind="model_change", run_id=run_id,
                                      summary=signal.summary, evidence=signal.evidence, created_at=stamp))
            reset_task_streams(session, task.id, stamp)
            start_reevaluation(session, plan, ctx, baseline, stamp, reason=signal.summary)  # one-shot paired test
            record_detected_change(session, task.id, *change, run_id, stamp, how=report.change.how)  # owes a re-evaluation
            outcome.signals.append(signal)
        for update in update_task_streams(session, plan, ctx, baseline, results, stamp):
            outcome.updates.append(update)
            signal = stream_signal(plan, ctx, update) if update.alert else None
            if update.finding is not None:
                session.add(finding_record(update, run_id, signal.summary if signal else update.summary, stamp))
            if signal is not None:
                outcome.signals.append(signal)
        outcome.signals.extend(threshold_signals(session, plan, ctx))
        apply_signals(session, outcome.signals, notify_policy(plan), stamp)
        planned = plan_change_due(session, plan, task.id)
    due = planned
    if auto_reevaluates(plan) and not due:
        with session_scope(engine) as session:
            due = reevaluation_due(session, plan, task.id, now())
    if due:  # a plan change the policy re-evaluates, or detected changes with none in flight and the cool-down over
        done = reevaluate_pending(engine, plan, ctx, now=now, settings=settings)
        outcome.reevaluation_id = done.id if done is not None else None
    return outcome
