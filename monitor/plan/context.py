"""Everything a task's probe needs, resolved once from the plan: canaries, scorer and baseline.

The baseline in force is read by ``baseline_in_force`` (pages, reports, approvals) and settled
only on the probe path by ``probe_baseline``, which records inline figures and pins the go-live
baseline the first time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from medmon import __version__
from medmon.baselines import Baseline, BaselineFigures, Canary, latest_baseline, read_canaries, record_baseline, resolve
from medmon.baselines.taxonomy import TaxonomyEntry
from medmon.db import as_utc, utcnow
from medmon.monitor.errors import PlanError, PlanIssue
from medmon.monitor.models import BaselinePin, Reevaluation, ReevaluationStatus
from medmon.monitor.plan.model import Plan, Task
from medmon.probes.models import Provenance
from medmon.probes.packs import load_pack
from medmon.probes.runner import replay_decoding


@dataclass(frozen=True)
class TaskContext:
    task: Task
    canaries: tuple[Canary, ...]
    scorer: str
    taxonomy: TaxonomyEntry
    pack_baseline: dict[str, Any]  # the pack card's YAML baseline
    pack_sha256: str = ""


def canaries_sha256(canaries: tuple[Canary, ...]) -> str:
    """The canaries' content hash: a pack's version, whatever its file is called."""
    return hashlib.sha256("\n".join(c.to_json() for c in canaries).encode("utf-8")).hexdigest()


def sent_settings(plan: Plan, ctx: TaskContext) -> dict[str, Any]:
    """Everything besides the canaries' messages that shapes what a task's calls send.

    The system prompt, the endpoint's decoding, API version, literal headers and query, the
    token-limit parameter, and each canary's decoding as replayed (its own, then the task's
    ``decoding`` override: temperature, max tokens, stop sequences). ``prompt_sha256`` hashes it.
    """
    d, overrides = plan.deployment, ctx.task.decoding.overrides() if ctx.task.decoding else None
    replayed = {json.dumps(replay_decoding(c, overrides), sort_keys=True) for c in ctx.canaries}
    return {
        "system_prompt": d.system_prompt,
        "temperature": d.temperature,
        "max_tokens": d.max_tokens,
        "token_limit_param": d.token_limit_param,
        "api_style": d.api_style,
        "api_version": d.api_version,
        "headers": dict(sorted(d.headers.items())),
        "header_env": sorted(d.header_env),  # the header names; their values are secrets
        "query": dict(sorted(d.query.items())),
        "task_decoding": overrides or {},
        "canary_decoding": sorted(replayed),
    }


def run_provenance(plan: Plan, ctx: TaskContext) -> Provenance:
    """What a run records about what produced its results: canaries, what was sent, scorer."""
    prompt = json.dumps(sent_settings(plan, ctx), sort_keys=True)
    return {
        "pack_sha256": ctx.pack_sha256,
        "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        "scorer_version": f"{ctx.scorer} (medmon {__version__})",
    }


def load_context(plan: Plan, task: Task) -> TaskContext:
    """Load a task's canaries (bundled pack or the user's JSONL) and decide its scorer."""
    if task.canaries.pack is not None:
        pack = load_pack(task.canaries.pack)
        canaries, scorer, card = pack.canaries, pack.scorer, pack.baseline
    else:
        assert task.canaries.path is not None
        canaries = tuple(read_canaries(task.canaries.path, pack=task.canaries.path.stem, benchmark=task.benchmark))
        scorer, card = "quasi_exact_match", {}
    scorer = task.scorer or canaries[0].scorer or scorer
    return TaskContext(
        task=task,
        canaries=tuple(canaries),
        scorer=scorer,
        taxonomy=resolve(task.benchmark),
        pack_baseline=dict(card),
        pack_sha256=canaries_sha256(tuple(canaries)),
    )


def adopted_baseline(session: Session, task_id: str, before: datetime | None = None) -> Baseline | None:
    """The baseline an owner adopted for this task from a re-evaluation (approved before ``before``), newest first."""
    query = select(Reevaluation).where(
        Reevaluation.task_id == task_id,
        Reevaluation.status == ReevaluationStatus.approved,
        col(Reevaluation.new_baseline_id).is_not(None),
    )
    if before is not None:
        query = query.where(col(Reevaluation.approved_at) < before)
    row = session.exec(query.order_by(col(Reevaluation.approved_at).desc(), col(Reevaluation.id).desc())).first()
    if row is None or row.new_baseline_id is None:
        return None
    return session.get(Baseline, row.new_baseline_id)


GO_LIVE = "go-live"
ADOPTED, INLINE, UNPINNED = "re-evaluation adopted", "plan", "not pinned yet"


def current_pin(session: Session, task_id: str, before: datetime | None = None) -> BaselinePin | None:
    """The task's newest baseline pin (made before ``before`` when given): the baseline in force then."""
    query = select(BaselinePin).where(BaselinePin.task_id == task_id)
    if before is not None:
        query = query.where(col(BaselinePin.pinned_at) < before)
    return session.exec(query.order_by(col(BaselinePin.pinned_at).desc(), col(BaselinePin.id).desc())).first()


def pin_baseline(
    session: Session, task_id: str, baseline: Baseline, *, source: str, actor: str, rationale: str, now: datetime
) -> BaselinePin:
    """Pin a task to a stored baseline from ``now`` on (the caller audits an approval)."""
    assert baseline.id is not None
    pin = BaselinePin(
        task_id=task_id, baseline_id=baseline.id, source=source, actor=actor, rationale=rationale, pinned_at=now
    )
    session.add(pin)
    session.flush()
    return pin


