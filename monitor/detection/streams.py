"""Streams and their detectors: turn a probe run's results into observations and decisions.

Each task has a layout of streams (``medmon.monitor.detection.drift.layout``): the score against its MedHELM
baseline (unpaired), against each canary's own baseline outcome (paired, when HELM gave
per-instance outcomes or once the burn-in has built them), per subgroup with a gap detector,
output length against the burn-in's per-canary range (verbosity, truncation: the cost tail),
refusals, jury agreement, and the operational streams (errors, cost over budget, latency over
its objective). Tasks of one MedHELM category share a pooled stream. Every budgeted stream is a
one-sided e-detector whose threshold comes from the plan's false-alarm budget
(``medmon.monitor.detection.drift.budget``). river watches output length and latency distributions without a
budget (information only), and a change of served model starts a one-shot paired test.

Every detector's state is stored in ``DetectorState`` after each run, with the parameters it was
built with: the same data after a restart gives the same decisions, and a change of parameters
(a new baseline, budget or reference) opens a new segment instead of mixing evidence.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlmodel import Session, col, select

from medmon.alerts import KINDS, Alert, Cause, cause_of
from medmon.baselines import Baseline, Canary, resolve
from medmon.monitor.detection.drift import (
    CountSR,
    IdentityLogprob,
    IdentityMMD,
    JudgeAgreementSR,
    JudgeBiasSR,
    MixtureSR,
    OneShotPaired,
    PairedSR,
    PooledSR,
    RiverDrift,
    SubgroupGapSR,
)
from medmon.monitor.detection.drift.budget import INFO, OPERATIONAL, QUALITY, Budget
from medmon.monitor.detection.drift.detector import Detector
from medmon.monitor.detection.drift.finding import Finding
from medmon.monitor.detection.drift.layout import (
    Item,
    StreamSpec,
    baseline_margin,
    exact_baseline_margin,
    margin_z,
    reference_alpha,
    task_streams,
)
from medmon.monitor.detection.drift.recovery import Recovery, RecoveryState
from medmon.monitor.detection.drift.reference import (
    GrowthCheck,
    References,
    burn_in_add,
    burn_in_complete,
    burn_in_references,
    from_json,
    growth_check,
    helm_references,
    pending,
    stage_alpha,
    to_json,
)
from medmon.monitor.detection.drift.reference import answers as reference_answers
from medmon.monitor.models import BurnIn, DetectorState, FindingRecord, StreamStatus
from medmon.monitor.plan.context import TaskContext
from medmon.monitor.plan.model import Plan
from medmon.probes.models import ProbeResultBase

__all__ = [
    "StreamSpec",
    "StreamUpdate",
    "baseline_margin",
    "go_live_replay",
    "plan_budget",
    "reset_task_streams",
    "start_reevaluation",
    "stream_thresholds",
    "task_streams",
    "update_judge_canaries",
    "update_stream",
    "update_task_streams",
]

# Recovery: a degraded stream is back once a mixture CUSUM betting on the null's side reaches
# this threshold (``medmon.monitor.detection.drift.recovery``): at the null's boundary at least this
# many observations pass between false recoveries, and far more while a drop lasts.
RECOVERY_THRESHOLD = 1e4
# A recovered stream returns to ok after this many quiet runs (evidence below WATCHING_EVIDENCE).
QUIET_RUNS = 3
# Detectors without a recovery null (the two-sided judge bias) recover on this many consecutive
# runs back inside the null band, together holding at least RECOVERY_MIN_OBS observations.
RECOVERY_RUNS = 3
RECOVERY_MIN_OBS = 50
WATCHING_EVIDENCE = 0.5
DETECTORS: dict[str, type[Detector]] = {
    c.name: c
    for c in (
        MixtureSR,
        PairedSR,
        SubgroupGapSR,
        JudgeAgreementSR,
        JudgeBiasSR,
        OneShotPaired,
        RiverDrift,
        PooledSR,
        CountSR,
        IdentityMMD,
        IdentityLogprob,
    )
}
_NO_THRESHOLD = {"river", "oneshot_paired"}
D = TypeVar("D", bound=Detector)


@dataclass(frozen=True)
class StreamUpdate:
    spec: StreamSpec[Any]  # of whatever the stream observes
    status: StreamStatus
    previous: StreamStatus
    finding: Finding | None
    run_mean: float | None
    evidence: float
    n: int
    kind: str = "drift"  # the FindingRecord kind: drift | distribution | reevaluation
    alert: bool = True  # whether a finding raises an alert (river and passed re-evaluations do not)
    summary: str = ""
    xs: tuple[float, ...] = field(default=(), repr=False)


def _categories(plan: Plan) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for t in plan.tasks:
        groups.setdefault(resolve(t.benchmark).category, []).append(t.id)
    return {c: ids for c, ids in groups.items() if len(ids) >= 2}


def plan_budget(plan: Plan) -> Budget:
    """Units sharing the budget: tasks, pooled categories (2+ tasks) and judges' canary streams."""
    det = plan.detection
    judges = len(plan.jury.judges) if plan.jury is not None else 0
    return Budget(
        det.probes_between_false_alarms,
        len(plan.tasks) + len(_categories(plan)) + judges,
        det.operational_probes_between_false_alarms,
        len(plan.tasks),
    )


