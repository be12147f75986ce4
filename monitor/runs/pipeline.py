"""One probe of one task, end to end: canaries -> model -> scores -> storage -> detectors -> alerts."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import Signal, apply_signals
from medmon.baselines import Baseline, Canary
from medmon.db import session_scope
from medmon.monitor.alerting.signals import model_change_signal, stream_signal, threshold_signals
from medmon.monitor.detection.identity import observe_identities
from medmon.monitor.detection.streams import (
    StreamUpdate,
    finding_record,
    go_live_replay,
    reset_task_streams,
    start_reevaluation,
    update_task_streams,
)
from medmon.monitor.governance.audit import seal_run
from medmon.monitor.governance.change_control import record_provenance_changes
from medmon.monitor.governance.changes import record_detected_change
from medmon.monitor.governance.current import live_policy
from medmon.monitor.governance.reevaluation import (
    auto_reevaluates,
    plan_change_due,
    reevaluate_pending,
    reevaluation_due,
)
from medmon.monitor.models import FindingRecord, ProbeSlot
from medmon.monitor.plan.context import TaskContext, probe_baseline, run_provenance
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.privacy import text_policy
from medmon.probes.client import ModelSettings
from medmon.probes.jury import JURY_SCORER, JurySettings
from medmon.probes.models import ProbeResultBase, ProbeRun
from medmon.probes.pool import ClientPool
from medmon.probes.reading.reader_model import ReaderSetup
from medmon.probes.runner import probe_canaries, sample_canaries
from medmon.probes.runs import execute_probe


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
    return (
        text
        if result.http_status is not None or result.error_type == "jury_unavailable"
        else f"{result.error_type}: {text}"[:160]
    )


def _reader(plan: Plan, pool: ClientPool, rng: random.Random) -> ReaderSetup | None:
    """The plan's reader model as a probe uses it, or None when the plan has none enabled.

    It is sent only what the plan's text policy lets a result store (redacted, and nothing
    at all under ``privacy.store_text: false``).
    """
    reader = plan.reader_model
    if reader is None or not reader.enabled:
        return None
    texts = text_policy(plan)
    return ReaderSetup(
        client=pool.client(ModelSettings.from_endpoint(reader), role="reader"),
        check_share=reader.check_share,
        redact=lambda text: texts.content(text, "reader prompt") or "",
        store_text=plan.privacy.store_text,
        rng=random.Random(rng.random()),
    )


def run_task_probe(
    engine: Engine,
    plan: Plan,
    ctx: TaskContext,
    *,
    rng: random.Random,
    now: Callable[[], datetime],
    settings: ModelSettings | None = None,
    purpose: str = "scheduled",
    on_start: Callable[[int], None] | None = None,
    slot_id: int | None = None,
) -> ProbeOutcome:
    """Probe a task once (:func:`medmon.probes.runs.execute_probe`) and act on what the detectors conclude.

    Results, detector states, findings and alert changes (with their outbox rows) are committed
    together with the run's completion. ``on_start`` receives the run id once the run is opened.
    ``slot_id`` names the scheduled slot being probed: it is linked to the run in the transaction
    that opens the run, so a crash can never leave a running run that its slot does not know
    about (and a retry of the slot could not mark interrupted).
    """
    task = ctx.task
    settings = settings or ModelSettings.from_endpoint(plan.deployment)
    texts = text_policy(plan)  # a redactor that cannot load fails here, before a run is opened
    outcome = ProbeOutcome(task.id, 0, 0, 0, None)
    chosen: list[Canary] = []
    baseline: Baseline | None = None

    def opened(session: Session, run: ProbeRun) -> None:
        nonlocal baseline
        baseline = probe_baseline(session, plan, ctx, now=now())
        slot = session.get(ProbeSlot, slot_id) if slot_id is not None else None
        if slot is not None:
            slot.run_id = run.id
            session.add(slot)
        replay = go_live_replay(session, plan, ctx, task.sample_size, rng)  # the go-live reference comes first
        chosen.extend(replay if replay is not None else sample_canaries(ctx.canaries, task.sample_size, rng))

    async def call(pool: ClientPool) -> Sequence[ProbeResultBase]:
        # The judges are asked only for a jury-scored task; without a plan jury, probe_canaries
        # raises JuryNotConfigured before any call (``medmon check`` reports it earlier).
        jury = (
            pool.jury(JurySettings.from_plan(plan.jury))
            if plan.jury is not None and ctx.scorer == JURY_SCORER
            else None
        )
        decoding = task.decoding.overrides() if task.decoding is not None else None
        reader = _reader(plan, pool, rng)
        return await probe_canaries(
            pool.client(settings), chosen, task.id, ctx.scorer, jury=jury, decoding=decoding, reader=reader
        )

    def store(session: Session, run: ProbeRun, results: list[ProbeResultBase], stamp: datetime) -> bool:
        # Stored copies are redacted (or text-free); detectors below still see every score. Says
        # whether a plan edit owes this task a re-evaluation.
        assert baseline is not None and run.id is not None
        run_id = run.id
        outcome.mean_score = run.mean_score
        report = observe_identities(session, plan.deployment, task.id, results, run_id, stamp)
        change = (report.change.old, report.change.new) if report.change is not None else None
        if report.new_fingerprints:
            session.add(
                FindingRecord(
                    task_id=task.id,
                    metric="system_fingerprint",
                    kind="fingerprint",
                    run_id=run_id,
                    summary=f"new system fingerprint(s) {', '.join(report.new_fingerprints)} "
                    "(recorded; the plan does not treat fingerprints as a change)",
                    evidence={"fingerprints": list(report.new_fingerprints)},
                    created_at=stamp,
                )
            )
        if change is not None and report.change is not None:
            signal = model_change_signal(plan, ctx, *change)
            session.add(
                FindingRecord(
                    task_id=task.id,
                    metric="served_model",
                    kind="model_change",
                    run_id=run_id,
                    summary=signal.summary,
                    evidence=signal.evidence,
                    created_at=stamp,
                )
            )
            reset_task_streams(session, task.id, stamp)
            start_reevaluation(session, plan, ctx, baseline, stamp, reason=signal.summary)  # one-shot paired test
            record_detected_change(
                session, task.id, *change, run_id, stamp, how=report.change.how
            )  # owes a re-evaluation
            outcome.signals.append(signal)
        for update in update_task_streams(session, plan, ctx, baseline, results, stamp):
            outcome.updates.append(update)
            raised = stream_signal(plan, ctx, update) if update.alert else None
            if update.finding is not None:
                session.add(finding_record(update, run_id, raised.summary if raised else update.summary, stamp))
            if raised is not None:
                outcome.signals.append(raised)
        outcome.signals.extend(threshold_signals(session, plan, ctx))
        apply_signals(session, outcome.signals, live_policy(plan), stamp)
        record_provenance_changes(
            session, run, "medmon (run provenance)", stamp, plan
        )  # in-place edits the plan cannot show
        seal_run(session, run, stamp)  # the results enter the audit chain
        return plan_change_due(session, plan, task.id)

    done = execute_probe(
        engine,
        task.id,
        call,
        now=now,
        texts=texts,
        purpose=purpose,
        deployment=plan.deployment.name,
        provenance=run_provenance(plan, ctx),
        opened=opened,
        on_start=on_start,
        store=store,
    )
    failed = [r for r in done.results if r.error_type]
    outcome.run_id, outcome.results, outcome.errors = done.run_id, len(done.results), len(failed)
    outcome.causes = dict(Counter(failure_cause(r) for r in failed).most_common())
    outcome.refused, outcome.superseded = sum(1 for r in failed if r.error_type == "refused"), done.superseded
    if done.superseded:
        return outcome
    due = bool(done.stored)
    if auto_reevaluates(plan) and not due:
        with session_scope(engine) as session:
            due = reevaluation_due(session, plan, task.id, now())
    if due:  # a plan change the policy re-evaluates, or detected changes with none in flight and the cool-down over
        reevaluation = reevaluate_pending(engine, plan, ctx, now=now, settings=settings)
        outcome.reevaluation_id = reevaluation.id if reevaluation is not None else None
    return outcome