def pin_fits(pin: BaselinePin, baseline: Baseline, task: Task) -> bool:
    """An owner's pin always holds; the automatic go-live pin only while the plan still asks for it."""
    if pin.source != GO_LIVE:
        return baseline.benchmark == task.benchmark
    ref = task.baseline
    return (
        baseline.benchmark == task.benchmark
        and ref.value is None
        and (ref.model is None or ref.model == baseline.model)
        and (ref.metric is None or ref.metric == baseline.metric)
    )


@dataclass(frozen=True)
class BaselineInForce:
    """A task's baseline in force and where it comes from; ``baseline`` None says ``why`` there is none.

    ``source`` is the pin's source (``go-live``, ``approved``, ``reevaluation``), ``ADOPTED``,
    ``INLINE`` (the plan's recorded figures) or ``UNPINNED`` (the newest stored baseline, which
    the task's first probe pins as its go-live baseline).
    """

    baseline: Baseline | None
    source: str = ""
    pinned_at: datetime | None = None
    pinned_by: str | None = None
    rationale: str = ""
    why: str = ""


def baseline_in_force(session: Session, plan: Plan, task: Task, before: datetime | None = None) -> BaselineInForce:
    """The stored baseline the task is compared with (at ``before``, else now), found without writing anything.

    Its pin first, an owner-approved re-evaluation next, then the plan's inline figures as the
    first probe recorded them, then the newest imported or pack baseline for the benchmark (not
    pinned yet). Pinning and recording are the probe path's (``probe_baseline``), never a reader's.
    """
    pin = current_pin(session, task.id, before)
    pinned = session.get(Baseline, pin.baseline_id) if pin is not None else None
    if pin is not None and pinned is not None and pin_fits(pin, pinned, task):
        return BaselineInForce(pinned, pin.source, as_utc(pin.pinned_at), pin.actor, pin.rationale)
    adopted = adopted_baseline(session, task.id, before)
    if adopted is not None:
        return BaselineInForce(adopted, ADOPTED)
    ref = task.baseline
    if ref.value is not None and ref.n is not None:
        metric = ref.metric or resolve(task.benchmark).main_metric or "score"
        inline = session.exec(
            select(Baseline)
            .where(
                Baseline.benchmark == task.benchmark,
                Baseline.model == (ref.model or plan.deployment.model),
                Baseline.metric == metric,
                Baseline.value == ref.value,
                Baseline.n == ref.n,
                Baseline.source_kind == "plan",
            )
            .order_by(col(Baseline.version).desc())
        ).first()
        if inline is not None:
            return BaselineInForce(inline, INLINE)
        return BaselineInForce(None, why="the plan's inline baseline figures are recorded by the task's first probe")
    found = latest_baseline(session, task.benchmark, ref.model, ref.metric)
    if found is not None:
        return BaselineInForce(found, UNPINNED, why="the task's first probe pins it as the go-live baseline")
    return BaselineInForce(
        None,
        why=f"no baseline for benchmark {task.benchmark!r} is stored yet: the first probe "
        "records the pack's baseline card, or import one with 'medmon baseline import'",
    )


def probe_baseline(session: Session, plan: Plan, ctx: TaskContext, *, now: datetime | None = None) -> Baseline:
    """The baseline a probe compares with, settling it the first time: the one write of baseline resolution.

    The baseline in force (``baseline_in_force``) when there is one. Otherwise inline figures in
    the plan are recorded as a manual baseline (idempotently), so every comparison points at a
    stored, versioned row; the plan itself is the approved record of them. Otherwise the newest
    imported baseline (or the pack's card) is pinned as the go-live baseline: a later import,
    even of another model on the same benchmark, is a proposal for an owner to approve, never a
    silent swap. Only the probe path calls this; pages and reports read ``baseline_in_force``.
    """
    task = ctx.task
    in_force = baseline_in_force(session, plan, task)
    if in_force.baseline is not None and in_force.source != UNPINNED:
        return in_force.baseline
    ref = task.baseline
    if ref.value is not None and ref.n is not None:
        figures = BaselineFigures(
            benchmark=task.benchmark,
            model=ref.model or plan.deployment.model,
            metric=ref.metric or (ctx.taxonomy.main_metric or "score"),
            value=ref.value,
            n=ref.n,
            scale_min=ref.scale_min,
            scale_max=ref.scale_max,
            source_kind="plan",
        )
        return record_baseline(session, figures)[0]
    found = in_force.baseline
    card = ctx.pack_baseline
    if found is None and "value" in card and "n" in card:
        figures = BaselineFigures(
            benchmark=task.benchmark,
            model=str(card.get("model") or plan.deployment.model),
            metric=str(card.get("metric") or "score"),
            value=float(card["value"]),
            n=int(card["n"]),
            source_kind="pack",
            source_path=str(card.get("source") or ""),
        )
        found = record_baseline(session, figures)[0]
    if found is not None:
        pin_baseline(
            session,
            task.id,
            found,
            source=GO_LIVE,
            actor="medmon",
            rationale="the baseline found when the task was first compared",
            now=now or utcnow(),
        )
        return found
    raise PlanError(
        "plan",
        [
            PlanIssue(
                f"tasks[{task.id}].baseline",
                f"no baseline for benchmark {task.benchmark!r}: give value and n, "
                "or import one with 'medmon baseline import'",
            )
        ],
    )
