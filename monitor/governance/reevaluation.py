"""Re-evaluation after a change: the full canary set, compared with the baseline task by task.

A change of model, fingerprint, prompt, workflow or judge means the pre-deployment evidence no
longer describes what is deployed. The scheduled probes' detectors will notice a large drop
eventually; a re-evaluation answers at once, on every replayable canary (``repeats`` times),
as a run with ``purpose="reevaluation"`` that never feeds the drift detectors. The comparison
gives the estimate with its 95% interval, the baseline, the difference, and pass or fail
against the task's approval minimum (``min_score``) and tolerated drop. ``conclusive`` says
whether the whole interval lies on the same side of both criteria; when it does not, more
repeats are needed before the decision rests on the data rather than on the point estimate.

Adopting the results as the task's baseline is a person's decision: :func:`approve`
refuses anyone but the task's owner or the use case's clinical owner and an approval without a
rationale; an estimate below the approval minimum also needs the committee's decision.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from medmon.baselines import Baseline, BaselineFigures, record_baseline
from medmon.baselines.interval import mean_interval, wilson_interval
from medmon.db import session_scope
from medmon.monitor.errors import GovernanceError
from medmon.monitor.governance.approvals import plan_task, require_approver, require_committee
from medmon.monitor.governance.audit import AuditKind, record, seal_run
from medmon.monitor.governance.changes import ChangeSource, pending_changes
from medmon.monitor.governance.effective import effective_task
from medmon.monitor.governance.identity import require_proof
from medmon.monitor.models import BurnIn, ChangeRecord, ChangeStatus, Reevaluation, ReevaluationStatus
from medmon.monitor.plan.context import TaskContext, pin_baseline, probe_baseline, run_provenance
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan
from medmon.monitor.plan.privacy import text_policy
from medmon.probes.client import ModelSettings
from medmon.probes.jury import JURY_SCORER, JurySettings
from medmon.probes.models import ProbeResultBase, ProbeRun, RunStatus
from medmon.probes.pool import ClientPool
from medmon.probes.runner import probe_canaries
from medmon.probes.runs import execute_probe

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Comparison:
    """A re-evaluation (or any sample of scores) against a task's baseline and thresholds."""

    n: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    baseline: float
    difference: float | None
    min_score: float
    tolerated_drop: float
    passed: bool | None
    conclusive: bool | None
    reasons: list[str] = field(default_factory=list)


def mean_and_interval(scores: Sequence[float]) -> tuple[float, float, float]:
    """Mean with a 95% interval: Wilson for 0/1 scores, normal for bounded ones.

    Examples
    --------
    >>> m, lo, hi = mean_and_interval([1.0] * 26 + [0.0] * 6)
    >>> round(m, 3), round(lo, 3), round(hi, 3)
    (0.812, 0.647, 0.911)
    """
    n = len(scores)
    if n == 0:
        raise ValueError("no scores to estimate from")
    mean = sum(scores) / n
    if all(s in (0.0, 1.0) for s in scores):
        lo, hi = wilson_interval(mean, n)
    else:
        sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / (n - 1)) if n > 1 else 0.0
        lo, hi = mean_interval(mean, sd, n)
    return mean, lo, hi


def compare(scores: Sequence[float], baseline: float, min_score: float, tolerated_drop: float) -> Comparison:
    """Pass or fail against the approval minimum and the tolerated drop, with the interval.

    Examples
    --------
    >>> c = compare([1.0] * 18 + [0.0] * 14, baseline=0.85, min_score=0.7, tolerated_drop=0.05)
    >>> c.passed, c.conclusive, round(c.difference, 3)
    (False, True, -0.287)
    """
    if not scores:
        return judge(0, None, None, None, baseline, min_score, tolerated_drop)
    mean, lo, hi = mean_and_interval(scores)
    return judge(len(scores), mean, lo, hi, baseline, min_score, tolerated_drop)


