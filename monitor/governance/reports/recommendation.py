"""What the committee report recommends for each task: continue, continue with conditions, or suspend.

The rules are the plan's (``governance.controls.recommendation``): a task is recommended for
suspension when one of the ``suspend_when`` conditions holds over the period, for continuing
with conditions when one of ``conditions_when`` does, and for continuing otherwise. Every
condition that holds is listed as a reason, so the committee sees why, not only what.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from medmon.monitor.plan.governance import RecommendationRules

CONTINUE = "continue"
CONDITIONS = "continue with conditions"
SUSPEND = "suspend"


@dataclass(frozen=True)
class TaskFacts:
    """What the period showed about one task, as the rules read it."""

    task: str
    n: int
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    min_score: float
    passed: bool | None
    conclusive: bool | None
    drift_findings: int
    open_incidents: tuple[str, ...]  # titles of the task's incidents still open at the period's end
    open_causes: tuple[str, ...]
    model_changes: int
    at_end: tuple[float, float, float, int] | None = None  # the latest answers' mean, 95% CI and n
    minimum_alarm_open: bool = False  # the approval-minimum rule fired and has not cleared by the period's end
    reference: str = ""  # the go-live reference's state while it is incomplete (detection not armed)


@dataclass(frozen=True)
class Recommendation:
    task: str
    action: str
    reasons: tuple[str, ...]


def conditions(f: TaskFacts) -> dict[str, str]:
    """Each condition that holds for the task, with a sentence saying why."""
    held: dict[str, str] = {}
    if f.n == 0 or f.estimate is None:
        held["no_data"] = "no scored answer in the period"
    # As the approval-minimum rule reads it: below once the whole interval is, until the estimate is back.
    if f.at_end is not None and (f.at_end[2] < f.min_score or (f.minimum_alarm_open and f.at_end[0] < f.min_score)):
        mean, low, high, n = f.at_end
        held["below_minimum"] = (
            f"at the end of the period the score {mean:.2f} ({low:.2f}-{high:.2f}, latest {n} "
            f"answers) is below the minimum in force {f.min_score:.2f}"
            + ("" if high < f.min_score else "; the approval-minimum alert has not cleared")
        )
    elif f.ci_high is not None and f.estimate is not None and f.ci_high < f.min_score:
        held["below_minimum"] = (
            f"the period's score {f.estimate:.2f} ({f.ci_low:.2f}-{f.ci_high:.2f}) is below the "
            f"minimum in force {f.min_score:.2f}"
        )
    if f.passed is False:
        held["failed"] = "the task does not meet the thresholds in force"
    if f.passed is not None and f.conclusive is False:
        held["inconclusive"] = "the interval straddles a threshold: more data is needed to decide"
    if f.drift_findings:
        held["drift"] = f"{f.drift_findings} drift finding(s) in the period"
    if "subgroup_gap" in f.open_causes:
        held["subgroup_gap"] = "a subgroup fell further behind the others than at approval"
    if f.open_incidents:
        held["open_incident"] = "open incident(s): " + ", ".join(f.open_incidents)
    if f.model_changes or "model_change" in f.open_causes:
        held["model_change"] = "the served model changed; its re-evaluation decides whether the figures still hold"
    return held


def recommend(facts: Iterable[TaskFacts], rules: RecommendationRules) -> list[Recommendation]:
    """One recommendation per task by the plan's rules, suspension first."""
    out = []
    for f in facts:
        held = conditions(f)
        suspend = [held[c] for c in rules.suspend_when if c in held]
        cond = [held[c] for c in rules.conditions_when if c in held and held[c] not in suspend]
        if f.reference and (suspend or cond):
            cond.append(f"the {f.reference}")
        if suspend:
            out.append(Recommendation(f.task, SUSPEND, tuple(suspend + cond)))
        elif cond:
            out.append(Recommendation(f.task, CONDITIONS, tuple(cond)))
        elif f.reference:
            out.append(Recommendation(f.task, CONTINUE, (f"no rule holds, but the {f.reference}",)))
        else:
            out.append(Recommendation(f.task, CONTINUE, ("every threshold met, no open incident",)))
    return out
