"""Page 1 of the committee report, and the dashboard overview's first block: what to decide, per task.

One row per task, in the order a committee reads it: the recommendation by the plan's rules,
the one current figure (``medmon.monitor.governance.current``) with its interval against the
minimum in force, what changed (model, prompt, judge) and what its re-evaluation found, the
decisions requested, and the decision recorded so far. The report's first page and the
dashboard's Overview both build their rows here, so they say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from medmon.moments import display_time
from medmon.monitor.governance.current import CURRENT_SCORE_NAME, CurrentScore
from medmon.monitor.governance.decisions import CommitteeDecision

ORDER = {"suspend": 0, "restrict": 1, "continue with conditions": 2, "continue": 3}


@dataclass(frozen=True)
class DecisionRow:
    """What the committee needs to decide about one task, in sentences."""

    task: str
    action: str
    reasons: tuple[str, ...]
    current: CurrentScore
    min_score: float
    served_model: str
    changed: tuple[str, ...] = ()
    requested: tuple[str, ...] = ()
    decided: CommitteeDecision | None = None
    building: str = ""  # the go-live reference's state while detection is not armed
    lines: dict[str, str] = field(default_factory=dict)

    @property
    def figure(self) -> str:
        """The current score against the minimum in force, in one sentence."""
        if self.current.value is None:
            return f"No scored answer yet; the minimum in force is {self.min_score:.2f}"
        where = (
            "below"
            if self.current.high is not None and self.current.high < self.min_score
            else "above"
            if self.current.low is not None and self.current.low >= self.min_score
            else "not clearly above or below"
        )
        return f"Score now {self.current.text()}: {where} the minimum in force {self.min_score:.2f}"

    @property
    def headline(self) -> str:
        """The sentence the committee reads first."""
        return f"{self.task}: recommendation {self.action}. {self.figure}."


def _when(value: Any) -> str:
    return display_time(value) if isinstance(value, datetime) else str(value)


def _reevaluation(r: dict[str, Any]) -> str:
    model = r.get("served_model") or "the new model"
    if r.get("estimate") is None:
        return f"Re-evaluation #{r['id']} of {model}: {r['status']}" + (f" ({r['error']})" if r.get("error") else "")
    verdict = "passed" if r.get("passed") else "failed"
    figure = f"{r['estimate']:.2f} ({r['ci_low']:.2f}-{r['ci_high']:.2f}, n={r['n']})"
    adopted = (
        f"; adopted as the baseline by {r['approved_by']}"
        if r.get("approved_by")
        else "; awaiting the committee's decision"
    )
    return f"Re-evaluation #{r['id']} of {model} {verdict}: {figure} against the minimum {r['min_score']:.2f}{adopted}"


def changed_sentences(
    task: str, identities: list[dict[str, Any]], changes: list[dict[str, Any]], reevaluations: list[dict[str, Any]]
) -> list[str]:
    """What changed for ``task`` in the period and what each re-evaluation found, oldest first."""
    out: list[str] = []
    seen = [i for i in identities if i["task"] == task]
    for before, after in zip(seen, seen[1:], strict=False):
        old, new = before["served_model"], after["served_model"]
        what = f"from {old} to {new}" if old != new else f"{new}: system fingerprint {after['fingerprint']}"
        out.append(f"Served model changed {what} on {_when(after['first_seen'])}")
    for c in changes:
        if c["task"] == task and c["source"] != "detected":
            out.append(f"{c['kind'].capitalize()} change declared by {c['actor']} on {_when(c['at'])}: {c['note']}")
    out += [_reevaluation(r) for r in reevaluations if r["task"] == task]
    return out


def _detected(report: Any, task: str) -> list[str]:
    """Model-change incidents of the task not yet seen by its probes' identities (e.g. seen in real traffic)."""
    return [
        f"{i.summary.removeprefix(task + ': ')[:1].upper()}{i.summary.removeprefix(task + ': ')[1:]} "
        f"(incident #{i.id}, {'open' if i.closed_at is None else 'closed'})"
        for i in report.incidents
        if i.task == task and i.cause == "model_change"
    ]


def decision_rows(
    report: Any, current: dict[str, CurrentScore], decided: dict[str, CommitteeDecision], served: dict[str, str]
) -> list[DecisionRow]:
    """The report's (or the dashboard's) decision rows, the most serious recommendation first."""
    tasks = {t.task: t for t in report.tasks}
    rows = []
    for rec in report.recommendations:
        t = tasks[rec.task]
        rows.append(
            DecisionRow(
                rec.task,
                rec.action,
                tuple(rec.reasons),
                current.get(rec.task, CurrentScore(None, None, None, 0)),
                t.min_score,
                served.get(rec.task, report.plan.deployment.model),
                tuple(
                    changed_sentences(rec.task, report.identities, report.changes, report.reevaluations)
                    # the change its probes saw is already listed; an incident names only one they did not
                    + ([] if sum(i["task"] == rec.task for i in report.identities) > 1 else _detected(report, rec.task))
                ),
                tuple(f"{d['kind']}: {d['ask']}" for d in report.decisions_requested if d["task"] == rec.task),
                decided.get(rec.task),
                t.reference,
            )
        )
    rows.sort(key=lambda r: (ORDER.get(r.action, 9), r.task))
    return rows


__all__ = ["CURRENT_SCORE_NAME", "DecisionRow", "changed_sentences", "decision_rows"]