def judge(
    n: int,
    mean: float | None,
    lo: float | None,
    hi: float | None,
    baseline: float,
    min_score: float,
    tolerated_drop: float,
) -> Comparison:
    """The decision rule on an estimate and its interval, shared by re-evaluations and reports.

    Pass needs the estimate at or above ``min_score`` and no more than ``tolerated_drop``
    below the baseline; the decision is ``conclusive`` when the whole interval agrees with it.
    """
    if n == 0 or mean is None or lo is None or hi is None:
        return Comparison(
            0, None, None, None, baseline, None, min_score, tolerated_drop, None, None, ["no scored answers"]
        )
    drop = baseline - mean
    meets_min, within_drop = mean >= min_score, drop <= tolerated_drop + 1e-12
    passed = meets_min and within_drop
    reasons = [
        f"estimate {mean:.3f} {'meets' if meets_min else 'is below'} the approval minimum {min_score:.3f}",
        f"drop from baseline {baseline:.3f} is {drop:+.3f} (tolerated {tolerated_drop:.3f})",
    ]
    if passed:
        conclusive = lo >= min_score and baseline - lo <= tolerated_drop
    else:
        conclusive = hi < min_score or baseline - hi > tolerated_drop
    if not conclusive:
        reasons.append(f"the 95% interval {lo:.3f}-{hi:.3f} straddles a criterion: more answers are needed to decide")
    return Comparison(
        n, mean, lo, hi, baseline, mean - baseline, min_score, tolerated_drop, passed, conclusive, reasons
    )


def run_reevaluation(
    engine: Engine,
    plan: Plan,
    ctx: TaskContext,
    *,
    now: Callable[[], datetime],
    change_ids: Sequence[int] = (),
    repeats: int | None = None,
    settings: ModelSettings | None = None,
    progress: Progress | None = None,
    actor: str = "medmon",
) -> Reevaluation:
    """Replay every replayable canary of a task ``repeats`` times and compare with its baseline.

    The run and the re-evaluation row are committed before the model is called (a crash leaves
    them visible as running); results, the comparison, the changes it answers and the audit
    entry are committed together. A failed call (a scorer's or the endpoint's alike) is recorded
    on both as failed, never left running.
    """
    task = ctx.task
    policy = plan.governance.controls.reevaluation if plan.governance is not None else None
    repeats = repeats or (policy.repeats if policy is not None else 1)
    settings = settings or ModelSettings.from_endpoint(plan.deployment)
    canaries = [c for c in ctx.canaries if c.replayable] * repeats
    rows: list[Reevaluation] = []

    def opened(session: Session, run: ProbeRun) -> None:
        baseline = probe_baseline(session, plan, ctx)
        row = Reevaluation(
            task_id=task.id,
            change_id=change_ids[0] if change_ids else None,
            run_id=run.id,
            repeats=repeats,
            baseline_id=baseline.id,
            baseline_value=baseline.normalized,
            baseline_ci_low=_norm(baseline, baseline.ci_low),
            baseline_ci_high=_norm(baseline, baseline.ci_high),
            min_score=task.thresholds.min_score,
            tolerated_drop=task.thresholds.tolerated_drop,
            started_at=now(),
        )
        session.add(row)
        session.flush()
        rows.append(row)

    async def call(pool: ClientPool) -> list[ProbeResultBase]:
        if not canaries:
            raise GovernanceError("the task has no replayable canaries")
        jury = (
            pool.jury(JurySettings.from_plan(plan.jury))
            if plan.jury is not None and ctx.scorer == JURY_SCORER
            else None
        )
        client = pool.client(settings)
        out: list[ProbeResultBase] = []
        # Chunks of the client's concurrency keep it saturated and let a progress bar move.
        decoding = task.decoding.overrides() if task.decoding is not None else None
        step = max(1, settings.max_concurrency)
        for i in range(0, len(canaries), step):
            out.extend(
                await probe_canaries(client, canaries[i : i + step], task.id, ctx.scorer, jury=jury, decoding=decoding)
            )
            if progress is not None:
                progress(len(out), len(canaries))
        return out

    def store(session: Session, run: ProbeRun, results: list[ProbeResultBase], stamp: datetime) -> Reevaluation:
        seal_run(session, run, stamp)  # the results enter the audit chain
        row = session.merge(rows[0])
        failure = run.error if run.status == RunStatus.failed else None
        scores = [r.score for r in results if r.score is not None]
        comparison = compare(
            scores, row.baseline_value or 0.0, task.thresholds.min_score, task.thresholds.tolerated_drop
        )
        served = Counter((r.served_model, r.system_fingerprint) for r in results if r.served_model)
        model, fingerprint = served.most_common(1)[0][0] if served else (None, None)
        costs = [r.cost_usd for r in results if r.cost_usd is not None]
        row.n, row.n_errors = comparison.n, sum(1 for r in results if r.error_type)
        row.estimate, row.ci_low, row.ci_high = comparison.estimate, comparison.ci_low, comparison.ci_high
        row.difference, row.passed, row.conclusive = comparison.difference, comparison.passed, comparison.conclusive
        row.reasons = comparison.reasons
        row.served_model, row.system_fingerprint = model, fingerprint
        row.cost_usd = sum(costs) if costs else None
        row.error = failure or (None if scores else "no scored answers")
        row.status = ReevaluationStatus.failed if row.error else ReevaluationStatus.complete
        row.finished_at = stamp
        session.add(row)
        for change_id in change_ids:
            change = session.get(ChangeRecord, change_id)
            if change is not None:
                change.status = ChangeStatus.failed if row.error else ChangeStatus.reevaluated
                change.reevaluation_id = row.id
                session.add(change)
        record(
            session,
            AuditKind.reevaluation,
            actor,
            f"task:{task.id}",
            {
                "reevaluation_id": row.id,
                "run_id": run.id,
                "change_ids": list(change_ids),
                "repeats": repeats,
                "n": row.n,
                "errors": row.n_errors,
                "estimate": row.estimate,
                "ci": [row.ci_low, row.ci_high],
                "baseline": row.baseline_value,
                "baseline_id": row.baseline_id,
                "difference": row.difference,
                "passed": row.passed,
                "conclusive": row.conclusive,
                "served_model": model,
                "system_fingerprint": fingerprint,
                "error": row.error,
            },
            stamp,
        )
        return row

    done = execute_probe(
        engine,
        task.id,
        call,
        now=now,
        texts=text_policy(plan),
        purpose="reevaluation",
        deployment=plan.deployment.name,
        provenance=run_provenance(plan, ctx),
        opened=opened,
        store=store,
        keep_failure=True,
    )
    return done.stored or rows[0]  # superseded: the row stays running until it is stale


