"""Everything a task's probe needs, resolved once from the plan: canaries, scorer and baseline."""

from __future__ import annotations

from dataclasses import dataclass

from sqlmodel import Session, col, select

from medmon.baselines import Baseline, BaselineFigures, Canary, latest_baseline, read_canaries, record_baseline, resolve
from medmon.baselines.taxonomy import TaxonomyEntry
from medmon.monitor.errors import PlanError, PlanIssue
from medmon.monitor.models import Reevaluation, ReevaluationStatus
from medmon.monitor.plan.model import Plan, Task
from medmon.probes.packs import load_pack


@dataclass(frozen=True)
class TaskContext:
    task: Task
    canaries: tuple[Canary, ...]
    scorer: str
    taxonomy: TaxonomyEntry
    pack_baseline: dict[str, object]


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
                       pack_baseline=dict(card))


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


def task_baseline(session: Session, plan: Plan, ctx: TaskContext) -> Baseline:
    """The baseline a task is compared with: inline plan figures, an imported one, or the pack's card.

    Inline figures are recorded as a manual baseline (idempotently), so every comparison points
    at a stored, versioned row. A baseline an owner adopted from a re-evaluation
    (``medmon baseline approve``) comes before all of them: it is the newest approved evidence.
    """
    task = ctx.task
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
    if found is not None:
        return found
    card = ctx.pack_baseline
    if "value" in card and "n" in card:
        figures = BaselineFigures(benchmark=task.benchmark, model=str(card.get("model") or plan.deployment.model),
                                  metric=str(card.get("metric") or "score"), value=float(card["value"]),  # type: ignore[arg-type]
                                  n=int(card["n"]), source_kind="pack",  # type: ignore[call-overload]
                                  source_path=str(card.get("source") or ""))
        return record_baseline(session, figures)[0]
    raise PlanError("plan", [PlanIssue(f"tasks[{task.id}].baseline",
                                       f"no baseline for benchmark {task.benchmark!r}: give value and n, "
                                       "or import one with 'medmon baseline import'")])
