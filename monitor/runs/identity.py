"""The identity job: sample the identity canaries, test the answers, and treat a difference as a model change.

Each run is stored as a probe run of the pseudo-task ``served_identity`` (purpose
``identity``), every canary asked one after another: with ``identity.method: logprobs`` once at
temperature 0 with ``top_logprobs`` (the fingerprint is kept in the result's ``tags``, tokens as
digests), with ``answers`` ``identity.samples`` times at ``identity.temperature``, each call with
a fresh random ``seed``. The answers feed the deployment's identity stream
(``medmon.monitor.detection.served``). When it alarms, every task of the plan gets what a changed
``model`` string gets in
``medmon.monitor.runs.pipeline``: a ``model_change`` finding and alert (the same rule, so the
same incident), its streams reset, the one-shot re-evaluation test started, and a detected
change of kind ``model`` recorded, owed a re-evaluation; with ``on_detected_change`` the
re-evaluation runs at once.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.engine import Engine
from sqlmodel import Session

from medmon.alerts import Signal, apply_signals
from medmon.baselines import Canary
from medmon.db import session_scope
from medmon.monitor.alerting.signals import model_change_signal
from medmon.monitor.detection.served import IDENTITY, served_model_of, update_identity
from medmon.monitor.detection.streams import StreamUpdate, reset_task_streams, start_reevaluation
from medmon.monitor.governance.changes import ChangeKind, ChangeSource, record_change
from medmon.monitor.governance.current import live_policy
from medmon.monitor.governance.reevaluation import auto_reevaluates, reevaluate_pending, reevaluation_due
from medmon.monitor.models import FindingRecord
from medmon.monitor.plan.context import load_context, probe_baseline
from medmon.monitor.plan.identity import IdentityCheck
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.privacy import text_policy
from medmon.probes.client import ModelSettings
from medmon.probes.models import ProbeResultBase, ProbeRun
from medmon.probes.packs import bundled_dir, load_pack
from medmon.probes.pool import ClientPool
from medmon.probes.runner import probe_canary
from medmon.probes.runs import execute_probe
from medmon.probes.scoring import Score

log = logging.getLogger("medmon.identity")

IDENTITY_PACKS = "identity"  # the bundled identity packs' folder, under probes/packs/


@dataclass
class IdentityOutcome:
    """One identity run: its answers, the stream's update, and what a detected change set off."""

    run_id: int
    answers: int
    errors: int
    served_model: str = ""
    missing_logprobs: int = 0  # answers that came back without the log-probabilities the method needs
    update: StreamUpdate | None = None
    changed: bool = False
    signals: list[Signal] = field(default_factory=list)
    reevaluations: dict[str, int] = field(default_factory=dict)  # task id -> re-evaluation id


def identity_canaries(check: IdentityCheck) -> list[Canary]:
    """The identity canaries: the plan's file, else the bundled pack ``check.pack``."""
    if check.path is not None:
        from medmon.baselines import read_canaries

        return list(read_canaries(Path(check.path), pack=IDENTITY, benchmark=""))
    return list(load_pack(check.pack, bundled_dir() / IDENTITY_PACKS).canaries)


def _unscored(_canary: Canary, _text: str) -> Score:
    """Identity answers are compared with each other, never scored."""
    return Score(None, reason="identity canary: compared, not scored")


def _change_signals(
    session: Session, plan: Plan, update: StreamUpdate, served: str, run_id: int, stamp: datetime
) -> list[Signal]:
    """What a changed ``model`` string sets off, for every task: finding, reset, one-shot test, change record."""
    assert update.finding is not None
    evidence = update.finding.evidence()
    words = update.spec.what
    signals: list[Signal] = []
    session.add(
        FindingRecord(
            task_id=IDENTITY,
            metric=IDENTITY,
            kind="model_change",
            direction=update.finding.direction,
            statistic=update.finding.statistic,
            threshold=update.finding.threshold,
            estimate=update.finding.estimate,
            ci_low=update.finding.ci_low,
            ci_high=update.finding.ci_high,
            n=update.finding.n,
            null_mean=update.finding.null_mean,
            run_id=run_id,
            summary=f"{served}: {words}",
            evidence=evidence,
            created_at=stamp,
        )
    )
    for task in plan.tasks:
        ctx = load_context(plan, task)
        baseline = probe_baseline(session, plan, ctx, now=stamp)
        signal = model_change_signal(plan, ctx, (served, None), (served, None))
        summary = f"{task.id}: {words} ({served}; identity test e-value {update.finding.statistic:.0f})"
        signal = replace(
            signal, summary=summary, evidence={**signal.evidence, "identity": evidence, "identity_run": run_id}
        )
        session.add(
            FindingRecord(
                task_id=task.id,
                metric="served_model",
                kind="model_change",
                run_id=run_id,
                summary=summary,
                evidence=signal.evidence,
                created_at=stamp,
            )
        )
        reset_task_streams(session, task.id, stamp)
        start_reevaluation(session, plan, ctx, baseline, stamp, reason=summary)
        record_change(
            session,
            task_ids=[task.id],
            kind=ChangeKind.model,
            source=ChangeSource.detected,
            actor="medmon",
            note=f"served model {served}: other weights answer under the same name (identity test)",
            now=stamp,
            details={"served_model": served, "identity_run": run_id, "how": "answers", "identity": evidence},
        )
        signals.append(signal)
    return signals