def _norm(baseline: Baseline, value: float) -> float:
    span = baseline.scale_max - baseline.scale_min
    return (value - baseline.scale_min) / span if span else value


def reevaluate_pending(
    engine: Engine, plan: Plan, ctx: TaskContext, *, now: Callable[[], datetime], settings: ModelSettings | None = None
) -> Reevaluation | None:
    """Run one re-evaluation answering every pending change of the task, if any is pending."""
    with session_scope(engine) as session:
        ids = [c.id for c in pending_changes(session, ctx.task.id) if c.id is not None]
    if not ids:
        return None
    return run_reevaluation(engine, plan, ctx, now=now, change_ids=ids, settings=settings)


STALE_REEVALUATION = timedelta(hours=6)  # a 'running' re-evaluation older than this crashed: it blocks nothing


def reevaluation_due(session: Session, plan: Plan, task_id: str, now: datetime) -> bool:
    """Whether a detected change of the task waits and nothing holds a new re-evaluation back.

    At most one re-evaluation of a task is in flight, and a new one starts no sooner than the
    policy's ``cooldown`` after the last one started: a pool that keeps changing costs one
    full replay per cool-down, not one per run. Changes detected meanwhile stay pending and
    the next re-evaluation answers them all.
    """
    pending = [c for c in pending_changes(session, task_id) if c.source == "detected"]
    if not pending:
        return False
    last = session.exec(
        select(Reevaluation).where(Reevaluation.task_id == task_id).order_by(col(Reevaluation.id).desc())
    ).first()
    if last is None:
        return True
    started = last.started_at
    if last.status == ReevaluationStatus.running and now - started < STALE_REEVALUATION:
        return False
    cooldown = parse_interval(plan.governance.controls.reevaluation.cooldown) if plan.governance is not None else None
    return cooldown is None or now - started >= cooldown


def auto_reevaluates(plan: Plan) -> bool:
    """Whether a detected change re-evaluates at once (the governance section's policy)."""
    return plan.governance is not None and plan.governance.controls.reevaluation.on_detected_change


def plan_change_due(session: Session, plan: Plan, task_id: str) -> bool:
    """Whether a plan edit left this task a change the policy re-evaluates at the next probe."""
    if plan.governance is None or not plan.governance.controls.reevaluation.on_plan_change:
        return False
    return any(c.source == ChangeSource.plan.value for c in pending_changes(session, task_id))


