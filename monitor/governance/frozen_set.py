"""Judge drift on a frozen set: answers clinicians rated, frozen as judge canaries with their ratings as gold.

Why: a change in the jury's scores on answers that did not change is a judge change, not a model
change. The judge-canary job (``medmon.monitor.runs.judging``) re-judges a fixed set on
``jury.canary_schedule`` and raises ``judge_drift`` (the technical owner's incident) when a judge
moves away from the gold scores or from its own go-live level. Freezing production answers that
clinicians rated gives that job a set drawn from this deployment's own answers, graded by its own
clinicians, in place of the bundled examples: point ``jury.canary_path`` at the file.

The set is versioned by the SHA-256 of its content (each judge-canary run records the content hash
of what it re-judged), so a report can say which version a judge was held to. The answers are
written as stored, which is after redaction.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import Session, col, select

from medmon.monitor.governance.review import rubric
from medmon.monitor.models import ClinicianReview
from medmon.monitor.plan.context import load_context
from medmon.monitor.plan.model import Plan
from medmon.probes.models import ProbeResult


@dataclass(frozen=True)
class FrozenSet:
    """The judge-canary lines of a frozen set, and its version (the SHA-256 of the lines)."""

    lines: tuple[str, ...]
    version: str

    def write(self, path: Path) -> None:
        path.write_text("".join(line + "\n" for line in self.lines), encoding="utf-8")


def freeze_judge_set(session: Session, plan: Plan, task_id: str, *, limit: int = 200) -> FrozenSet:
    """The task's clinician-rated answers (newest ``limit``) as judge canaries, gold = the clinicians' mean
    per criterion; ``ValueError`` when the task has none."""
    criteria, low, high = rubric(plan.jury)
    reviews = session.exec(
        select(ClinicianReview).where(ClinicianReview.task_id == task_id).order_by(col(ClinicianReview.id))
    ).all()
    by_answer: dict[int, list[ClinicianReview]] = defaultdict(list)
    for review in reviews:
        by_answer[review.result_id].append(review)
    if not by_answer:
        raise ValueError(f"task {task_id!r} has no clinician-rated answer to freeze")
    canaries = {c.id: c for c in load_context(plan, plan.task(task_id)).canaries}
    lines = []
    for result_id in sorted(by_answer)[-limit:]:
        result = session.get(ProbeResult, result_id)
        if result is None or result.answer is None or result.canary_id not in canaries:
            continue
        canary = canaries[result.canary_id]
        rated = by_answer[result_id]
        gold = {c: min(high, max(low, sum(float(r.scores[c]) for r in rated) / len(rated))) for c in criteria}
        line = {
            "id": f"{task_id}-r{result_id}",
            "messages": [dict(m) for m in canary.messages],
            "answer": result.answer,
            "gold_score": gold,
            "tags": {"task": task_id, "result": str(result_id), "raters": str(len(rated))},
        }
        if canary.references:
            line["reference"] = canary.references[0]
        lines.append(json.dumps(line, sort_keys=True))
    if not lines:
        raise ValueError(f"task {task_id!r}: none of its rated answers is still in its canary pack")
    version = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return FrozenSet(tuple(lines), version)