def run_identity_probe(
    engine: Engine, plan: Plan, *, now: Callable[[], datetime], settings: ModelSettings | None = None
) -> IdentityOutcome:
    """Sample the identity canaries once, test the answers, and act on a detected change of weights."""
    check = plan.identity or IdentityCheck()
    canaries = identity_canaries(check)
    settings = settings or ModelSettings.from_endpoint(plan.deployment)
    decoding = check.decoding()
    seeds = random.SystemRandom()  # answers: independent draws, whatever seed the server would start from

    def asked(_: int) -> dict[str, object]:
        return decoding if check.method == "logprobs" else {**decoding, "seed": seeds.randrange(2**31)}

    async def call(pool: ClientPool) -> Sequence[ProbeResultBase]:
        client = pool.client(settings)
        return [
            await probe_canary(client, c, IDENTITY, "identity", scorer=_unscored, decoding=asked(i))
            for c in canaries
            for i in range(check.calls)
        ]

    def store(session: Session, run: ProbeRun, results: list[ProbeResultBase], stamp: datetime) -> IdentityOutcome:
        assert run.id is not None
        served = served_model_of(results)
        outcome = IdentityOutcome(run.id, len(results), sum(1 for r in results if r.error_type), served)
        if check.method == "logprobs":
            outcome.missing_logprobs = sum(
                1 for r in results if not r.error_type and not (r.tags or {}).get("logprobs")
            )
        outcome.update = update_identity(session, plan, results, stamp)
        if outcome.update.finding is not None:
            outcome.changed = True
            outcome.signals = _change_signals(session, plan, outcome.update, served, run.id, stamp)
        apply_signals(session, outcome.signals, live_policy(plan), stamp)
        return outcome

    done = execute_probe(
        engine,
        IDENTITY,
        call,
        now=now,
        texts=text_policy(plan),
        purpose="identity",
        deployment=plan.deployment.name,
        store=store,
    )
    outcome = done.stored or IdentityOutcome(done.run_id, len(done.results), len(done.results))
    if outcome.changed and auto_reevaluates(plan):
        for task in plan.tasks:
            with session_scope(engine) as session:
                due = reevaluation_due(session, plan, task.id, now())
            if due:
                reevaluation = reevaluate_pending(engine, plan, load_context(plan, task), now=now, settings=settings)
                if reevaluation is not None and reevaluation.id is not None:
                    outcome.reevaluations[task.id] = reevaluation.id
    if outcome.missing_logprobs:
        log.error(
            "identity run %d: %d answers came back without log-probabilities; identity.method logprobs needs a "
            "server that returns them (else set identity.method: answers)",
            outcome.run_id,
            outcome.missing_logprobs,
        )
    log.info(
        "identity run %d: %d answers (%d failed) from %s; evidence %.2f%s",
        outcome.run_id,
        outcome.answers,
        outcome.errors,
        outcome.served_model or "no model",
        outcome.update.evidence if outcome.update is not None else 0.0,
        "; other weights answer: model change recorded" if outcome.changed else "",
    )
    return outcome


IDENTITY_JOB_ID = "served-identity"


def identity_job(engine: Engine, plan: Plan, now: Callable[[], datetime]) -> None:
    """One scheduled identity run; a failure is logged with its traceback and the next run tries again."""
    try:
        run_identity_probe(engine, plan, now=now)
    except Exception:
        log.exception("identity run failed; the next scheduled run tries again")


def add_identity_job(
    scheduler: BaseScheduler,
    engine: Engine,
    plan: Plan,
    now: Callable[[], datetime],
    *,
    time_scale: float = 1.0,
    anchor: datetime | None = None,
    **job_options: Any,
) -> bool:
    """Schedule the identity job every ``identity.schedule`` when the plan has an ``identity`` section.

    Opt-in: without the section nothing asks the identity canaries (a plan's judges and tasks are
    not billed for calls it did not ask for). The first run is at once, so the go-live sample
    (``identity.go_live_runs`` runs) forms from the service's start; on an accelerated clock the
    schedule runs ``time_scale`` times faster, like the probe jobs.
    """
    if plan.identity is None:
        return False
    every_s = max(parse_interval(plan.identity.schedule).total_seconds() / time_scale, 0.5)
    scheduler.add_job(
        identity_job,
        IntervalTrigger(seconds=every_s, start_date=anchor, timezone=UTC),
        args=[engine, plan, now],
        id=IDENTITY_JOB_ID,
        name="served-model identity",
        misfire_grace_time=max(60, round(every_s / 4)),
        next_run_time=datetime.now(UTC),
        **job_options,
    )
    return True