def approve(
    session: Session,
    plan: Plan,
    *,
    reevaluation_id: int,
    task_id: str,
    by: str,
    now: datetime,
    reason: str | None = None,
    committee_decision: str | None = None,
    operator: str | None = None,
    details: dict[str, Any] | None = None,
) -> Baseline:
    """Adopt a re-evaluation's results as the task's baseline, recorded with who approved it and why.

    ``details`` prove who approves (``medmon.monitor.governance.identity``): without a proven
    identity the approval is refused.

    ``operator`` is who ran the command (``user@host via tool``), recorded beside ``by`` so an
    approval entered for someone else says who entered it.

    The task's go-live reference is built again from the next probes: the drift streams then
    test against what the adopted model does on the canaries.

    Raises
    ------
    GovernanceError
        The re-evaluation is unknown, belongs to another task, is not complete, the approver
        is not an owner of the task, no ``reason`` was given, or its estimate is below the
        approval minimum and no ``committee_decision`` allows it.
    """
    row = session.get(Reevaluation, reevaluation_id)
    if row is None:
        raise GovernanceError(f"no re-evaluation with id {reevaluation_id}")
    if row.task_id != task_id:
        raise GovernanceError(f"re-evaluation {reevaluation_id} is of task {row.task_id!r}, not {task_id!r}")
    task = plan_task(plan, task_id)
    if row.status == ReevaluationStatus.approved:
        raise GovernanceError(f"re-evaluation {reevaluation_id} was already approved by {row.approved_by}")
    if row.status != ReevaluationStatus.complete or row.estimate is None:
        raise GovernanceError(
            f"re-evaluation {reevaluation_id} is {row.status.value}"
            + (f" ({row.error})" if row.error else "")
            + "; only a complete one can be adopted"
        )
    require_approver(plan, task, by, reason)
    require_proof(details, "adopting a re-evaluation as the baseline")
    require_committee(
        effective_task(session, plan, task).task,
        row.estimate,
        committee_decision,  # approved minimum
        f"re-evaluation {reevaluation_id}'s estimate",
    )
    old = session.get(Baseline, row.baseline_id) if row.baseline_id is not None else None
    lo, hi = (old.scale_min, old.scale_max) if old is not None else (0.0, 1.0)
    span = hi - lo
    ci = (lo + (row.ci_low or 0.0) * span, lo + (row.ci_high or 1.0) * span)
    figures = BaselineFigures(
        benchmark=task.benchmark,
        model=row.served_model or plan.deployment.model,
        metric=old.metric if old is not None else "score",
        value=lo + row.estimate * span,
        n=row.n,
        scale_min=lo,
        scale_max=hi,
        ci=ci,
        source_kind="reevaluation",
        source_path=f"reevaluation:{row.id} run:{row.run_id}",
        source_sha256=hashlib.sha256(f"medmon-reevaluation:{row.id}:{row.run_id}".encode()).hexdigest(),
    )
    baseline, _ = record_baseline(session, figures)
    baseline.approved_by = by
    session.add(baseline)
    pin_baseline(session, task_id, baseline, source="reevaluation", actor=by, rationale=str(reason), now=now)
    row.status, row.approved_by, row.approved_at = ReevaluationStatus.approved, by, now
    row.approval_note, row.new_baseline_id = reason, baseline.id
    session.add(row)
    burn = session.get(BurnIn, task_id)
    if burn is not None:  # the adopted model gets a go-live reference of its own
        burn.restart(now)
        session.add(burn)
    record(
        session,
        AuditKind.baseline_approved,
        by,
        f"task:{task_id}",
        {
            "reevaluation_id": row.id,
            "baseline_id": baseline.id,
            "previous_baseline_id": row.baseline_id,
            "benchmark": baseline.benchmark,
            "model": baseline.model,
            "metric": baseline.metric,
            "value": baseline.value,
            "normalized": baseline.normalized,
            "n": baseline.n,
            "passed": row.passed,
            "reason": reason,
            "committee_decision": committee_decision,
            "operator": operator,
        }
        | dict(details or {}),
        now,
    )
    session.flush()
    return baseline


def list_reevaluations(
    session: Session, *, since: datetime | None = None, until: datetime | None = None
) -> list[Reevaluation]:
    """Re-evaluations in time order, optionally within ``[since, until)``."""
    query = select(Reevaluation)
    if since is not None:
        query = query.where(col(Reevaluation.started_at) >= since)
    if until is not None:
        query = query.where(col(Reevaluation.started_at) < until)
    return list(session.exec(query.order_by(col(Reevaluation.started_at), col(Reevaluation.id))).all())