def stream_thresholds(plan: Plan, specs: Sequence[StreamSpec[Any]]) -> dict[str, float]:
    """Threshold ``A`` of each budgeted stream of one task (its share of the task's unit)."""
    budget = plan_budget(plan)
    budgeted = [s for s in specs if s.family != INFO]
    if budget.separate_operational:
        count = {f: sum(1 for s in budgeted if s.family == f) for f in (QUALITY, OPERATIONAL)}
        return {s.key: budget.threshold(s.family, count[s.family]) for s in budgeted}
    return {s.key: budget.threshold(QUALITY, len(budgeted)) for s in budgeted}


def build_detector(name: str, params: dict[str, Any], threshold: float, state: dict[str, Any] | None) -> Detector:
    """Rebuild a detector from its stored parameters and state."""
    return rebuild(DETECTORS[name], params, threshold, state)


def rebuild(cls: type[D], params: dict[str, Any], threshold: float, state: dict[str, Any] | None) -> D:
    """:func:`build_detector` for a known class, typed as that class (the pool's ``push``, the test's ``done``)."""
    kwargs = dict(params)
    kwargs.pop("reference", None)
    if cls.name not in _NO_THRESHOLD:
        kwargs["threshold"] = threshold
    return cls(**kwargs, state=cls.State.from_dict(state) if state else None)


def _row(session: Session, spec: StreamSpec[Any], params: dict[str, Any], threshold: float) -> DetectorState:
    """The stream's stored row; a new one (a new segment) when its null or detector changed.

    The threshold is not part of the null: a budget edit (a task, judge or category added, a new
    budget) rescales it and keeps the evidence gathered so far.
    """
    row = session.get(DetectorState, spec.key)
    stored = {k: v for k, v in (row.params if row is not None else {}).items() if k != "threshold"}
    if row is not None and stored == params and row.detector == spec.detector:
        row.threshold = threshold
        return row
    if row is not None and row.detector == spec.detector and _grown(stored, params):
        # The frozen reference grew (a later stage of the same reference, its growth checked): the
        # evidence carries over. Each observation is still bet against a null that holds under no
        # change (each stage's margin has its own share of the error), so the mixture stays an e-process.
        row.threshold, row.params, row.null_mean, row.baseline_mean = (
            threshold,
            params,
            spec.null_mean,
            spec.baseline_mean,
        )
        return row
    # A new baseline or reference starts a new segment: evidence against the old null is void.
    if row is None:
        return DetectorState(
            key=spec.key,
            task_id=spec.task_id,
            metric=spec.metric,
            direction=spec.direction,
            null_mean=spec.null_mean,
            baseline_mean=spec.baseline_mean,
            threshold=threshold,
            segment=1,
            detector=spec.detector,
            family=spec.family,
            params=params,
        )
    row.segment, row.state, row.evidence, row.n, row.recovery = row.segment + 1, {}, 0.0, 0, {}
    row.null_mean, row.baseline_mean, row.threshold = spec.null_mean, spec.baseline_mean, threshold
    row.detector, row.family, row.params = spec.detector, spec.family, params
    return row


