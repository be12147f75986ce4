"""The post-deployment monitoring plan as a document, from the plan file alone.

It lays the plan out in the five steps a governance owner takes, so the committee approves a
readable document and medmon runs the very file it was written from (its SHA-256 is printed).
Alert routes appear by name and type only: URLs can carry tokens.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from medmon.baselines import resolve
from medmon.monitor.governance.approvals import owners_of
from medmon.monitor.governance.checks import human_interval, max_gap
from medmon.monitor.governance.reports.limitations import known_limitations
from medmon.monitor.plan.governance import DEFAULT_MAX_PROBE_INTERVAL
from medmon.monitor.plan.intervals import parse_interval
from medmon.monitor.plan.model import Plan
from medmon.probes.packs import load_pack


@dataclass
class PlanDocument:
    plan: Plan
    source: str
    sha256: str
    generated_at: datetime
    tasks: list[dict[str, Any]]
    limitations: list[str]
    max_interval: str
    derived_mapping: dict[str, list[str]] = field(default_factory=dict)


def _baseline_text(plan: Plan, task_index: int) -> str:
    task = plan.tasks[task_index]
    ref = task.baseline
    if ref.value is not None and ref.n is not None:
        return f"{ref.value:g} on n={ref.n} (stated in the plan)"
    if task.canaries.pack is not None:
        card = load_pack(task.canaries.pack).baseline
        if "value" in card and "n" in card:
            return f"{card['value']} on n={card['n']} (pack card: {card.get('source', 'no source given')})"
    return "imported HELM/MedHELM baseline (see 'medmon baseline list')"


def build_plan_document(plan: Plan, text: str, source: str, *, now: datetime) -> PlanDocument:
    """Everything the plan document shows, derived from the plan file."""
    tier = plan.use_case.risk_tier.value
    limit = (plan.governance.controls.max_probe_interval if plan.governance else DEFAULT_MAX_PROBE_INTERVAL)[tier]
    rows: list[dict[str, Any]] = []  # PlanDocument.tasks
    for i, task in enumerate(plan.tasks):
        entry = resolve(task.benchmark)
        owner = task.owner or plan.owners.clinical
        gap = max_gap(task.schedule, task.interval)
        rows.append(
            {
                "id": task.id,
                "benchmark": task.benchmark,
                "display": entry.display_name,
                "category": entry.category,
                "subcategory": entry.subcategory,
                "in_taxonomy": entry.in_taxonomy,
                "data_access": entry.data_access,
                "jury": entry.llm_jury,
                "main_metric": entry.main_metric,
                "canaries": task.canaries.pack or (task.canaries.path.name if task.canaries.path else ""),
                "baseline": _baseline_text(plan, i),
                "thresholds": task.thresholds.model_dump(exclude_none=True),
                "owner": f"{owner.name} <{owner.email}>" + ("" if task.owner else " (clinical owner, by default)"),
                "approvers": ", ".join(owners_of(plan, task)),
                "human_review": task.human_review_required,
                "schedule": task.schedule,
                "sample_size": task.sample_size,
                "max_gap": human_interval(gap),
                "meets_frequency": gap <= parse_interval(limit),
                "subgroups": ", ".join(task.subgroups),
            }
        )
    derived = {
        "categories": sorted({r["category"] for r in rows if r["in_taxonomy"]}),
        "subcategories": sorted({r["subcategory"] for r in rows if r["subcategory"]}),
        "benchmarks": sorted({r["benchmark"] for r in rows}),
    }
    return PlanDocument(
        plan=plan,
        source=source,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        generated_at=now,
        tasks=rows,
        limitations=known_limitations(plan),
        max_interval=limit,
        derived_mapping=derived,
    )
