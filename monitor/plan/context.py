"""Everything a task's probe needs, resolved once from the plan: canaries, scorer and baseline."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from medmon.baselines import Baseline, BaselineFigures, Canary, latest_baseline, read_canaries, record_baseline, resolve
from medmon.baselines.taxonomy import TaxonomyEntry
from medmon.monitor.errors import PlanError, PlanIssue
from medmon import __version__
from medmon.db import utcnow
from medmon.monitor.models import BaselinePin, Reevaluation, ReevaluationStatus
from medmon.monitor.plan.model import Plan, Task
from medmon.probes.packs import load_pack


@dataclass(frozen=True)
class TaskContext:
    task: Task
    canaries: tuple[Canary, ...]
    scorer: str
    taxonomy: TaxonomyEntry
    pack_baseline: dict[str, object]
    pack_sha256: str = ""


def canaries_sha256(canaries: tuple[Canary, ...]) -> str:
    """The canaries' content hash: a pack's version, whatever its file is called."""
    return hashlib.sha256("\n".join(c.to_json() for c in canaries).encode("utf-8")).hexdigest()


def run_provenance(plan: Plan, ctx: TaskContext) -> dict[str, str]:
    """What a run records about what produced its results: canaries, prompt and decoding, scorer."""
    d = plan.deployment
    prompt = json.dumps({"system_prompt": d.system_prompt, "temperature": d.temperature, "max_tokens": d.max_tokens},
                        sort_keys=True)
    return {"pack_sha256": ctx.pack_sha256, "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
            "scorer_version": f"{ctx.scorer} (medmon {__version__})"}


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
    return TaskContext(task=task, canaries=tuple(canaries), scorer=scorer, taxonomy=resolve(task.benchmark),
                       pack_baseline=dict(card), pack_sha256=canaries_sha256(tuple(canaries)))


def adopted_baseline(session: Session, task_id: str) -> Baseline | None:
    """The baseline an owner adopted for this task from a re-evaluation, the newest approval first."""
    query = (select(Reevaluation).where(Reevaluation.task_id == task_id,
                                        Reevaluation.status == ReevaluationStatus.approved,
                                        col(Reevaluation.new_baseline_id).is_not(None))
             .order_by(col(Reevaluation.approved_at).desc(), col(Reevaluation.id).desc()))
    row = session.exec(query).first()
    if row is None or row.new_baseline_id is None:
        return None
    return session.get(Baseline, row.new_baseline_id)


GO_LIVE = "go-live"


def current_pin(session: Session, task_id: str, before: datetime | None = None) -> BaselinePin | None:
    """The task's newest baseline pin (made before ``before`` when given): the baseline in force then."""
    query = select(BaselinePin).where(BaselinePin.task_id == task_id)
    if before is not None:
        query = query.where(col(BaselinePin.pinned_at) < before)
    return session.exec(query.order_by(col(BaselinePin.pinned_at).desc(), col(BaselinePin.id).desc())).first()


def pin_baseline(session: Session, task_id: str, baseline: Baseline, *, source: str, actor: str, rationale: str,
                 now: datetime) -> BaselinePin:
    """Pin a task to a stored baseline from ``now`` on (the caller audits an approval)."""
    assert baseline.id is not None
    pin = BaselinePin(task_id=task_id, baseline_id=baseline.id, source=source, actor=actor, rationale=rationale,
                      pinned_at=now)
    session.add(pin)
    session.flush()
    return pin


def pin_fits(pin: BaselinePin, baseline: Baseline, task: Task) -> bool:
    """An owner's pin always holds; the automatic go-live pin only while the plan still asks for it."""
    if pin.source != GO_LIVE:
        return baseline.benchmark == task.benchmark
    ref = task.baseline
    return (baseline.benchmark == task.benchmark and ref.value is None
            and (ref.model is None or ref.model == baseline.model) and (ref.metric is None or ref.metric == baseline.metric))


def task_baseline(session: Session, plan: Plan, ctx: TaskContext, *, now: datetime | None = None) -> Baseline:
    """The baseline a task is compared with: its pin, inline plan figures, or the one found at go-live.

    A baseline an owner approved (``medmon baseline approve``: an imported baseline or a
    re-evaluation's results) comes first. Inline figures in the plan are recorded as a manual
    baseline (idempotently), so every comparison points at a stored, versioned row; the plan
    itself is the approved record of them. Otherwise the newest imported baseline (or the pack's
    card) is found once and pinned as the go-live baseline: a later import, even of another
    model on the same benchmark, is a proposal for an owner to approve, never a silent swap.
    """
    task = ctx.task
    pin = current_pin(session, task.id)
    if pin is not None:
        pinned = session.get(Baseline, pin.baseline_id)
        if pinned is not None and pin_fits(pin, pinned, task):
            return pinned
    adopted = adopted_baseline(session, task.id)
    if adopted is not None:
        return adopted
    ref = task.baseline
    if ref.value is not None and ref.n is not None:
        figures = BaselineFigures(benchmark=task.benchmark, model=ref.model or plan.deployment.model,
                                  metric=ref.metric or (ctx.taxonomy.main_metric or "score"), value=ref.value,
                                  n=ref.n, scale_min=ref.scale_min, scale_max=ref.scale_max, source_kind="plan")
        return record_baseline(session, figures)[0]
    found = latest_baseline(session, task.benchmark, ref.model, ref.metric)
    card = ctx.pack_baseline
    if found is None and "value" in card and "n" in card:
        figures = BaselineFigures(benchmark=task.benchmark, model=str(card.get("model") or plan.deployment.model),
                                  metric=str(card.get("metric") or "score"), value=float(card["value"]),  # type: ignore[arg-type]
                                  n=int(card["n"]), source_kind="pack",  # type: ignore[call-overload]
                                  source_path=str(card.get("source") or ""))
        found = record_baseline(session, figures)[0]
    if found is not None:
        pin_baseline(session, task.id, found, source=GO_LIVE, actor="medmon",
                     rationale="the baseline found when the task was first compared", now=now or utcnow())
        return found
    raise PlanError("plan", [PlanIssue(f"tasks[{task.id}].baseline",
                                       f"no baseline for benchmark {task.benchmark!r}: give value and n, "
                                       "or import one with 'medmon baseline import'")])