def _grown(stored: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """Whether ``params`` are those of a later stage of the go-live reference ``stored`` was built on."""
    old, new = str(stored.get("reference", "")), str(params.get("reference", ""))
    if not old.startswith("burn-in:") or not new.startswith("burn-in:"):
        return False
    return old.split(".")[0] == new.split(".")[0] and old != new


def _settle(
    row: DetectorState, detector: Detector, finding: Finding | None, xs: Sequence[float]
) -> tuple[StreamStatus, Finding | None]:
    """The stream's next status from this run's finding and observations ``xs`` (detector's scale).

    One alert per episode: a degraded stream is not raised again, and it recovers only on
    evidence of its own that it is back (``Recovery``, started at the alarm), never on a few
    lucky runs. A recovered stream returns to ok after ``QUIET_RUNS`` quiet runs.
    """
    status = row.status
    if finding is not None:
        row.recovery, row.recovery_runs, row.recovery_obs = {}, 0, 0  # fresh evidence of the drop
        return StreamStatus.degraded, (None if status == StreamStatus.degraded else finding)
    if status == StreamStatus.degraded:
        null = detector.recovery_null
        if null is None:
            return _settle_by_runs(row, detector, xs), None
        recovery = Recovery(null, RECOVERY_THRESHOLD, RecoveryState.from_dict(row.recovery) if row.recovery else None)
        back = recovery.update(xs)
        row.recovery = {} if back else recovery.state.to_dict()
        if back:
            detector.reset()
            return StreamStatus.recovered, None
        return status, None
    if detector.evidence >= WATCHING_EVIDENCE:
        row.recovery_runs = 0
        return StreamStatus.watching, None
    if status == StreamStatus.watching:
        return StreamStatus.ok, None
    if status == StreamStatus.recovered:
        row.recovery_runs += 1
        if row.recovery_runs >= QUIET_RUNS:
            row.recovery_runs = 0
            return StreamStatus.ok, None
    return status, None


def _settle_by_runs(row: DetectorState, detector: Detector, xs: Sequence[float]) -> StreamStatus:
    """Recovery of a detector without a recovery null: consecutive runs back inside its null band."""
    if not xs:
        return row.status
    if detector.holds(sum(xs) / len(xs)):
        row.recovery_runs += 1
        row.recovery_obs += len(xs)
    else:
        row.recovery_runs, row.recovery_obs = 0, 0
    if row.recovery_runs >= RECOVERY_RUNS and row.recovery_obs >= RECOVERY_MIN_OBS:
        row.recovery_runs, row.recovery_obs = 0, 0
        detector.reset()
        return StreamStatus.recovered
    return row.status


def update_stream(
    session: Session, spec: StreamSpec[Item], threshold: float, results: Sequence[Item], now: datetime
) -> StreamUpdate:
    """Feed one run's observations to a stream's persisted detector and store its new state."""
    params = {**spec.params, "null_mean": spec.null_mean}
    row = _row(session, spec, params, threshold)
    detector = build_detector(spec.detector, spec.params, threshold, row.state or None)
    previous = row.status
    xs: list[float] = []
    finding = None
    for r in results:
        obs = spec.observe(r)
        if obs is None:
            continue
        finding = detector.update(obs) or finding
        if detector.last_x is not None:
            xs.append(detector.last_x)
    run_mean = sum(xs) / len(xs) if xs else None
    if spec.family == INFO:  # river: information only, the stream's status never moves
        status, kind, alert = StreamStatus.ok, "distribution", False
    else:
        status, finding = _settle(row, detector, finding, xs)
        kind, alert = "drift", True
    row.status, row.evidence, row.n = status, float(detector.evidence), detector.seen
    row.state, row.updated_at = detector.state.to_dict(), now
    session.add(row)
    summary = f"{spec.task_id}: {spec.what}" if finding is not None and spec.what else ""
    return StreamUpdate(
        spec,
        status,
        previous,
        finding,
        run_mean,
        float(detector.evidence),
        detector.seen,
        kind,
        alert,
        summary,
        tuple(xs),
    )


def _quiet(session: Session, task_id: str) -> bool:
    """The go-live reference may grow: no stream of the task is watching or degraded and no alert of
    the reference's causes (accuracy, subgroup gap) is open for the task, whatever rule raised it
    (``below_minimum`` included)."""
    busy = (StreamStatus.watching, StreamStatus.degraded)
    streams = session.exec(
        select(DetectorState.key).where(DetectorState.task_id == task_id, col(DetectorState.status).in_(busy))
    ).first()
    if streams is not None:
        return False
    causes = {Cause.accuracy, Cause.subgroup_gap}
    alerts = session.exec(select(Alert.labels).where(Alert.task_id == task_id, col(Alert.ends_at).is_(None))).all()
    return not any(cause_of(labels) in causes for labels in alerts)


@dataclass(frozen=True)
class Referenced:
    """What ``_references`` found for one run: the references to test it against, and what changed."""

    refs: References | None  # per-instance references of the paired streams (HELM's while the reference is built)
    go_live: References | None  # the frozen go-live reference, once complete
    completed: References | None = None  # the go-live reference this run completed
    growth: GrowthCheck | None = None  # a growth the two-sample check refused (a finding)


def _references(
    session: Session, plan: Plan, ctx: TaskContext, results: Sequence[ProbeResultBase], now: datetime
) -> Referenced:
    """The references *before* this run; then build or grow the go-live reference.

    Without a go-live reference (``detection.reference.repeats`` 0) the paired references are
    HELM's. Otherwise this run's answers join the reference table while it is being built (the
    paired streams test against HELM's per-instance scores meanwhile, where the canaries carry
    them). The reference is frozen when it completes. Afterwards answers are set aside (pending)
    while the task is quiet (``_quiet``); the moment it is not, the pending answers are dropped,
    since they may hold the start of a drop. Once the pending answers are as many as the frozen
    ones, a two-sample check against the frozen reference (``growth_check``, at the stage's share
    of ``baseline_alpha``) decides: indistinguishable, they join it (the next stage: a narrower
    margin, the evidence carried over); distinguishable, they are dropped and the refusal is a
    finding. A run is never tested against a reference it helped build.
    """
    det = plan.detection
    helm = helm_references(ctx.canaries, det.reference.coverage)
    if det.reference.repeats < 1:
        return Referenced(helm, None)
    row = session.get(BurnIn, ctx.task.id)
    if row is None:
        row = BurnIn(task_id=ctx.task.id, runs=det.reference.repeats, started_at=now)
    if row.complete and not row.reference:  # a reference completed before stages were kept
        row.reference = row.instances
    current = (
        burn_in_references(from_json(row.reference), row.runs, row.version, row.stage, row.alpha)
        if row.complete
        else None
    )
    pool = [c.id for c in ctx.canaries if c.replayable]
    table = from_json(row.instances)
    completed, refused = None, None

    def add() -> None:
        for r in results:
            if r.error_type is None and r.score is not None:
                burn_in_add(table, r.canary_id, float(r.score), r.completion_tokens, r.cost_usd, r.latency_s)
        row.instances = to_json(table)

    if not row.complete:
        add()
        if burn_in_complete(table, pool, row.runs, det.reference.coverage):
            row.complete, row.completed_at, row.reference, row.stage = True, now, row.instances, 0
            row.alpha = stage_alpha(reference_alpha(plan), row.runs, det.reference.max_repeats)
            completed = burn_in_references(table, row.runs, row.version)
    elif current is not None:
        frozen = from_json(row.reference)
        if not _quiet(session, ctx.task.id):
            if reference_answers(table) > reference_answers(frozen):
                row.instances = row.reference  # the pending answers may hold the start of a drop
        elif reference_answers(table) < det.reference.max_repeats * len(pool):
            add()
            new = pending(table, frozen)
            if reference_answers(new) >= reference_answers(frozen):
                check = growth_check(current, new, row.alpha or stage_alpha(reference_alpha(plan), 1, 1))
                if check.indistinguishable:
                    row.reference, row.stage = row.instances, row.stage + 1
                else:
                    row.instances, refused = row.reference, check
    session.add(row)
    return Referenced(current if current is not None else helm, current, completed, refused)


def growth_update(ctx: TaskContext, go_live: References, check: GrowthCheck) -> StreamUpdate:
    """A refused growth of the go-live reference as a finding: the answers would have moved the null."""
    t = ctx.task.id
    spec: StreamSpec[Any] = StreamSpec(  # observes nothing: the finding is made by the check
        f"{t}:conformance:growth", t, "conformance", "both", 0.0, go_live.centre, lambda r: None, "conformance"
    )
    finding = Finding(
        detector="reference_growth_check",
        direction="drop" if check.difference < 0 else "rise",
        statistic=check.difference,
        threshold=0.0,
        estimate=check.difference,
        ci_low=check.low,
        ci_high=check.high,
        n=check.n,
        null_mean=0.0,
        quantity="paired difference",
        decision="refused",
    )
    summary = (
        f"{t}: {check.n} answers differ from the frozen go-live reference (paired difference "
        f"{check.difference:+.3f}, {1 - check.alpha:.1%} CI {check.low:+.3f} to {check.high:+.3f}); "
        "the reference was not extended with them"
    )
    return StreamUpdate(
        spec, StreamStatus.ok, StreamStatus.ok, finding, None, 0.0, check.n, "reference_growth", False, summary
    )


def _restart_burn_in(session: Session, task_id: str, now: datetime) -> None:
    row = session.get(BurnIn, task_id)
    if row is not None:
        row.restart(now)
        session.add(row)


def go_live_replay(
    session: Session, plan: Plan, ctx: TaskContext, k: int, rng: random.Random | None = None
) -> list[Canary] | None:
    """The ``k`` canaries a probe run replays while the go-live reference is built or grows, else None.

    The least answered canaries come first (ties in random order, from ``rng`` when given), so the
    reference covers every canary ``repeats`` times in the fewest runs instead of waiting for random
    draws to reach them all, and keeps equal answer counts as it grows (where ``weighted_cp_margin``
    is exact). Once it holds ``max_repeats`` answers per canary, runs draw canaries at random.
    """
    ref = plan.detection.reference
    if ref.repeats < 1:
        return None
    row = session.get(BurnIn, ctx.task.id)
    table = from_json(row.instances) if row is not None else {}
    pool = [c for c in ctx.canaries if c.replayable]
    if row is not None and row.complete and reference_answers(table) >= ref.max_repeats * len(pool):
        return None
    tie = rng or random.Random(reference_answers(table))
    order = {c.id: tie.random() for c in pool}
    pool.sort(key=lambda c: (int(table[c.id][0]) if c.id in table else 0, order[c.id]))
    return pool[:k] or None


def conformance_update(plan: Plan, ctx: TaskContext, go_live: References) -> StreamUpdate | None:
    """Compare the completed go-live reference with the canaries' HELM per-instance scores, once.

    A finding either way (the committee sees the check was made); it alerts only when production
    at go-live is worse than the evidence: the 95% interval of the mean paired difference lies
    wholly below ``-min_margin``.
    """
    helm = helm_references(ctx.canaries, plan.detection.reference.coverage)
    if helm is None:
        return None
    common = [cid for cid in go_live.items if cid in helm.items]
    if len(common) < 2:
        return None
    n = len(common)
    diffs = [go_live.items[c].mean - helm.items[c].mean for c in common]
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    low, high = mean - 1.96 * sd / math.sqrt(n), mean + 1.96 * sd / math.sqrt(n)
    worse = high < -plan.detection.min_margin
    t = ctx.task.id
    spec: StreamSpec[Any] = StreamSpec(  # observes nothing: the finding is made here
        f"{t}:conformance:golive",
        t,
        "conformance",
        "drop",
        -plan.detection.min_margin,
        helm.mean,
        lambda r: None,
        "conformance",
    )
    finding = Finding(
        detector="go_live_conformance",
        direction="drop",
        statistic=mean / max(sd / math.sqrt(n), 1e-9),
        threshold=-1.96,
        estimate=mean,
        ci_low=low,
        ci_high=high,
        n=n,
        null_mean=-plan.detection.min_margin,
        quantity="paired difference",
        decision="degraded" if worse else "passed",
    )
    verdict = "below" if worse else "in line with"
    summary = (
        f"{t}: go-live reference {verdict} the HELM evidence on {n} canaries "
        f"(paired difference {mean:+.3f}, 95% CI {low:+.3f} to {high:+.3f})"
    )
    return StreamUpdate(
        spec,
        StreamStatus.degraded if worse else StreamStatus.ok,
        StreamStatus.ok,
        finding,
        None,
        0.0,
        n,
        "conformance",
        worse,
        summary,
    )


def update_task_streams(
    session: Session,
    plan: Plan,
    ctx: TaskContext,
    baseline: Baseline,
    results: Sequence[ProbeResultBase],
    now: datetime,
) -> list[StreamUpdate]:
    """Feed one run to every stream of the task, its category's pooled stream and any re-evaluation."""
    found = _references(session, plan, ctx, results, now)
    refs = found.refs
    specs = task_streams(plan, ctx.task, baseline, ctx.canaries, refs=refs, burn_in=found.go_live, scorer=ctx.scorer)
    thresholds = stream_thresholds(plan, specs)
    updates = []
    if found.completed is not None:
        conformance = conformance_update(plan, ctx, found.completed)
        if conformance is not None:
            updates.append(conformance)
    if found.growth is not None and found.go_live is not None:
        updates.append(growth_update(ctx, found.go_live, found.growth))
    for spec in specs:
        if spec.active:
            updates.append(update_stream(session, spec, thresholds.get(spec.key, 0.0), results, now))
    primary = next((u for u in updates if u.spec.primary), None)
    if primary is not None and primary.xs:
        pooled = _update_pooled(session, plan, ctx, primary, now)
        if pooled is not None:
            updates.append(pooled)
    one_shot = _update_one_shot(session, plan, ctx, baseline, refs, results, now)
    if one_shot is not None:
        updates.append(one_shot)
    return updates


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _update_pooled(
    session: Session, plan: Plan, ctx: TaskContext, member: StreamUpdate, now: datetime
) -> StreamUpdate | None:
    category = resolve(ctx.task.benchmark).category
    members = _categories(plan).get(category)
    if not members:
        return None
    threshold = plan_budget(plan).threshold(QUALITY, 1)
    spec: StreamSpec[Any] = StreamSpec(  # observes nothing: fed the member's observations below
        f"category:{_slug(category)}:pooled_score:drop",
        f"category:{_slug(category)}",
        "pooled_score",
        "drop",
        0.0,
        0.0,
        lambda r: None,
        "pooled_sr",
        {"members": members, "max_lag": 50},
        what=KINDS["pooled_score"].words(category=category, members=len(members)),
    )
    params = {**spec.params, "null_mean": 0.0}
    row = _row(session, spec, params, threshold)
    detector = rebuild(PooledSR, spec.params, threshold, row.state or None)
    previous = row.status
    params_m = member.spec.params  # the member's null on the scale of its observations
    mu0 = (1 - params_m["margin"]) / 2 if member.spec.detector == "paired_sr" else params_m["mu0"]
    finding = detector.push(ctx.task.id, member.xs, mu0, params_m["sigma2"])
    steps = detector.steps  # the pool's observations: each step's mean shortfall
    status, finding = _settle(row, detector, finding, steps)
    row.status, row.evidence, row.n = status, float(detector.evidence), detector.seen
    row.state, row.updated_at = detector.state.to_dict(), now
    session.add(row)
    run_mean = sum(steps) / len(steps) if steps else None
    return StreamUpdate(
        spec,
        status,
        previous,
        finding,
        run_mean,
        float(detector.evidence),
        detector.seen,
        summary=f"{spec.what}" if finding is not None else "",
        xs=tuple(steps),
    )


ONE_SHOT = "reevaluation"


def start_reevaluation(
    session: Session, plan: Plan, ctx: TaskContext, baseline: Baseline, now: datetime, reason: str = ""
) -> DetectorState:
    """Start the one-shot paired test of a task after a known change (model, fingerprint, prompt, judge).

    The test pairs each following answer with the canary's go-live reference (the approved
    model's answers), else its HELM per-instance score, else the benchmark's mean. A go-live
    reference still being built restarts: it would mix two models.
    """
    det, task = plan.detection, ctx.task
    refs, exact = None, False
    burn = session.get(BurnIn, task.id)
    if burn is not None and burn.complete:
        refs = burn_in_references(
            from_json(burn.reference or burn.instances), burn.runs, burn.version, burn.stage, burn.alpha
        )
        exact = True
    elif burn is not None:
        _restart_burn_in(session, task.id, now)
    refs = refs or helm_references(ctx.canaries, det.reference.coverage)
    p0 = baseline.detector_normalized
    alpha = reference_alpha(plan)
    if refs is not None:
        margin = (
            refs.exact_margin(
                refs.alpha or stage_alpha(alpha, det.reference.repeats, det.reference.max_repeats), det.min_margin
            )
            if exact
            else refs.margin(det.min_margin, margin_z(plan))
        )
        sigma2, reference = refs.sigma2_x(), refs.key()
    else:
        margin, sigma2 = exact_baseline_margin(p0, baseline.n, alpha, det.min_margin), max(p0 * (1 - p0) / 4, 0.01)
        reference = "baseline"
    tolerance = max(task.thresholds.tolerated_drop, margin + 0.01)
    params = {
        "margin": margin,
        "tolerance": tolerance,
        "alpha": det.reevaluation_alpha,
        "sigma2": sigma2,
        "max_n": det.reevaluation_max_probes,
        "reference": reference,
        "baseline": p0,
        "reason": reason,
    }
    key = f"{task.id}:{ONE_SHOT}:oneshot"
    row = session.get(DetectorState, key) or DetectorState(
        key=key,
        task_id=task.id,
        metric=ONE_SHOT,
        direction="drop",
        null_mean=0.0,
        baseline_mean=p0,
        threshold=0.0,
        segment=0,
    )
    row.segment, row.state, row.params, row.detector, row.family = row.segment + 1, {}, params, "oneshot_paired", INFO
    row.null_mean, row.threshold, row.status = -margin, 1 / det.reevaluation_alpha, StreamStatus.watching
    row.evidence, row.n, row.recovery_runs, row.recovery_obs, row.updated_at = 0.0, 0, 0, 0, now
    session.add(row)
    return row


def _update_one_shot(
    session: Session,
    plan: Plan,
    ctx: TaskContext,
    baseline: Baseline,
    refs: References | None,
    results: Sequence[ProbeResultBase],
    now: datetime,
) -> StreamUpdate | None:
    task = ctx.task
    row = session.get(DetectorState, f"{task.id}:{ONE_SHOT}:oneshot")
    if row is None or row.detector != "oneshot_paired" or (row.state or {}).get("decision"):
        return None
    p = row.params
    items: Mapping[str, Any] = {}
    if refs is not None and refs.key() == p["reference"]:
        items = refs.items
    elif str(p["reference"]).startswith("helm"):
        helm = helm_references(ctx.canaries, plan.detection.reference.coverage)
        items = helm.items if helm is not None else {}
    test = rebuild(
        OneShotPaired, {k: p[k] for k in ("margin", "tolerance", "alpha", "sigma2", "max_n")}, 0.0, row.state or None
    )
    finding, xs = None, []
    for r in results:
        if r.error_type is not None or r.score is None:
            continue
        ref = (
            items[r.canary_id].mean
            if r.canary_id in items
            else (p["baseline"] if p["reference"] == "baseline" else None)
        )
        if ref is None:
            continue
        if test.done:
            break  # the verdict is in: later answers are left to the change detectors
        finding = test.update((float(r.score), ref)) or finding
        if test.last_x is not None:
            xs.append(test.last_x)
    previous = row.status
    spec: StreamSpec[Any] = StreamSpec(  # observes nothing: the test above was fed
        row.key, task.id, ONE_SHOT, "drop", row.null_mean, baseline.normalized, lambda r: None, "oneshot_paired", p
    )
    status, alert, summary = previous, False, ""
    if finding is not None:
        d = finding.decision
        verdict = {
            "degraded": "re-evaluation: degraded vs baseline",
            "passed": "re-evaluation passed",
            "inconclusive": "re-evaluation inconclusive",
        }[d]
        summary = (
            f"{task.id}: {verdict} (paired difference {finding.estimate:+.3f}, 95% CI "
            f"{finding.ci_low:+.3f} to {finding.ci_high:+.3f}, n={finding.n})"
        )
        status = StreamStatus.degraded if d == "degraded" else StreamStatus.ok
        alert = d == "degraded"
        if d == "passed" and plan.detection.reference.repeats >= 1:
            _restart_burn_in(session, task.id, now)  # the new model becomes the reference
    row.status, row.evidence, row.n = status, float(test.evidence), test.seen
    row.state, row.updated_at = test.state.to_dict(), now
    session.add(row)
    run_mean = sum(xs) / len(xs) if xs else None
    return StreamUpdate(
        spec, status, previous, finding, run_mean, float(test.evidence), test.seen, ONE_SHOT, alert, summary, tuple(xs)
    )


def reset_task_streams(session: Session, task_id: str, now: datetime) -> int:
    """Open a new segment for every stream of a task (after a model change or re-baselining)."""
    rows = session.exec(select(DetectorState).where(DetectorState.task_id == task_id)).all()
    for row in rows:
        row.state, row.segment, row.evidence, row.updated_at = {}, row.segment + 1, 0.0, now
        row.status, row.recovery_runs, row.recovery_obs, row.recovery = StreamStatus.ok, 0, 0, {}
        session.add(row)
    return len(rows)


def _verdict(pair: tuple[float, float]) -> tuple[float, float]:
    """A judge canary stream's observation: the ``(judge score, gold score)`` pair as fed."""
    return pair


def update_judge_canaries(
    session: Session,
    plan: Plan,
    judge: str,
    verdicts: Sequence[tuple[float, float]],
    now: datetime,
    canaries: int | None = None,
) -> tuple[StreamUpdate, StreamUpdate]:
    """Feed re-judged judge canaries ``(judge score, gold score)`` to that judge's two streams.

    Agreement with the gold scores (held to the lowest task minimum of jury agreement in the plan,
    else 0.8), and the signed error against the judge's own first
    ``jury.canary_burn_in_runs`` runs of ``canaries`` verdicts (default: this run's count), which
    catches a judge turning lenient. The two share the judge's unit of the quality budget.
    """
    if plan.jury is None:
        raise ValueError("judge canaries need a jury in the plan")
    floors = [t.thresholds.min_jury_agreement for t in plan.tasks if t.thresholds.min_jury_agreement is not None]
    a0 = min(floors) if floors else 0.8
    spec = StreamSpec(
        f"judge:{judge}:judge_canaries:drop",
        f"judge:{judge}",
        "judge_canaries",
        "drop",
        a0,
        a0,
        _verdict,
        "judge_agreement_sr",
        {"min_agreement": a0, "scale_min": float(plan.jury.scale_min), "scale_max": float(plan.jury.scale_max)},
        what=KINDS["judge_canaries"].words(judge=judge),
    )
    burn_in = max(2, plan.jury.canary_burn_in_runs * (canaries or len(verdicts)))
    bias = StreamSpec(
        f"judge:{judge}:judge_bias:both",
        f"judge:{judge}",
        "judge_bias",
        "both",
        0.0,
        0.0,
        _verdict,
        "judge_bias_sr",
        {
            "burn_in": burn_in,
            "tolerance": plan.jury.canary_bias_tolerance,
            "scale_min": float(plan.jury.scale_min),
            "scale_max": float(plan.jury.scale_max),
        },
        what=KINDS["judge_canary_bias"].words(judge=judge),
    )
    threshold = plan_budget(plan).threshold(QUALITY, 2)
    return (
        update_stream(session, spec, threshold, verdicts, now),
        update_stream(session, bias, threshold, verdicts, now),
    )


def finding_record(update: StreamUpdate, run_id: int | None, summary: str, at: datetime) -> FindingRecord:
    """The stored form of a stream update's finding, with its evidence."""
    f, spec = update.finding, update.spec
    assert f is not None
    return FindingRecord(
        task_id=spec.task_id,
        metric=spec.metric,
        kind=update.kind,
        direction=f.direction,
        statistic=f.statistic,
        threshold=f.threshold,
        estimate=f.estimate,
        ci_low=f.ci_low,
        ci_high=f.ci_high,
        n=f.n,
        null_mean=f.null_mean,
        run_id=run_id,
        summary=summary,
        evidence=f.evidence(),
        created_at=at,
    )
