"""``medmon check``: everything that can be verified about a plan before it runs."""

from __future__ import annotations

from pathlib import Path

from baselines.errors import BaselineError
from monitor.context import load_context
from monitor.errors import PlanError, PlanIssue
from monitor.plan import Plan, load_plan
from probes.errors import UnknownScorer
from probes.scoring import get_scorer


def check_plan(path: Path) -> Plan:
    """Load and validate a plan, then its canaries and scorers; raise PlanError with every issue."""
    plan = load_plan(path)
    issues: list[PlanIssue] = []
    for i, task in enumerate(plan.tasks):
        try:
            ctx = load_context(plan, task)
        except BaselineError as exc:
            issues.append(PlanIssue(f"tasks[{i}].canaries", str(exc)))
            continue
        try:
            get_scorer(ctx.scorer)
        except UnknownScorer as exc:
            issues.append(PlanIssue(f"tasks[{i}].scorer", str(exc)))
        if not ctx.taxonomy.in_taxonomy:
            pass  # allowed; the dashboard and reports flag it as outside the MedHELM taxonomy
    if issues:
        raise PlanError(str(path), issues)
    return plan
